"""Measuring and reading a stored document: stats and the token index, chunk plans, line-numbered Read and Grep."""
