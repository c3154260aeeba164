# ringmq from source: the Makefile builds every command (bin/mqbroker, bin/mqnamesrv, bin/mqbench,
# bin/mqadmin, ...) with the flags it needs (-checklinkname=0 for the io_uring binding, the version
# stamp), and the runtime image carries the binaries only.
#
#   docker build --build-arg VERSION=$(git describe --always --dirty) --build-arg COMMIT=$(git rev-parse HEAD) -t ringmq .
#   docker run --rm -p 9876:9876 -p 10911:10911 -p 10909:10909 -v ringmq-data:/data ringmq \
#       --metricsAddr=0.0.0.0:9106 --brokerIP1=$(hostname -I | cut -d' ' -f1)
#
# Containers: io_uring is often refused by the runtime's seccomp profile (recent Docker and
# containerd default profiles block the io_uring system calls); the broker then falls back to fdatasync and its startup summary says
# so (msg=flush ... fallbackReason=...). transientStorePoolEnable=true and warmMappedFileMlock=true
# pin memory with mlock: run with --ulimit memlock=-1 (or a limit of at least the pinned bytes) or
# --cap-add IPC_LOCK. README "Operating ringmq" has the details.

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Modules first: the layer stays cached while only the sources change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The build context has no .git (.dockerignore): the version comes in as build arguments.
ARG VERSION=unknown
ARG COMMIT=
RUN make build BIN=/out VERSION="$VERSION" COMMIT="$COMMIT"

FROM debian:bookworm-slim
RUN useradd --system --home-dir /data --shell /usr/sbin/nologin ringmq \
    && mkdir -p /data /etc/ringmq && chown ringmq:ringmq /data
COPY --from=build /out/ /usr/local/bin/
COPY conf/ /etc/ringmq/
USER ringmq
VOLUME /data
# 9876 name server, 10911 remoting, 10909 fast port (listenPort - 2), 10912 HA (listenPort + 1),
# 9106 metrics and pprof.
EXPOSE 9876 10909 10911 10912 9106
# Arguments given to docker run replace CMD and add to the ENTRYPOINT (a repeated flag: the last wins).
ENTRYPOINT ["mqbroker", "--storePathRootDir=/data"]
# The container's loopback is private, so metrics listen on every interface of the container;
# publish 9106 only where the network is trusted (it serves pprof too).
CMD ["--metricsAddr=0.0.0.0:9106"]
