"""A long run of agents that end sessions mid-job, judged clean by logs, Redis keys and memory."""
