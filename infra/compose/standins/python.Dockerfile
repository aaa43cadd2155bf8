# python:3.11-slim stand-in: Debian bookworm's python3 (3.11) with venv/ensurepip, `python` on PATH, and the
# machine's CA bundle at a path of its own (apt's ca-certificates rewrites the system one) named for pip.
ARG BASE
FROM ${BASE}
COPY host-ca.crt /usr/local/share/standin/host-ca.crt
ENV LANG=C.UTF-8 \
    PIP_CERT=/usr/local/share/standin/host-ca.crt \
    SSL_CERT_FILE=/usr/local/share/standin/host-ca.crt
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends python3 python3-venv python-is-python3 >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
CMD ["python3"]
