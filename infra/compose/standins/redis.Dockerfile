# redis:7 stand-in: Debian bookworm's redis-server (7.0), data in /data, run as the redis user.
ARG BASE
FROM ${BASE}
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends redis-server >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \
 && mkdir -p /data && chown redis:redis /data
COPY entrypoint.sh /usr/local/bin/standin-entrypoint
WORKDIR /data
VOLUME /data
EXPOSE 6379
ENTRYPOINT ["standin-entrypoint", "redis"]
CMD ["redis-server"]
