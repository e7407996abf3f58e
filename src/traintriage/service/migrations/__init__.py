"""Alembic migrations, shipped inside the package; run by `Store.open` and `traintriage admin migrate`."""
