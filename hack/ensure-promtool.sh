#!/usr/bin/env bash
# Builds promtool from Prometheus's Go module (hack/tools/promtool pins the
# version) once and prints its path. It lands in a cache outside the work
# tree, keyed by the version, like helm and the control plane's binaries: a
# few minutes on 2 cores the first time (Prometheus links its service
# discovery), nothing later. make test runs `promtool test rules` with it.
#
# Usage: hack/ensure-promtool.sh         build it if missing, print its path
#        APPSERVICE_CACHE=/path ...      use another cache root
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS="$ROOT/hack/tools/promtool"
VERSION=$(cd "$TOOLS" && go list -m -f '{{.Version}}' github.com/prometheus/prometheus)

CACHE=${APPSERVICE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/appservice-controller}
BIN="$CACHE/bin/promtool-$VERSION"
if [[ ! -x "$BIN/promtool" ]]; then
  echo "ensure-promtool: building promtool $VERSION (a few minutes the first time)" >&2
  mkdir -p "$BIN"
  tmp=$(mktemp -d "$BIN/.build.XXXXXX")
  ( cd "$TOOLS" && go build -trimpath -ldflags "-s -w" -o "$tmp/promtool" github.com/prometheus/prometheus/cmd/promtool ) >&2
  mv "$tmp/promtool" "$BIN/promtool"
  rmdir "$tmp"
fi
echo "$BIN/promtool"
