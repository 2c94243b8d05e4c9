"""SpecStory's Markdown (.specstory/history/*.md)."""
