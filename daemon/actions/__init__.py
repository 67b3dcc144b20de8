"""One module per user-facing operation: orchestration only."""
