# Multi-stage build of a static binary into a distroless, non-root image.
#   docker build -t metal-cloud-controller-manager .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY pkg/ pkg/
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/metal-cloud-controller-manager ./cmd/metal-cloud-controller-manager

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/metal-cloud-controller-manager /usr/local/bin/metal-cloud-controller-manager
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/metal-cloud-controller-manager"]
