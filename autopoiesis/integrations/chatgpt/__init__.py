"""ChatGPT's conversations.json export."""
