"""`$variable` references: names, the reference grammar, resolution in arguments, text and streams."""
