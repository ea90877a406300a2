# toxiproxy without a registry: toxiproxy-server built from the Go module
# the chaos module already requires (same version as the embedded one).
# Built by build-images.sh. Arguments as for the official image.
FROM scratch
COPY toxiproxy /toxiproxy
EXPOSE 8474
LABEL org.quorumlock.image=toxiproxy
ENTRYPOINT ["/toxiproxy"]
CMD ["-host=0.0.0.0"]
