"""The neutral capture-stream format (autopoiesis's own NDJSON events)."""
