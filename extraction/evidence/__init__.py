"""Evidence: where an answer came from in the stored output, and whether each quote is really there."""
