"""Claude.ai's conversation export."""
