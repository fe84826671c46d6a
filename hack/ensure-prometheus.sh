#!/usr/bin/env bash
# Builds the Prometheus server from Prometheus's Go module (hack/tools/promtool
# pins the version, the same as promtool's) once and prints its path. It
# lands in a cache outside the work tree, keyed by the version, like promtool
# and the control plane's binaries: a few minutes on 2 cores the first time,
# nothing later. The end-to-end tests of canary analysis and the demo run it
# (internal/promtest) and query it as the controller does. The build tag
# remove_all_sd leaves out the service discovery of the clouds, as for
# promtool: the tests scrape static targets. Without the tag builtinassets
# the web UI's files are not embedded; the HTTP API does not need them.
#
# Usage: hack/ensure-prometheus.sh      build it if missing, print its path
#        APPSERVICE_CACHE=/path ...     use another cache root
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/hack/build-env.sh"
TOOLS="$ROOT/hack/tools/promtool"
VERSION=$(cd "$TOOLS" && go list -m -f '{{.Version}}' github.com/prometheus/prometheus)

CACHE=${APPSERVICE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/appservice-controller}
BIN="$CACHE/bin/prometheus-${VERSION}_remove_all_sd"
if [[ ! -x "$BIN/prometheus" ]]; then
  echo "ensure-prometheus: building prometheus $VERSION (a few minutes the first time)" >&2
  mkdir -p "$BIN"
  tmp=$(mktemp -d "$BIN/.build.XXXXXX")
  # Prometheus's version comes from its own ldflags (prometheus --version,
  # /api/v1/status/buildinfo); stamp the pinned module's.
  ( cd "$TOOLS" && go build -tags remove_all_sd \
      -ldflags "-s -w -X github.com/prometheus/common/version.Version=$VERSION" \
      -o "$tmp/prometheus" github.com/prometheus/prometheus/cmd/prometheus ) >&2
  mv "$tmp/prometheus" "$BIN/prometheus"
  rmdir "$tmp"
fi
echo "$BIN/prometheus"
