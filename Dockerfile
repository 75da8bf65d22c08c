# Multi-stage build of a static binary into a distroless, non-root image.
#   docker build -t metal-cloud-controller-manager .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY pkg/ pkg/
ARG VERSION=dev
# Both commands: the manager (the entrypoint) and the node agent
# (bgp.announceFrom: Nodes; the chart runs it with command: metal-node-agent).
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ ./cmd/metal-cloud-controller-manager ./cmd/metal-node-agent
# The node agent answers ARP and NDP for L2 pools with raw sockets: it holds
# CAP_NET_RAW as a permitted (not effective) file capability and raises it
# itself only when an L2 pool exists, so that without one, or without the
# capability in the container's bounding set, it starts all the same
# (docs/l2.md, "Permissions"). COPY --from keeps it (BuildKit keeps xattrs).
RUN apt-get update && apt-get install -y --no-install-recommends libcap2-bin && \
    setcap cap_net_raw=p /out/metal-node-agent

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/metal-cloud-controller-manager /out/metal-node-agent /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/metal-cloud-controller-manager"]
