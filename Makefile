# The two commands of the README, self-contained on a fresh machine:
#   make demo   — the full system on embedded defaults, offline
#   make test   — the test suite (what .ci/run calls)
# and the gates CI adds: make lint, make test-light (the pure engine and the client side on the
# lightest install — `pip install toolout`, no server extra — under Python 3.13; and that the framework
# extras, langchain, pydantic-ai and openai-agents, would pull in no server package either).
PYTHON ?= python3
LIGHT_PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3) python3.13)
LIGHT  := .venv-light
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)
export LITELLM_LOCAL_MODEL_COST_MAP := True
export PYTHONUNBUFFERED := 1

.PHONY: demo test test-light test-rabbitmq lint docs docs-serve bench redis rabbitmq chromium install clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert (3, 11) <= sys.version_info[:2] <= (3, 13), "toolout needs Python 3.11-3.13, found " + sys.version' 
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	@rm -f $(VENV)/.installed-* && touch $@

redis:
	@command -v redis-server >/dev/null || (apt-get update -qq && apt-get install -y -qq redis-server >/dev/null)
	@redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
	@for i in $$(seq 50); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && exit 0; sleep 0.1; done; echo "redis did not start" >&2; exit 1

# The console's browser test drives Debian's chromium through Playwright (no browser download).
chromium:
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

rabbitmq:
	@command -v rabbitmq-server >/dev/null || (apt-get update -qq && apt-get install -y -qq rabbitmq-server >/dev/null)
	@rabbitmqctl -q status >/dev/null 2>&1 || rabbitmq-server -detached
	@for i in $$(seq 60); do rabbitmqctl -q await_startup >/dev/null 2>&1 && exit 0; sleep 1; done; echo "rabbitmq did not start" >&2; exit 1

demo: install redis
	$(PY) -m toolout.cli demo

lint: install
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-logo --no-cache  # the import contracts in pyproject.toml
	$(PY) -m toolout._unasync --check  # the generated sync SDK client matches its async source

# Branch coverage of every process the tests start (pyproject's [tool.coverage.*]): the table lists the
# files not fully covered, worst first, and the run fails under `fail_under`. Plain `pytest` measures nothing.
test: install redis chromium
	$(PY) -m pytest -q -p pytest_cov.plugin --cov --cov-report=term

# CI's RabbitMQ leg: every test that starts Celery workers, again with RabbitMQ as the broker (state in Redis).
test-rabbitmq: install redis rabbitmq
	TOOLOUT_TEST_BROKER=rabbitmq $(PY) -m pytest -q -m celery

# The light install: `toolout` with only its test tools, no server extra. Token counts offline come from
# the BPE files the main venv's litellm carries (a client with litellm installed finds them itself).
test-light: install
	@test -x $(LIGHT)/bin/python || $(LIGHT_PYTHON) -m venv $(LIGHT)
	$(LIGHT)/bin/python -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps .
	$(LIGHT)/bin/python -m pip install --quiet --disable-pip-version-check ".[test]"
	@rm -rf build  # setuptools' in-tree build folder: not source
	cd $(LIGHT) && bin/python -c 'import importlib.util as u, toolout.cli, toolout.client, toolout.toolkit, extraction.schemas.strict_schema; \
	  heavy = [m for m in ("celery", "boto3", "litellm", "fastapi", "redis") if u.find_spec(m)]; \
	  assert not heavy, f"the light install pulled in {heavy}"; print("light install: SDK and toolkit import; no server packages")'
	$(LIGHT)/bin/python -m pip install --dry-run --ignore-installed --quiet --disable-pip-version-check --report - \
	  ".[langchain,pydantic-ai,openai-agents]" 2>/dev/null | $(LIGHT)/bin/python -c 'import json, sys; \
	  names = {i["metadata"]["name"].lower() for i in json.load(sys.stdin)["install"]}; \
	  heavy = sorted(names & {"celery", "kombu", "boto3", "litellm", "fastapi", "redis"}); \
	  assert not heavy, f"the framework extras pull in {heavy}"; \
	  print(f"framework extras (langchain, pydantic-ai, openai-agents): {len(names)} packages, no server package")'
	TIKTOKEN_CACHE_DIR=$$($(PY) -c 'from extraction.tokenizer_files import litellm_tokenizer_dir as d; print(d())') \
	  $(LIGHT)/bin/python -m pytest -q tests/extraction tests/toolout/sdk tests/toolout/toolkit

# The docs site, strict: a broken link, a missing page or a stale reference fails the build.
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet
	@echo "docs: built into var/site (open var/site/index.html)"

docs-serve: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve

bench: install redis
	$(PY) -m bench

clean:
	rm -rf var .pytest_cache
