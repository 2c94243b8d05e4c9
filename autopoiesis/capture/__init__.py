"""Capture: live sessions streamed into transcripts (ConversationCapture, the NDJSON
stream of `autopoiesis capture`) and the shared path of importing finished sessions
(importers/: the Importer protocol, filing, the registry; each format's reader lives in
autopoiesis.integrations)."""
