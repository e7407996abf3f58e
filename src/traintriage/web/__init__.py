"""The web front door: FastAPI pages and HTTP API over the same pipeline, KB and renderers.

Needs the `serve` extra (`pip install 'traintriage[serve]'`). `create_app()` in `app.py`
builds the application; `site.py` renders the encyclopedia as static files from the same
templates.
"""
