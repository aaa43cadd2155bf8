"""A job's steps (`workers.job`) and what carries them: Celery workers (`workers.celery`) or a local thread pool."""
