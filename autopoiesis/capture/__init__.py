"""Capture: live sessions (ConversationCapture), importers of finished sessions, redaction."""
