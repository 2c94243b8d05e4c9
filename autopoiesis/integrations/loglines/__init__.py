"""Generic role-tagged log lines."""
