"""Drop-ins for the agent frameworks people already use (see docs/integrations/): `langchain`
(LangChain v1, LangGraph, deepagents), `pydantic_ai`, `openai_agents`. Each needs its extra, e.g.
`pip install "toolout[langchain]"`; the shared part is `service`."""
