"""autopoiesis: memory for AI agents kept in a git repository."""

__version__ = "0.1.0"
