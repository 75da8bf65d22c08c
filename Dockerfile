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

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/metal-cloud-controller-manager /out/metal-node-agent /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/metal-cloud-controller-manager"]
