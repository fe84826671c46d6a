#!/usr/bin/env bash
# Builds promtool from Prometheus's Go module (hack/tools/promtool pins the
# version) once and prints its path. It lands in a cache outside the work
# tree, keyed by the version, like helm and the control plane's binaries: two
# minutes on 2 cores the first time, nothing later. make test runs `promtool
# test rules` with it. Prometheus's build tag remove_all_sd leaves out the
# service discovery of the clouds (AWS, Azure, GCE, Consul and a dozen
# more: their SDKs were more than half of the build), which rules, their
# tests and queries never use.
#
# Usage: hack/ensure-promtool.sh         build it if missing, print its path
#        APPSERVICE_CACHE=/path ...      use another cache root
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/hack/build-env.sh"
TOOLS="$ROOT/hack/tools/promtool"
VERSION=$(cd "$TOOLS" && go list -m -f '{{.Version}}' github.com/prometheus/prometheus)

CACHE=${APPSERVICE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/appservice-controller}
BIN="$CACHE/bin/promtool-${VERSION}_remove_all_sd"
if [[ ! -x "$BIN/promtool" ]]; then
  echo "ensure-promtool: building promtool $VERSION (a few minutes the first time)" >&2
  mkdir -p "$BIN"
  tmp=$(mktemp -d "$BIN/.build.XXXXXX")
  ( cd "$TOOLS" && go build -tags remove_all_sd -ldflags "-s -w" -o "$tmp/promtool" github.com/prometheus/prometheus/cmd/promtool ) >&2
  mv "$tmp/promtool" "$BIN/promtool"
  rmdir "$tmp"
fi
echo "$BIN/promtool"
