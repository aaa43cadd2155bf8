"""The development and test harness: `toolout dev`, `toolout demo`, and the stacks the tests and benchmarks start.

It starts the server's processes (Redis, SeaweedFS, the offline model, the API, Celery workers), watches them and
makes the data sets they are run on. It ships with the server distribution (`toolout-server`), not the client:
`pip install toolout` alone has no `toolout.devstack`, and `toolout dev` then says what to install.
"""
