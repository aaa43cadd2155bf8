"""Privacy: finding credentials in a stored output so that no model is ever shown them (the redacted view)."""
