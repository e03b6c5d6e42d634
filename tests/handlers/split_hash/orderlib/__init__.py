"""The split handler's helpers (tests/handlers/split/app.py)."""
