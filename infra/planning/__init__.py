"""A stored output's plan (chunks, agent bounds) and what an extraction would cost."""
