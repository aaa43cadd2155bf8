"""The embedded mode answers exactly what the service answers: same output, same offline model, same settings.

The service runs as processes (API, Celery worker, Redis, local blob store); `toolout.local` runs the
same steps in this process on in-memory stores. Both talk to the same offline model over HTTP
through litellm, so only the executor differs.
"""

from __future__ import annotations

import pytest

from tests.fixtures.stack import Stack
from toolout.devstack import datasets
from toolout.local import LocalToolOut

CASES = [
    pytest.param(lambda: datasets.json_orders(2 << 20), datasets.ORDER_NEEDLE, "auto", id="json-auto"),
    pytest.param(lambda: datasets.service_log(5 << 20), datasets.POOL_INCIDENT, "read-grep", id="log-read-grep"),
    pytest.param(lambda: datasets.service_log(3 << 20), datasets.POOL_INCIDENT, "full-chunked", id="log-full-chunked"),
]


@pytest.mark.parametrize(("blocks", "planted", "mode"), CASES)
def test_the_embedded_mode_gives_the_services_abstract(local_stack: Stack, blocks, planted, mode) -> None:
    data = b"".join(blocks())
    with local_stack.client() as client:
        session = client.create_session()
        handle = client.store(session, data, tool_name="orders.search", tool_args='{"q": "*"}')["handle"]
        served = client.wait(client.submit(handle, planted.request, mode)["id"], timeout=300)
        client.delete_session(session)
    settings = local_stack.settings()
    with LocalToolOut(settings.model, api_base=settings.model_api_base, api_key=settings.model_api_key) as local:
        stored = local.store(data, tool_name="orders.search", tool_args='{"q": "*"}')
        embedded = local.extract(stored.handle, planted.request, mode)
    assert served["status"] == embedded.job.status == "succeeded" and planted.needle in served["result"]
    assert embedded.text == served["result"].replace(handle, stored.handle)
    assert (embedded.job.mode_used, embedded.job.chunks_total, embedded.job.usage.calls) == (
        served["mode_used"],
        served["chunks_total"],
        served["usage"]["calls"],
    )
