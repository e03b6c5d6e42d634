"""The function's helpers, beside its entry point."""
