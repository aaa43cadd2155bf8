"""One job's steps, free of any executor: the steps as typed values (`steps`), running a step (`drive`), the job
context every strategy shares (`context`: the live job and the start step), one module per strategy (`pipeline`,
`agent`, `query`), the model gate (`runtime`) and how a job ends (`outcomes`). Celery (`workers.celery`) and the
embedded thread pool (`workers.local`) both run them through `workers.job.drive`."""
