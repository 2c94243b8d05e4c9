"""Continue's session files."""
