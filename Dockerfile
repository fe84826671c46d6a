# syntax=docker/dockerfile:1
# The controller as a static binary on distroless, running as non-root.
#   make docker-build IMG=registry.example.com/appservice-controller:v0.1.0
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The version stamp (make docker-build passes the Makefile's LDFLAGS).
ARG LDFLAGS=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w ${LDFLAGS}" -o /out/appservice-controller .

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/appservice-controller /appservice-controller
USER 65532:65532
ENTRYPOINT ["/appservice-controller"]
