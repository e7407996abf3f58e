"""Thin route modules: read the request, call the pipeline or the store, render."""
