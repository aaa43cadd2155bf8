#!/bin/bash
# Entrypoint of the stand-in images: `standin-entrypoint KIND [COMMAND...]`. Does for each what the real
# image's entrypoint does that the compose file relies on, then execs the command.
set -euo pipefail
kind="$1"
shift

as_user() { exec setpriv --reuid="$1" --regid="$1" --init-groups -- "${@:2}"; }

case "$kind" in
  redis)
    # The official image builds Redis with protected mode off: other containers connect without a password.
    if [ "${1:-}" = redis-server ]; then set -- "$@" --protected-mode no; fi
    chown -R redis:redis /data
    as_user redis "$@"
    ;;
  rabbitmq)
    # RABBITMQ_DEFAULT_USER/PASS/VHOST as the official image takes them: the first boot's user and vhost.
    {
      [ -z "${RABBITMQ_DEFAULT_USER:-}" ] || echo "default_user = $RABBITMQ_DEFAULT_USER"
      [ -z "${RABBITMQ_DEFAULT_PASS:-}" ] || echo "default_pass = $RABBITMQ_DEFAULT_PASS"
      [ -z "${RABBITMQ_DEFAULT_VHOST:-}" ] || echo "default_vhost = $RABBITMQ_DEFAULT_VHOST"
      echo "listeners.tcp.default = 5672"
    } > /etc/rabbitmq/conf.d/10-standin.conf
    chown -R rabbitmq:rabbitmq /var/lib/rabbitmq /etc/rabbitmq
    export HOME=/var/lib/rabbitmq
    as_user rabbitmq "$@"
    ;;
  s3)
    if [ "${1:-}" = mb ]; then
      # Make bucket $2 on the server at ${S3_MASTER:-minio:9333}, retrying while it starts; an existing one is fine.
      for _ in $(seq 60); do
        echo "s3.bucket.create -name $2" | weed shell -master="${S3_MASTER:-minio:9333}" >/tmp/mb.log 2>&1 || true
        if grep -qiE 'created bucket|already exists' /tmp/mb.log; then exit 0; fi
        sleep 1
      done
      cat /tmp/mb.log >&2
      exit 1
    fi
    user="${MINIO_ROOT_USER:-toolout}" secret="${MINIO_ROOT_PASSWORD:-toolout-secret}"
    printf '{"identities": [{"name": "%s", "credentials": [{"accessKey": "%s", "secretKey": "%s"}],
      "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}\n' "$user" "$user" "$secret" > /tmp/s3.json
    exec weed server -dir=/data -filer -s3 -s3.port=9000 -s3.config=/tmp/s3.json -s3.autoCreateBucket=false \
      -s3.port.iceberg=0 -s3.port.lance=0 -master.volumeSizeLimitMB=256 -volume.preStopSeconds=0
    ;;
  *)
    echo "standin-entrypoint: unknown kind $kind" >&2
    exit 2
    ;;
esac
