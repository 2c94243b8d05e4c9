"""Cline / Roo / Kilo task folders."""
