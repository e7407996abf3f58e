"""What a team server keeps and decides, with no HTTP in it.

Storage (SQLAlchemy models, Alembic migrations shipped in `migrations/`), identity, quotas,
history, alerts and their fingerprints, follow-up answers. The web app's routes are thin
callers of these modules; so is `traintriage admin`.
"""
