"""Pure parse/render of the on-disk formats. No I/O here."""
