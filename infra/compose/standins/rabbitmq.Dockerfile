# rabbitmq:3.13 stand-in: Debian bookworm's rabbitmq-server (3.10; quorum queues and delayed delivery work).
# policy-rc.d keeps the package's postinst from starting a broker inside the build.
ARG BASE
FROM ${BASE}
RUN printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d \
 && apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends rabbitmq-server >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /usr/sbin/policy-rc.d \
 && mkdir -p /etc/rabbitmq/conf.d && chown -R rabbitmq:rabbitmq /etc/rabbitmq /var/lib/rabbitmq
COPY entrypoint.sh /usr/local/bin/standin-entrypoint
VOLUME /var/lib/rabbitmq
EXPOSE 5672
ENTRYPOINT ["standin-entrypoint", "rabbitmq"]
CMD ["rabbitmq-server"]
