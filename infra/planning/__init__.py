"""A stored output's chunk plan (chunks, agent bounds) and what an extraction would cost."""
