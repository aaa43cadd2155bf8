"""The read-grep strategy: a sub-agent that may only Read and Grep the one stored output."""

from __future__ import annotations

from extraction.strategies.routing import Mode
from extraction.texts.prompts import read_grep_messages
from extraction.texts.tools import sub_agent_tools
from infra.stores.records import session_prefix
from infra.tracing import traced_step
from workers.job.context import load
from workers.job.runtime import Runtime
from workers.job.sub_agent import raw_tools, run_sub_agent


@traced_step("job.read_grep")
def run_read_grep(rt: Runtime, job_id: str) -> None:
    live = load(rt, job_id)
    if live is None:
        return
    messages = read_grep_messages(
        live.prompt, handle_filename=live.output.handle, root=session_prefix(live.output.session_id)
    )
    run_sub_agent(rt, live, messages, sub_agent_tools(), raw_tools(rt, live), Mode.READ_GREP)
