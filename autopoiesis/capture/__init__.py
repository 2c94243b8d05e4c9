"""Capture: live sessions streamed into transcripts (ConversationCapture, the NDJSON
stream of `autopoiesis capture`) and importers of finished sessions."""
