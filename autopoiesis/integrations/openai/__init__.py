"""OpenAI chat-completions message lists."""
