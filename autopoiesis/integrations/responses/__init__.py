"""OpenAI Responses API logs."""
