#!/usr/bin/env bash
# Builds golangci-lint and logcheck from their Go modules (hack/tools/lint
# pins the versions) once and prints the folder that holds them. They land
# in a cache outside the work tree, keyed by the versions, like the control
# plane's binaries: a few minutes on 2 cores the first time, nothing later.
#
# Usage: hack/ensure-lint.sh            build what is missing, print the folder
#        APPSERVICE_CACHE=/path ...     use another cache root
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/hack/build-env.sh"

TOOLS="$ROOT/hack/tools/lint"
version() { (cd "$TOOLS" && go list -m -f '{{.Version}}' "$1"); }
GOLANGCI_VERSION=$(version github.com/golangci/golangci-lint/v2)
LOGTOOLS_VERSION=$(version sigs.k8s.io/logtools)

CACHE=${APPSERVICE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/appservice-controller}
BIN="$CACHE/bin/golangci-lint-${GOLANGCI_VERSION}_logtools-${LOGTOOLS_VERSION}"
mkdir -p "$BIN"

build() { # name package ldflags
  [[ -x "$BIN/$1" ]] && return
  echo "ensure-lint: building $1 (a few minutes the first time)" >&2
  local tmp; tmp=$(mktemp -d "$BIN/.build.XXXXXX")
  ( cd "$TOOLS" && go build -ldflags "-s -w $3" -o "$tmp/$1" "$2" ) >&2
  mv "$tmp/$1" "$BIN/$1"
  rmdir "$tmp"
}
build golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint "-X main.version=${GOLANGCI_VERSION#v}"
build logcheck sigs.k8s.io/logtools/logcheck ""
echo "$BIN"
