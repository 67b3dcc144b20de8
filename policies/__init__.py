"""Shipped policy files; default.toml holds the design's numbers."""
