#!/usr/bin/env bash
# Builds helm from its Go module (hack/tools/helm pins the version) once and
# prints its path. It lands in a cache outside the work tree, keyed by the
# version, like the control plane's binaries (hack/ensure-binaries.sh): a few
# minutes on 2 cores the first time, nothing later.
#
# Usage: hack/ensure-helm.sh            build it if missing, print its path
#        APPSERVICE_CACHE=/path ...     use another cache root
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/hack/build-env.sh"

TOOLS="$ROOT/hack/tools/helm"
HELM_VERSION=$(cd "$TOOLS" && go list -m -f '{{.Version}}' helm.sh/helm/v4)

CACHE=${APPSERVICE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/appservice-controller}
BIN="$CACHE/bin/helm-$HELM_VERSION"
if [[ ! -x "$BIN/helm" ]]; then
  echo "ensure-helm: building helm $HELM_VERSION (a few minutes the first time)" >&2
  mkdir -p "$BIN"
  tmp=$(mktemp -d "$BIN/.build.XXXXXX")
  # Helm's version comes from its own ldflags; stamp the pinned one.
  ( cd "$TOOLS" && go build \
      -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
      -o "$tmp/helm" helm.sh/helm/v4/cmd/helm ) >&2
  mv "$tmp/helm" "$BIN/helm"
  rmdir "$tmp"
fi
echo "$BIN/helm"
