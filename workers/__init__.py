"""Celery workers: thin tasks that decode arguments, call `extraction`, and persist through `infra`."""
