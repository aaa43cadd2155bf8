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

.PHONY: demo test test-fast test-light test-rabbitmq test-wheel test-compose dist fuzz schemathesis lint docs docs-serve bench redis rabbitmq chromium install clean

# System packages (redis-server, rabbitmq-server, chromium) come from apt when missing: as root directly, else
# through sudo (which asks for your password); each target says what it installs before it does.
SUDO := $(shell test "$$(id -u)" = 0 || echo sudo)
define apt_install
	@echo "make $@: installing the Debian package $(1) with apt-get (needs root$(if $(SUDO),: sudo asks for your password,))"
	$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $(1) >/dev/null
endef

install: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert (3, 11) <= sys.version_info[:2] <= (3, 13), "toolout needs Python 3.11-3.13, found " + sys.version' 
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "make: installing toolout and its pinned dependencies (pyproject.toml's dev extra) into $(VENV); no root needed"
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	@rm -f $(VENV)/.installed-* && touch $@

redis:
	@command -v redis-server >/dev/null || $(MAKE) --no-print-directory apt-redis-server
	@redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
	@for i in $$(seq 50); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && exit 0; sleep 0.1; done; echo "redis did not start" >&2; exit 1

# The console's browser test drives Debian's chromium through Playwright (no browser download).
chromium:
	@command -v chromium >/dev/null || $(MAKE) --no-print-directory apt-chromium

rabbitmq:
	@command -v rabbitmq-server >/dev/null || $(MAKE) --no-print-directory apt-rabbitmq-server

apt-%:
	$(call apt_install,$*)
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
	$(PY) -m tests.import_cycles  # no two modules import each other, however long the loop

# Branch coverage of every process the tests start (pyproject's [tool.coverage.*]): the table lists the
# files not fully covered, worst first, and the run fails under `fail_under`. Plain `pytest` measures nothing.
test: install redis chromium
	$(PY) -m pytest -q -p pytest_cov.plugin --cov --cov-report=term --durations=20 --ignore=tests/wheel

# The edit-run loop: the engine, the stores' contracts on their in-memory twins, the SDK and the toolkit; no
# server is started (a test that reaches one is marked `integration` and left to `make test`).
test-fast: install
	$(PY) -m pytest -q -m "not integration" tests/extraction tests/toolout/sdk tests/toolout/toolkit tests/infra/stores tests/offline_model

# The two distributions a user installs, `toolout` (client) and `toolout-server`: sdists and wheels in dist/.
dist: install
	$(PY) release/distributions.py --outdir dist

# The first screen on a fresh machine: the wheels built and installed (not editable) into new venvs outside the
# checkout, `toolout dev` and the README's quickstarts run from them, and the README's "Run it" block as written.
test-wheel: install redis
	$(PY) -m pytest -q -n 0 tests/wheel

# CI's RabbitMQ leg: every test that starts Celery workers, again with RabbitMQ as the broker (state in Redis).
test-rabbitmq: install redis rabbitmq
	# One xdist worker: each stack's vhost holds some 30 quorum queues (Celery's delayed-delivery ones included), and
	# four workers' stacks at once made the box's RabbitMQ stop answering (AMQP handshakes and rabbitmqctl alike).
	TOOLOUT_TEST_BROKER=rabbitmq $(PY) -m pytest -q -n 1 -m celery --ignore=tests/integration/test_corpus_live.py  # asks about the files, not the broker

# Coverage-guided fuzzing of the parsers untrusted text reaches (tests/fuzz/targets.py), FUZZ_SECONDS each, from
# the seeds in tests/fuzz/corpus; findings land in var/fuzz/crashes. `make fuzz FUZZ_SECONDS=3600` for a long run.
FUZZ_SECONDS ?= 60
fuzz: install
	$(PY) -m tests.fuzz.campaign --seconds $(FUZZ_SECONDS)

# docker-compose.yml for real (tests/compose): Docker's engine from Debian, Compose v2 from the dev extra, the
# stand-in base images (infra/compose/standins: no image registry here) built once and cached by content, then
# the scenario on three worker containers. Leaves dockerd running; every compose project it starts is removed.
test-compose: install
	PY=$(PY) infra/compose/engine.sh
	infra/compose/standins/build.sh
	TOOLOUT_TEST_COMPOSE=1 $(PY) -m pytest -q -n 0 $(addprefix tests/compose/test_,images.py scenario.py deploy_guide.py)  # images first: it times the build

# The light install: the client wheel (`pip install toolout`) with only its test tools, no server. Token counts
# offline come from the BPE files the main venv's litellm carries (a client with litellm finds them itself).
test-light: dist
	@test -x $(LIGHT)/bin/python || $(LIGHT_PYTHON) -m venv $(LIGHT)
	$(LIGHT)/bin/python -m pip uninstall --quiet --yes toolout toolout-server 2>/dev/null || true
	$(LIGHT)/bin/python -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps dist/toolout-*.whl
	$(LIGHT)/bin/python -m pip install --quiet --disable-pip-version-check "$$(ls dist/toolout-*.whl)[test]"
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

# Schemathesis' CLI against the whole stack (its own Redis, the API, a Celery worker, the offline model) for
# SCHEMATHESIS_SECONDS (default 300; SCHEMATHESIS_SEED replays a run): fails on any finding, and on an operation
# the generated requests could not reach (a schema looser than the API's validation, or a missing link).
schemathesis: install redis
	$(PY) -m tests.api.schemathesis_stack

bench: install redis
	$(PY) -m bench

clean:
	rm -rf var .pytest_cache dist
