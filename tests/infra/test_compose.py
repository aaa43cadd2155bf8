"""Static checks of docker-compose.yml and infra/Dockerfile (no Docker engine needed).

Each `check_*` function takes the parsed compose file (a dict) and returns a list of problems; the
real file must produce none, and `test_checkers_catch_broken_input` feeds each checker a copy of
the real file broken in one specific way and requires a complaint, so no check is vacuous.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import shlex
import tomllib
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml
from pydantic import ValidationError

from infra.settings import Settings
from offline_model.config import ENV_PREFIX as OFFLINE_PREFIX
from offline_model.config import OfflineModelConfig

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
DOCKERIGNORE = REPO / ".dockerignore"

ENV_PREFIX = "TOOLOUT_"
SETTINGS_VARS = {ENV_PREFIX + name.upper() for name in Settings.model_fields}
OFFLINE_MODEL_VARS = {OFFLINE_PREFIX + f.name.upper() for f in dataclasses.fields(OfflineModelConfig)}
"""The offline model's knobs (`TOOLOUT_OFFLINE_*`): set on its own service, read by offline_model.config."""

REQUIRED_SERVICES = {"api", "worker", "redis", "minio", "minio-init", "flower", "offline-model"}
SERVERS = {"api", "redis", "minio", "flower", "offline-model"}  # things that answer on a port
BACKENDS = {  # what api and worker must wait for, and how
    "redis": "service_healthy",
    "minio-init": "service_completed_successfully",
    "offline-model": "service_healthy",
}
REQUIRED_DEPENDS_ON = {
    "api": BACKENDS,
    "worker": BACKENDS,
    "minio-init": {"minio": "service_healthy"},
    "flower": {"redis": "service_healthy"},
}
WORKER_QUEUES = {"extract", "map", "reduce", "agent", "webhooks"}
URL_VARS = ("TOOLOUT_REDIS_URL", "TOOLOUT_BROKER_URL", "TOOLOUT_S3_ENDPOINT_URL", "TOOLOUT_MODEL_API_BASE")

Problems = list[str]


class OnlyGivenSettings(Settings):
    """Settings built from the values passed in alone: the test process's own TOOLOUT_* env must not leak in."""

    @classmethod
    def settings_customise_sources(
        cls, settings_cls, init_settings, env_settings, dotenv_settings, file_secret_settings
    ):
        return (init_settings,)


def settings_from_env(env: dict[str, Any]) -> Settings:
    """What Settings would be in a container whose environment is `env` (only TOOLOUT_<FIELD> names count)."""
    return OnlyGivenSettings(**{k[len(ENV_PREFIX) :].lower(): v for k, v in env.items() if k in SETTINGS_VARS})


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------

_INTERPOLATION = re.compile(r"\$\$|\$\{(?P<braced>[^}]*)\}|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)")
_BRACED = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:-|-|:\?|\?|:\+|\+)(?P<arg>.*))?$", re.S)


def load_compose(path: Path = COMPOSE_FILE) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def interpolate(value: Any, env: dict[str, str] | None = None) -> Any:
    """Resolve compose `${VAR:-default}` syntax the way `docker compose` does, with `env` as the host env.

    With the default empty env this is what `docker compose up` sees with no .env file.
    """
    if not isinstance(value, str):
        return value
    env = env or {}

    def repl(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        if m.group("bare"):
            return env.get(m.group("bare"), "")
        spec = _BRACED.match(m.group("braced"))
        if spec is None:
            raise ValueError(f"bad interpolation {m.group(0)!r}")
        name, op, arg = spec.group("name"), spec.group("op"), spec.group("arg") or ""
        present, val = name in env, env.get(name, "")
        if op == ":-":
            return val if val else interpolate(arg, env)
        if op == "-":
            return val if present else interpolate(arg, env)
        if op in (":?", "?"):
            if (op == ":?" and not val) or not present:
                raise ValueError(f"required variable {name} is not set: {arg}")
            return val
        if op == ":+":
            return interpolate(arg, env) if val else ""
        if op == "+":
            return interpolate(arg, env) if present else ""
        return val

    return _INTERPOLATION.sub(repl, value)


def interpolation_refs(value: str) -> list[tuple[str, str | None]]:
    """(variable, operator) for each `${...}` / `$VAR` in a string; `$$` is an escape, not a reference."""
    refs = []
    for m in _INTERPOLATION.finditer(value):
        if m.group(0) == "$$":
            continue
        if m.group("bare"):
            refs.append((m.group("bare"), None))
            continue
        spec = _BRACED.match(m.group("braced"))
        refs.append((spec.group("name"), spec.group("op")) if spec else (m.group("braced"), "invalid"))
    return refs


def walk_strings(node: Any):
    """Every string in the document, mapping keys included."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for k, v in node.items():
            if isinstance(k, str):
                yield k
            yield from walk_strings(v)
    elif isinstance(node, list):
        for item in node:
            yield from walk_strings(item)


def environment_of(service: dict[str, Any]) -> dict[str, Any]:
    """A service's `environment`, whichever of the two compose forms it uses."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        out = {}
        for item in env:
            name, sep, val = str(item).partition("=")
            out[name] = val if sep else None
        return out
    return dict(env)


def resolved_environment(service: dict[str, Any]) -> dict[str, Any]:
    return {k: interpolate(v) for k, v in environment_of(service).items()}


def command_argv(service: dict[str, Any]) -> list[str]:
    cmd = service.get("command") or []
    return shlex.split(cmd) if isinstance(cmd, str) else [str(c) for c in cmd]


def depends_on(service: dict[str, Any]) -> dict[str, str | None]:
    """depends_on as {service: condition}; the short list form has no condition (None)."""
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return {name: None for name in deps}
    return {name: (spec or {}).get("condition") for name, spec in deps.items()}


def healthcheck_argv(service: dict[str, Any]) -> list[str]:
    test = (service.get("healthcheck") or {}).get("test") or []
    return shlex.split(test) if isinstance(test, str) else [str(t) for t in test]


def parse_duration(text: Any) -> float:
    """Compose durations: `330s`, `5m30s`, `1h`, `1.5s`, `500ms`; a bare number is seconds."""
    if isinstance(text, (int, float)):
        return float(text)
    units = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    parts = re.findall(r"(\d+(?:\.\d+)?)(us|ms|s|m|h)", str(text))
    if not parts or "".join(n + u for n, u in parts) != str(text):
        raise ValueError(f"not a duration: {text!r}")
    return sum(float(n) * units[u] for n, u in parts)


def dockerfile_path(compose: dict[str, Any], service_name: str) -> Path | None:
    build = compose["services"][service_name].get("build")
    if build is None:
        return None
    if isinstance(build, str):
        return REPO / build / "Dockerfile"
    return REPO / build.get("context", ".") / build.get("dockerfile", "Dockerfile")


def toolout_images(compose: dict[str, Any]) -> set[str]:
    """Image names given to the toolout build (services that build infra/Dockerfile)."""
    return {
        svc["image"] for name, svc in compose["services"].items() if svc.get("build") is not None and svc.get("image")
    }


def python_services(compose: dict[str, Any]) -> set[str]:
    """Services that run the toolout image (so Python + litellm)."""
    images = toolout_images(compose)
    return {
        name for name, svc in compose["services"].items() if svc.get("build") is not None or svc.get("image") in images
    }


# ------------------------------------------------------------------------------------------------
# compose checkers
# ------------------------------------------------------------------------------------------------


def check_services_exist(compose: dict[str, Any]) -> Problems:
    missing = REQUIRED_SERVICES - set(compose.get("services") or {})
    return [f"missing services: {sorted(missing)}"] if missing else []


def check_worker_scalable(compose: dict[str, Any]) -> Problems:
    worker = compose["services"]["worker"]
    return [
        f"worker must not set {key!r} (breaks --scale worker=N)" for key in ("container_name", "ports") if key in worker
    ]


def check_api_published(compose: dict[str, Any]) -> Problems:
    ports = [
        str(p.get("published", "")) + ":" + str(p.get("target", "")) if isinstance(p, dict) else str(p)
        for p in compose["services"]["api"].get("ports") or []
    ]
    return [] if any(p.endswith("8000:8000") for p in ports) else [f"api must publish 8000 on the host, has {ports}"]


def check_redis_durable(compose: dict[str, Any]) -> Problems:
    redis = compose["services"]["redis"]
    problems = []
    if not str(redis.get("image", "")).startswith("redis:7"):
        problems.append(f"redis image should be redis:7, is {redis.get('image')!r}")
    argv = command_argv(redis)
    if not any(a == "--appendonly" and b == "yes" for a, b in pairwise(argv)):
        problems.append(f"redis must run with --appendonly yes, command is {argv}")
    if not any(str(v).split(":")[1:2] == ["/data"] for v in redis.get("volumes") or []):
        problems.append("redis needs a volume on /data or the append-only file dies with the container")
    return problems


def check_healthchecks(compose: dict[str, Any]) -> Problems:
    services = compose["services"]
    needs = set(SERVERS)
    needs |= {name for name, svc in services.items() if svc.get("ports")}
    needs |= {dep for svc in services.values() for dep, cond in depends_on(svc).items() if cond == "service_healthy"}
    pythons = python_services(compose)
    problems = []
    for name in sorted(needs & set(services)):
        hc = services[name].get("healthcheck")
        argv = healthcheck_argv(services[name])
        if not hc or hc.get("disable") or not argv or argv[0] == "NONE":
            problems.append(f"{name} serves something but has no healthcheck")
            continue
        if argv[0] not in ("CMD", "CMD-SHELL"):
            problems.append(f"{name} healthcheck test must start with CMD or CMD-SHELL: {argv}")
        if name in pythons and {"curl", "wget"} & {Path(a).name for a in argv}:
            problems.append(f"{name} runs on python:3.11-slim, which has no curl/wget: {argv}")
    return problems


def check_depends_on(compose: dict[str, Any]) -> Problems:
    services = compose["services"]
    problems = []
    for name, required in REQUIRED_DEPENDS_ON.items():
        actual = depends_on(services.get(name, {}))
        for dep, condition in required.items():
            if actual.get(dep, "<absent>") != condition:
                problems.append(
                    f"{name} must depend on {dep} with condition {condition}, has {actual.get(dep, '<absent>')}"
                )
    for name, svc in services.items():
        for dep, condition in depends_on(svc).items():
            if dep not in services:
                problems.append(f"{name} depends on unknown service {dep}")
            elif condition == "service_healthy" and not services[dep].get("healthcheck"):
                problems.append(f"{name} waits for {dep} healthy, but {dep} has no healthcheck")
            elif condition == "service_completed_successfully" and services[dep].get("restart", "no") != "no":
                problems.append(f"{name} waits for {dep} to complete, but {dep} restarts")
    return problems


def check_minio_init(compose: dict[str, Any]) -> Problems:
    services = compose["services"]
    init = services["minio-init"]
    problems = []
    # Unquoted `no` is YAML 1.1 false, which compose rejects: it has to be the string "no".
    if init.get("restart") != "no":
        problems.append(f'minio-init must be one-shot (restart: "no"), has {init.get("restart")!r}')
    if "minio/mc" not in str(init.get("image", "")):
        problems.append(f"minio-init should run minio/mc, runs {init.get('image')!r}")
    script = interpolate(" ".join(command_argv(init) + [str(e) for e in init.get("entrypoint") or []]))
    for name in python_services(compose):
        store = resolved_environment(services[name]).get("TOOLOUT_BLOB_STORE")
        if store and store.startswith("s3://"):
            bucket = urlparse(store).netloc
            if not re.search(rf"mc mb\b[^&;|]*\s[\w-]+/{re.escape(bucket)}(?=$|[\s;&|\"'])", script):
                problems.append(f"minio-init does not create bucket {bucket!r} used by {name}: {script!r}")
    return problems


def check_s3_credentials_match_minio(compose: dict[str, Any]) -> Problems:
    services = compose["services"]
    minio = resolved_environment(services["minio"])
    problems = []
    for name in sorted(python_services(compose)):
        env = resolved_environment(services[name])
        if not str(env.get("TOOLOUT_BLOB_STORE", "")).startswith("s3://"):
            continue
        for var, root in (
            ("TOOLOUT_S3_ACCESS_KEY_ID", "MINIO_ROOT_USER"),
            ("TOOLOUT_S3_SECRET_ACCESS_KEY", "MINIO_ROOT_PASSWORD"),
        ):
            if env.get(var) != minio.get(root):
                problems.append(f"{name}: {var}={env.get(var)!r} does not match minio {root}={minio.get(root)!r}")
    return problems


def check_toolout_vars_are_settings(compose: dict[str, Any]) -> Problems:
    """Every TOOLOUT_* name anywhere in the file (set, or interpolated) is a Settings field or an offline model knob."""
    found = {m for s in walk_strings(compose) for m in re.findall(r"\bTOOLOUT_[A-Z0-9_]+", s)}
    unknown = found - SETTINGS_VARS - OFFLINE_MODEL_VARS
    return [f"TOOLOUT_ variables that are not fields of infra.settings.Settings: {sorted(unknown)}"] if unknown else []


def check_litellm_cost_map(compose: dict[str, Any]) -> Problems:
    services = compose["services"]
    return [
        f"{name} must set LITELLM_LOCAL_MODEL_COST_MAP='True' (litellm fetches the cost map over the network otherwise)"
        for name in sorted(python_services(compose))
        if resolved_environment(services[name]).get("LITELLM_LOCAL_MODEL_COST_MAP") != "True"
    ]


def check_settings_valid(compose: dict[str, Any]) -> Problems:
    """The TOOLOUT_* environment of every python service builds a valid Settings (types, timeout ordering)."""
    services = compose["services"]
    problems = []
    for name in sorted(python_services(compose)):
        try:
            settings_from_env(resolved_environment(services[name]))
        except ValidationError as exc:
            problems.append(f"{name}: environment does not make valid Settings: {exc}")
    return problems


def check_internal_urls(compose: dict[str, Any]) -> Problems:
    """URLs handed to toolout point at services of this file (or outside hosts the user chose)."""
    services = compose["services"]
    problems = []
    for name in sorted(python_services(compose)):
        env = resolved_environment(services[name])
        for var in URL_VARS:
            if not env.get(var):
                continue
            host = urlparse(env[var]).hostname
            if host and "." not in host and host not in services:
                problems.append(f"{name}: {var}={env[var]!r} names host {host!r}, which is not a service")
    offline = command_argv(services.get("offline-model", {}))
    if "--port" in offline:
        port = int(offline[offline.index("--port") + 1])
        for name in sorted(python_services(compose)):
            base = resolved_environment(services[name]).get("TOOLOUT_MODEL_API_BASE")
            if base and urlparse(base).hostname == "offline-model" and urlparse(base).port != port:
                problems.append(f"{name}: TOOLOUT_MODEL_API_BASE={base!r} but offline-model listens on {port}")
    return problems


def check_commands(compose: dict[str, Any]) -> Problems:
    services = compose["services"]
    expected = {
        "api": ["toolout", "api"],
        "worker": ["toolout", "worker"],
        "offline-model": ["toolout", "offline-model"],
        "flower": ["toolout", "flower"],
    }
    problems = []
    for name, prefix in expected.items():
        argv = command_argv(services[name])
        if argv[: len(prefix)] != prefix:
            problems.append(f"{name} command should start with {prefix}, is {argv}")
        if name in ("api", "offline-model") and ("--host" not in argv or argv[argv.index("--host") + 1] != "0.0.0.0"):
            problems.append(f"{name} must listen on 0.0.0.0 inside the container: {argv}")
    worker = command_argv(services["worker"])
    if "--queues" in worker:
        queues = set(worker[worker.index("--queues") + 1].split(","))
        if queues != WORKER_QUEUES:
            problems.append(f"worker queues {sorted(queues)} != {sorted(WORKER_QUEUES)}")
    else:
        problems.append("worker command has no --queues")
    return problems


def check_worker_concurrency_from_env(compose: dict[str, Any]) -> Problems:
    worker = compose["services"]["worker"]
    argv = command_argv(worker)
    if "--concurrency" not in argv:
        return ["worker command has no --concurrency"]
    value = argv[argv.index("--concurrency") + 1]
    refs = interpolation_refs(value)
    if not refs:
        return [f"worker --concurrency is hard-coded ({value!r}); take it from an env var"]
    problems = [f"--concurrency variable {var} has no default" for var, op in refs if op not in (":-", "-")]
    try:
        if int(interpolate(value)) < 1:
            problems.append(f"worker --concurrency default {interpolate(value)!r} < 1")
    except ValueError:
        problems.append(f"worker --concurrency default {interpolate(value)!r} is not an integer")
    return problems


def check_worker_graceful_stop(compose: dict[str, Any]) -> Problems:
    worker = compose["services"]["worker"]
    limit = settings_from_env(resolved_environment(worker)).task_time_limit_seconds
    grace = worker.get("stop_grace_period")
    if grace is None:
        return [
            f"worker has no stop_grace_period (compose default 10s kills in-flight LLM calls; task limit is {limit}s)"
        ]
    if parse_duration(grace) < limit:
        return [f"worker stop_grace_period {grace} is shorter than task_time_limit_seconds={limit}"]
    if worker.get("stop_signal", "SIGTERM") not in ("SIGTERM", "TERM", 15):
        return [f"worker stop_signal {worker['stop_signal']} is not Celery's warm shutdown (SIGTERM)"]
    return []


def check_interpolations_have_defaults(compose: dict[str, Any]) -> Problems:
    """`docker compose up` works with no .env: every ${VAR} has a default (or is explicitly required)."""
    problems = []
    for s in walk_strings(compose):
        for var, op in interpolation_refs(s):
            if op not in (":-", "-", ":?", "?"):
                problems.append(f"${{{var}}} in {s!r} has no default")
    return problems


def check_dockerfile_reference(compose: dict[str, Any]) -> Problems:
    problems = []
    built = [name for name, svc in compose["services"].items() if svc.get("build") is not None]
    if not built:
        return ["no service builds the toolout image"]
    for name in built:
        path = dockerfile_path(compose, name)
        if path is None or not path.is_file():
            problems.append(f"{name} builds {path}, which does not exist")
        else:
            problems += [
                f"{path.relative_to(REPO)}: {p}" for p in check_dockerfile_text(path.read_text(encoding="utf-8"))
            ]
    if len(toolout_images(compose)) > 1:
        problems.append(f"services build the toolout image under several names: {sorted(toolout_images(compose))}")
    return problems


ALL_COMPOSE_CHECKS: list[Callable[[dict[str, Any]], Problems]] = [
    check_services_exist,
    check_worker_scalable,
    check_api_published,
    check_redis_durable,
    check_healthchecks,
    check_depends_on,
    check_minio_init,
    check_s3_credentials_match_minio,
    check_toolout_vars_are_settings,
    check_litellm_cost_map,
    check_settings_valid,
    check_internal_urls,
    check_commands,
    check_worker_concurrency_from_env,
    check_worker_graceful_stop,
    check_interpolations_have_defaults,
    check_dockerfile_reference,
]

# ------------------------------------------------------------------------------------------------
# Dockerfile checker
# ------------------------------------------------------------------------------------------------


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    out: list[tuple[str, str]] = []
    buf = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if buf and line.startswith("#"):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        if buf.strip():
            instr, _, args = buf.strip().partition(" ")
            out.append((instr.upper(), args.strip()))
        buf = ""
    return out


def env_assignments(args: str) -> dict[str, str]:
    tokens = shlex.split(args)
    if tokens and "=" not in tokens[0]:  # legacy `ENV KEY value`
        return {tokens[0]: " ".join(tokens[1:])}
    return dict(t.split("=", 1) for t in tokens if "=" in t)


def console_scripts() -> set[str]:
    with (REPO / "pyproject.toml").open("rb") as fh:
        return set(tomllib.load(fh)["project"].get("scripts", {}))


def check_dockerfile_text(text: str) -> Problems:
    instructions = dockerfile_instructions(text)
    problems: Problems = []
    froms = [i for i, (ins, _) in enumerate(instructions) if ins == "FROM"]
    if not froms:
        return ["no FROM"]
    for i in froms:
        image = instructions[i][1].split()[0]
        if not image.startswith("python:3.11-slim"):
            problems.append(f"base image {image!r} is not python:3.11-slim")
    final = instructions[froms[-1] :]

    env: dict[str, str] = {}
    for ins, args in final:
        if ins == "ENV":
            env.update(env_assignments(args))
    for var, value in {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONUNBUFFERED": "1"}.items():
        if env.get(var) != value:
            problems.append(f"final stage must set ENV {var}={value}, has {env.get(var)!r}")
    all_env = {k for ins, args in instructions if ins == "ENV" for k in env_assignments(args)}
    unknown = {k for k in all_env if k.startswith(ENV_PREFIX)} - SETTINGS_VARS
    if unknown:
        problems.append(f"ENV sets TOOLOUT_ variables that are not Settings fields: {sorted(unknown)}")

    users = [args for ins, args in final if ins == "USER"]
    if not users or users[-1].split(":")[0] in ("root", "0"):
        problems.append(f"final stage must run as a non-root USER, has {users[-1] if users else 'none'}")

    cmds = [args for ins, args in final if ins == "CMD"]
    entrypoints = [args for ins, args in final if ins == "ENTRYPOINT"]
    if entrypoints:
        problems.append(f"ENTRYPOINT {entrypoints[-1]} would wrap every compose command; use CMD only")
    if not cmds:
        problems.append("final stage has no CMD")
    else:
        try:
            argv = json.loads(cmds[-1])  # exec form is a JSON array
        except json.JSONDecodeError:
            argv = None
        if not isinstance(argv, list):
            problems.append(f"CMD must use the exec (JSON array) form so signals reach the process: {cmds[-1]}")
        elif argv[:2] != ["toolout", "api"] or argv[0] not in console_scripts():
            problems.append(f"CMD must run the `toolout` console script's api command, is {argv}")
        elif "--host" not in argv or argv[argv.index("--host") + 1] != "0.0.0.0":
            problems.append(f"CMD must bind 0.0.0.0 inside the container: {argv}")

    # Layer caching: pyproject.toml is copied and dependencies installed before any source package.
    packages = {"extraction", "infra", "workers", "api", "toolout", "."}
    first_src = next(
        (
            i
            for i, (ins, args) in enumerate(instructions)
            if ins == "COPY" and "--from" not in args and set(shlex.split(args)[:-1]) & packages
        ),
        None,
    )
    first_pyproject = next(
        (i for i, (ins, args) in enumerate(instructions) if ins == "COPY" and "pyproject.toml" in args.split()), None
    )
    first_install = next(
        (i for i, (ins, args) in enumerate(instructions) if ins == "RUN" and "pip install" in args), None
    )
    if first_src is None or first_pyproject is None or first_install is None:
        problems.append("Dockerfile must COPY pyproject.toml, pip install, then COPY the source")
    elif not first_pyproject < first_install < first_src:
        problems.append("dependencies must be installed from pyproject.toml before the source is copied (layer cache)")
    if not any(ins == "RUN" and "compose" in args and "pip install" in args for ins, args in instructions):
        problems.append("the image must install the `compose` extra (flower)")
    return problems


def check_dockerignore(text: str) -> Problems:
    entries = {
        line.strip().rstrip("/").removeprefix("/")
        for line in text.splitlines()
        if line.strip() and not line.startswith("#")
    }
    needed = {".venv", "var", ".git"}
    missing = needed - entries
    problems = [f".dockerignore must exclude {sorted(missing)}"] if missing else []
    if not any("__pycache__" in e for e in entries):
        problems.append(".dockerignore must exclude __pycache__")
    return problems


# ------------------------------------------------------------------------------------------------
# tests on the real files
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose()


@pytest.mark.parametrize("check", ALL_COMPOSE_CHECKS, ids=lambda f: f.__name__)
def test_compose(compose: dict[str, Any], check: Callable[[dict[str, Any]], Problems]) -> None:
    assert check(compose) == []


def test_python_services_are_the_toolout_ones(compose: dict[str, Any]) -> None:
    assert python_services(compose) == {"api", "worker", "flower", "offline-model"}


def test_dockerignore() -> None:
    assert check_dockerignore(DOCKERIGNORE.read_text(encoding="utf-8")) == []


def test_settings_vars_are_what_pydantic_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The TOOLOUT_<FIELD> naming the checks rely on is the one Settings actually reads."""
    assert Settings.model_config["env_prefix"] == ENV_PREFIX
    for var in SETTINGS_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TOOLOUT_WORKER_CONCURRENCY", "3")
    monkeypatch.setenv("TOOLOUT_REDIS_URL", "redis://redis:6379/0")
    s = Settings()
    assert (s.worker_concurrency, s.redis_url) == (3, "redis://redis:6379/0")
    assert "TOOLOUT_WORKER_CONCURRENCY" in SETTINGS_VARS


def test_interpolate() -> None:
    assert interpolate("${A:-x}") == "x"
    assert interpolate("${A:-x}", {"A": ""}) == "x"
    assert interpolate("${A-x}", {"A": ""}) == ""
    assert interpolate("${A:-x}", {"A": "y"}) == "y"
    assert interpolate("$$HOME ${B}") == "$HOME "
    with pytest.raises(ValueError):
        interpolate("${A:?must be set}")
    assert parse_duration("5m30s") == 330 and parse_duration("330s") == 330 and parse_duration("500ms") == 0.5


# ------------------------------------------------------------------------------------------------
# every checker can fail
# ------------------------------------------------------------------------------------------------


def _svc(c: dict[str, Any], name: str) -> dict[str, Any]:
    return c["services"][name]


def _set_env(c: dict[str, Any], name: str, key: str, value: Any) -> None:
    svc = _svc(c, name)
    env = dict(environment_of(svc))  # copy: anchors make services share one environment dict
    env[key] = value
    svc["environment"] = env


def _del_env(c: dict[str, Any], name: str, key: str) -> None:
    svc = _svc(c, name)
    svc["environment"] = {k: v for k, v in environment_of(svc).items() if k != key}


def _set_dep(c: dict[str, Any], name: str, dep: str, condition: str) -> None:
    svc = _svc(c, name)
    deps = {k: {"condition": v} for k, v in depends_on(svc).items()}
    deps[dep] = {"condition": condition}
    svc["depends_on"] = deps


BREAKAGES: list[tuple[str, Callable[[dict[str, Any]], None], Callable[[dict[str, Any]], Problems]]] = [
    ("flower removed", lambda c: c["services"].pop("flower"), check_services_exist),
    (
        "worker container_name",
        lambda c: _svc(c, "worker").update(container_name="toolout-worker"),
        check_worker_scalable,
    ),
    ("worker host port", lambda c: _svc(c, "worker").update(ports=["9999:9999"]), check_worker_scalable),
    ("api not published", lambda c: _svc(c, "api").pop("ports"), check_api_published),
    ("redis without AOF", lambda c: _svc(c, "redis").update(command=["redis-server"]), check_redis_durable),
    (
        "redis appendonly no",
        lambda c: _svc(c, "redis").update(command="redis-server --appendonly no"),
        check_redis_durable,
    ),
    ("redis without volume", lambda c: _svc(c, "redis").pop("volumes"), check_redis_durable),
    ("api without healthcheck", lambda c: _svc(c, "api").pop("healthcheck"), check_healthchecks),
    (
        "flower healthcheck disabled",
        lambda c: _svc(c, "flower").update(healthcheck={"disable": True}),
        check_healthchecks,
    ),
    (
        "offline-model curl healthcheck",
        lambda c: _svc(c, "offline-model").update(
            healthcheck={"test": "CMD-SHELL curl -f http://127.0.0.1:8765/healthz"}
        ),
        check_healthchecks,
    ),
    ("worker waits for redis started", lambda c: _set_dep(c, "worker", "redis", "service_started"), check_depends_on),
    (
        "api short-form depends_on",
        lambda c: _svc(c, "api").update(depends_on=["redis", "minio-init", "offline-model"]),
        check_depends_on,
    ),
    ("api ignores minio-init", lambda c: _set_dep(c, "api", "minio-init", "service_started"), check_depends_on),
    ("waits on healthcheck-less", lambda c: _svc(c, "offline-model").pop("healthcheck"), check_depends_on),
    ("minio-init restarts", lambda c: _svc(c, "minio-init").update(restart="unless-stopped"), check_minio_init),
    ("minio-init restart: no unquoted", lambda c: _svc(c, "minio-init").update(restart=False), check_minio_init),
    (
        "bucket mismatch",
        lambda c: [_set_env(c, n, "TOOLOUT_BLOB_STORE", "s3://elsewhere") for n in ("api", "worker")],
        check_minio_init,
    ),
    (
        "s3 key != minio root",
        lambda c: _set_env(c, "worker", "TOOLOUT_S3_SECRET_ACCESS_KEY", "nope"),
        check_s3_credentials_match_minio,
    ),
    (
        "unknown TOOLOUT_ var",
        lambda c: _set_env(c, "worker", "TOOLOUT_BUCKET", "toolout"),
        check_toolout_vars_are_settings,
    ),
    (
        "unknown TOOLOUT_ var in list env",
        lambda c: _svc(c, "flower").update(environment=["TOOLOUT_FLOWER_PORT=5555"]),
        check_toolout_vars_are_settings,
    ),
    (
        "unknown TOOLOUT_ var interpolated",
        lambda c: _svc(c, "api").update(ports=["${TOOLOUT_PUBLISH_PORT:-8000}:8000"]),
        check_toolout_vars_are_settings,
    ),
    (
        "offline-model without cost map",
        lambda c: _del_env(c, "offline-model", "LITELLM_LOCAL_MODEL_COST_MAP"),
        check_litellm_cost_map,
    ),
    (
        "cost map False",
        lambda c: _set_env(c, "flower", "LITELLM_LOCAL_MODEL_COST_MAP", "False"),
        check_litellm_cost_map,
    ),
    (
        "timeouts out of order",
        lambda c: _set_env(c, "worker", "TOOLOUT_MODEL_TIMEOUT_SECONDS", "900"),
        check_settings_valid,
    ),
    ("bad type", lambda c: _set_env(c, "api", "TOOLOUT_WORKER_CONCURRENCY", "many"), check_settings_valid),
    (
        "redis url to unknown host",
        lambda c: _set_env(c, "api", "TOOLOUT_REDIS_URL", "redis://cache:6379/0"),
        check_internal_urls,
    ),
    (
        "model base wrong port",
        lambda c: _set_env(c, "worker", "TOOLOUT_MODEL_API_BASE", "http://offline-model:9999/v1"),
        check_internal_urls,
    ),
    ("api runs uvicorn", lambda c: _svc(c, "api").update(command="uvicorn api.app:app"), check_commands),
    (
        "worker missing queue",
        lambda c: _svc(c, "worker").update(
            command="toolout worker --concurrency ${TOOLOUT_WORKER_CONCURRENCY:-8} --queues extract,map"
        ),
        check_commands,
    ),
    (
        "hard-coded concurrency",
        lambda c: _svc(c, "worker").update(command="toolout worker --concurrency 8 --queues extract,map,reduce,agent"),
        check_worker_concurrency_from_env,
    ),
    (
        "concurrency without default",
        lambda c: _svc(c, "worker").update(
            command="toolout worker --concurrency ${TOOLOUT_WORKER_CONCURRENCY} --queues extract,map,reduce,agent"
        ),
        check_worker_concurrency_from_env,
    ),
    ("default grace period", lambda c: _svc(c, "worker").pop("stop_grace_period"), check_worker_graceful_stop),
    ("short grace period", lambda c: _svc(c, "worker").update(stop_grace_period="1m"), check_worker_graceful_stop),
    ("SIGKILL on stop", lambda c: _svc(c, "worker").update(stop_signal="SIGKILL"), check_worker_graceful_stop),
    (
        "grace shorter than raised limit",
        lambda c: [
            _set_env(c, "worker", f"TOOLOUT_{k}", v)
            for k, v in (("TASK_SOFT_TIME_LIMIT_SECONDS", "500"), ("TASK_TIME_LIMIT_SECONDS", "600"))
        ],
        check_worker_graceful_stop,
    ),
    (
        "variable without default",
        lambda c: _set_env(c, "api", "TOOLOUT_MODEL", "${TOOLOUT_MODEL}"),
        check_interpolations_have_defaults,
    ),
    (
        "missing Dockerfile",
        lambda c: [
            _svc(c, n).update(build={"context": ".", "dockerfile": "infra/Dockerfile.missing"})
            for n in python_services(c)
        ],
        check_dockerfile_reference,
    ),
    ("two image names", lambda c: _svc(c, "worker").update(image="toolout-worker:local"), check_dockerfile_reference),
]


@pytest.mark.parametrize("what, breaker, check", BREAKAGES, ids=[b[0] for b in BREAKAGES])
def test_checkers_catch_broken_input(compose: dict[str, Any], what: str, breaker, check) -> None:
    assert check(compose) == [], "the real file must pass before the broken copy means anything"
    broken = copy.deepcopy(compose)
    breaker(broken)
    assert check(broken), f"{check.__name__} did not notice: {what}"


def test_every_compose_checker_has_a_breakage() -> None:
    covered = {b[2] for b in BREAKAGES}
    assert [c.__name__ for c in ALL_COMPOSE_CHECKS if c not in covered] == []


GOOD_DOCKERFILE = (
    (REPO / "infra" / "Dockerfile").read_text(encoding="utf-8") if (REPO / "infra" / "Dockerfile").is_file() else ""
)

DOCKERFILE_BREAKAGES = [
    (
        "CMD python -m",
        lambda t: t.replace('CMD ["toolout", "api", "--host", "0.0.0.0"]', 'CMD ["python", "-m", "api"]'),
    ),
    (
        "CMD shell form",
        lambda t: t.replace('CMD ["toolout", "api", "--host", "0.0.0.0"]', "CMD toolout api --host 0.0.0.0"),
    ),
    ("CMD loopback", lambda t: t.replace('CMD ["toolout", "api", "--host", "0.0.0.0"]', 'CMD ["toolout", "api"]')),
    ("runs as root", lambda t: t.replace("USER 10001:10001", "USER root")),
    ("no USER", lambda t: t.replace("USER 10001:10001", "")),
    (
        "no cost map env",
        lambda t: t.replace(
            "ENV LITELLM_LOCAL_MODEL_COST_MAP=True \\\n    PYTHONUNBUFFERED=1", "ENV PYTHONUNBUFFERED=1"
        ),
    ),
    ("buffered output", lambda t: t.replace("PYTHONUNBUFFERED=1", "PYTHONUNBUFFERED=0")),
    ("unknown TOOLOUT_ ENV", lambda t: t.replace("TOOLOUT_BLOB_STORE=", "TOOLOUT_BLOBS=")),
    ("other base image", lambda t: t.replace("FROM python:3.11-slim AS runtime", "FROM python:3.12 AS runtime")),
    ("source before deps", lambda t: t.replace("COPY pyproject.toml ./\n", "COPY . ./\n", 1)),
    (
        "no compose extra",
        lambda t: t.replace('".[compose]"', ".").replace("['optional-dependencies']['compose']", "[]"),
    ),
    ("ENTRYPOINT", lambda t: t + '\nENTRYPOINT ["python"]\n'),
]


@pytest.mark.parametrize("what, breaker", DOCKERFILE_BREAKAGES, ids=[b[0] for b in DOCKERFILE_BREAKAGES])
def test_dockerfile_checker_catches_broken_input(what: str, breaker) -> None:
    assert check_dockerfile_text(GOOD_DOCKERFILE) == []
    broken = breaker(GOOD_DOCKERFILE)
    assert broken != GOOD_DOCKERFILE, f"breakage {what!r} no longer applies to infra/Dockerfile; update it"
    assert check_dockerfile_text(broken), f"check_dockerfile_text did not notice: {what}"


def test_dockerignore_checker_catches_broken_input() -> None:
    good = DOCKERIGNORE.read_text(encoding="utf-8")
    assert check_dockerignore(good) == []
    assert check_dockerignore(good.replace(".venv\n", ""))
    assert check_dockerignore("\n".join(line for line in good.splitlines() if "__pycache__" not in line))


# ------------------------------------------------------------------------------------------------
# CI's override (infra/compose/ci.override.yml): what `make test-compose` adds to the user's file
# ------------------------------------------------------------------------------------------------

CI_OVERRIDE = REPO / "infra" / "compose" / "ci.override.yml"


class _ComposeTagsLoader(yaml.SafeLoader):
    """Compose's merge tags (`!override`, `!reset`) read as the plain value they carry."""


for _tag in ("!override", "!reset"):
    _ComposeTagsLoader.add_constructor(_tag, lambda loader, node: loader.construct_sequence(node))


def test_ci_override_is_small_and_swaps_only_what_the_guide_names() -> None:
    text = CI_OVERRIDE.read_text(encoding="utf-8")
    override = yaml.load(text, Loader=_ComposeTagsLoader)
    user = load_compose()
    assert len(text.splitlines()) <= 30
    assert set(override) <= {"x-host-build", "services", "networks"}
    assert set(override["services"]) <= set(user["services"]), "the override adds no service"
    assert {"image", "command", "ports", "healthcheck"} >= set(override["services"]["minio"])
    assert user["services"]["minio"]["image"].startswith("minio/minio:"), "the user's file keeps MinIO"
    assert override["networks"]["default"]["ipam"]["config"][0]["subnet"].startswith("${TOOLOUT_CI_SUBNET")
