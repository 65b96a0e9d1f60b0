# syntax=docker/dockerfile:1
# The raygate operator image: a static binary on distroless, running as the nonroot user
# (65532), as the chart's restricted security context expects.
#
#   docker build --build-arg VERSION=v0.1.0 -t ghcr.io/raygate/raygate:0.1.0 .

FROM golang:1.26 AS build
ARG VERSION=dev
ARG TARGETOS=linux
ARG TARGETARCH
WORKDIR /src
# Dependencies first, so a source change does not download modules again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY apis/ apis/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY internal/ internal/
COPY webhooks/ webhooks/
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X github.com/raygate/raygate/internal/version.Version=${VERSION}" \
    -o /out/raygate ./cmd/raygate

FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.source="https://github.com/raygate/raygate" \
      org.opencontainers.image.description="raygate: admission webhooks and controllers for Ray on Kubernetes" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/raygate /raygate
USER 65532:65532
ENTRYPOINT ["/raygate"]
