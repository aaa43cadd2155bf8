"""What a job, a session and an upload cost on a real stack, and the capacity model built on those figures."""
