# syntax=docker/dockerfile:1
# gpuadmit's images, built by `make image` (docker or podman), which takes
# their names and tags from charts/gpuadmit/values.yaml:
#   webhook     cmd/webhook, a static binary on distroless static (nonroot)
#   nvml-agent  cmd/nvml-agent, a cgo binary that dlopens libnvidia-ml at
#               start, on distroless base (glibc), nonroot
# Both run as UID/GID 65532, as the chart's securityContext says.
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
ENV GOFLAGS=-buildvcs=false
# The webhook's gpuadmit_build_info{version,revision} (make image passes both).
ARG VERSION=dev
ARG COMMIT=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" -o /out/webhook ./cmd/webhook \
 && CGO_ENABLED=1 CGO_CFLAGS='-O2 -g -Wno-deprecated-declarations' \
    go build -trimpath -ldflags '-s -w' -o /out/nvml-agent ./cmd/nvml-agent

FROM gcr.io/distroless/static-debian12:nonroot AS webhook
ARG VERSION=dev
LABEL org.opencontainers.image.title="gpuadmit-webhook" \
      org.opencontainers.image.description="gpuadmit's admission webhook: exact GPU quotas for pods" \
      org.opencontainers.image.source="https://github.com/gpuadmit/gpuadmit" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/webhook /webhook
USER 65532:65532
ENTRYPOINT ["/webhook"]

# bookworm's glibc, as the build stage's.
FROM gcr.io/distroless/base-debian12:nonroot AS nvml-agent
ARG VERSION=dev
LABEL org.opencontainers.image.title="gpuadmit-nvml-agent" \
      org.opencontainers.image.description="gpuadmit's node agent: NVML devices to the Node's gpuadmit.io/gpu-devices annotation" \
      org.opencontainers.image.source="https://github.com/gpuadmit/gpuadmit" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/nvml-agent /nvml-agent
USER 65532:65532
ENTRYPOINT ["/nvml-agent"]
