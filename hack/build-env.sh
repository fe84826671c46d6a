# Sourced by the hack/ensure-*.sh scripts: the build configuration of every
# Go build of the project, the one the Makefile exports to its targets:
# static (CGO_ENABLED=0) and without the checkout's paths (-trimpath), as
# the image ships the controller. A package built with other settings is
# compiled again; with these, the Go build cache compiles what the builds
# share once: the standard library for all of them, and the dependencies
# that the controller, its tests and the tools have at the same version.
export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath"
