"""Right answers and their cost, per strategy and against two peers' baselines, on generated questions."""
