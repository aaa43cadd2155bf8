"""`buffer_ops`: the tool, what it needs from storage, and the texts it answers with."""
