#!/usr/bin/env bash
# Builds a command of Prometheus's Go module (hack/tools/promtool pins the
# version), the server (the default) or promtool, once and prints its path.
# It lands in a cache outside the work tree, keyed by the version, like the
# control plane's binaries: a few minutes on 2 cores the first time, nothing
# later. The end-to-end tests of canary analysis and the demo run the server
# (internal/promtest) and query it as the controller does; make test runs
# `promtool test rules` (hack/ensure-promtool.sh). The build tag
# remove_all_sd leaves out the service discovery of the clouds (AWS, Azure,
# GCE, Consul and a dozen more: their SDKs were more than half of the
# build), which static targets, rules, their tests and queries never use.
# Without the tag builtinassets the web UI's files are not embedded; the
# HTTP API does not need them.
#
# Usage: hack/ensure-prometheus.sh [prometheus|promtool]
#                                   build it if missing, print its path
#        APPSERVICE_CACHE=/path ... use another cache root
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/hack/build-env.sh"
TOOLS="$ROOT/hack/tools/promtool"
CMD=${1:-prometheus}
case $CMD in
  prometheus | promtool) ;;
  *) echo "ensure-prometheus: $CMD is not prometheus or promtool" >&2; exit 2 ;;
esac
VERSION=$(cd "$TOOLS" && go list -m -f '{{.Version}}' github.com/prometheus/prometheus)

CACHE=${APPSERVICE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/appservice-controller}
BIN="$CACHE/bin/$CMD-${VERSION}_remove_all_sd"
if [[ ! -x "$BIN/$CMD" ]]; then
  echo "ensure-prometheus: building $CMD $VERSION (a few minutes the first time)" >&2
  mkdir -p "$BIN"
  tmp=$(mktemp -d "$BIN/.build.XXXXXX")
  # The version comes from Prometheus's own ldflags (--version,
  # /api/v1/status/buildinfo); stamp the pinned module's.
  ( cd "$TOOLS" && go build -tags remove_all_sd \
      -ldflags "-s -w -X github.com/prometheus/common/version.Version=$VERSION" \
      -o "$tmp/$CMD" "github.com/prometheus/prometheus/cmd/$CMD" ) >&2
  mv "$tmp/$CMD" "$BIN/$CMD"
  rmdir "$tmp"
fi
echo "$BIN/$CMD"
