"""One job's steps, free of any executor: what runs next (`next`), running a step (`drive`), the pipeline's
steps, the sub-agents, the model gate and how a job ends (`outcomes`). Celery (`workers.celery`) and the
embedded thread pool (`workers.local`) both run them through `workers.job.drive`."""
