"""The SDK's insides: every REST call described once, run by a sync or an async transport.

* `plans` — the effects a call needs (`Request`, `Sleep`) and what a call is: an *SDK plan*, a
  generator that yields effects and returns the parsed answer (sans-I/O: no socket in sight);
* `outputs`, `jobs`, `variables` — one plan per API call (method, path, parameters, parsing),
  including the multi-step ones (`wait` polls, `tool_output` submits then waits);
* `transport` — the two executors that drive a plan: `SyncTransport` (httpx.Client, time.sleep)
  and `AsyncTransport` (httpx.AsyncClient, asyncio.sleep), with the clients built on them, written
  once: `async_client` is the source, `sync_client` is generated from it (`toolout._unasync`);
  `driving` (the shared plan driver) and `cancellation` (the cancel race) hold what they share;
* `endpoint` — the descriptor that makes each plan a method of both clients.

Users import the clients from `toolout.client`.
"""
