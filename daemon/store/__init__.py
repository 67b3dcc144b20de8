"""The store model: parse and validate an Aura Distill store. Pure functions over bytes,
except snapshot.py (reads) and fs.py (the only writer)."""
