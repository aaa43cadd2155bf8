"""Celery's glue: the app and its queues, the tasks that run a job's steps, the dispatcher the API sends
through, the broker-client patches and the worker process's entry point. The steps themselves are in
`workers.job`, free of Celery."""
