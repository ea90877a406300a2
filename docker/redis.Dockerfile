# Redis without a registry: Debian's redis-server (the build machine's),
# the libraries ldd lists for it, and dash as /bin/sh for the entry point
# and docker-compose.yml's sentinel command. Built by build-images.sh,
# which assembles rootfs/ in the build context.
FROM scratch
COPY rootfs/ /
ENV PATH=/usr/local/bin:/usr/bin:/bin
WORKDIR /data
EXPOSE 6379
LABEL org.quorumlock.image=redis
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["redis-server"]
