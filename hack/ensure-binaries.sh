#!/usr/bin/env bash
# Builds the local control plane's binaries once and prints the folder that
# holds them. Everything lands in a cache outside the work tree, keyed by
# version, so a new clone (or CI on the same machine) finds them; a machine
# that has never built them takes ~25 minutes on 2 cores, later runs none.
#
#   etcd                                 go.etcd.io/etcd/server/v3 (hack/tools/etcd)
#   kube-apiserver, kube-controller-manager,
#   kube-scheduler, kubectl              k8s.io/kubernetes (hack/tools/kube)
#   kwok + its stage files               sigs.k8s.io/kwok
#
# Usage: hack/ensure-binaries.sh           build what is missing, print the bin dir
#        APPSERVICE_CACHE=/path ...        use another cache root
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/hack/build-env.sh"

KUBE_VERSION=v1.37.1
ETCD_VERSION=v3.6.8
KWOK_VERSION=v0.8.0

CACHE=${APPSERVICE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/appservice-controller}
BIN="$CACHE/bin/kube-${KUBE_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
mkdir -p "$BIN"

log() { echo "ensure-binaries: $*" >&2; }

# Build into a temporary folder and move into place, so that an interrupted
# build never leaves a half-written binary that a later run would trust.
staged_build() { # dir [-o name] go-build-args...
  local dir=$1; shift
  local tmp; tmp=$(mktemp -d "$BIN/.build.XXXXXX")
  local out="$tmp/"
  if [[ $1 == -o ]]; then out="$tmp/$2"; shift 2; fi
  ( cd "$ROOT/hack/tools/$dir" && go build -o "$out" "$@" )
  mv "$tmp"/* "$BIN/"
  rmdir "$tmp"
}

if [[ ! -x "$BIN/etcd" ]]; then
  log "building etcd $ETCD_VERSION (a few minutes)"
  # The package's last path element is its major version; name the binary.
  staged_build etcd -o etcd -ldflags "-s -w" go.etcd.io/etcd/server/v3
fi

kube=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
missing=()
for b in "${kube[@]}"; do [[ -x "$BIN/$b" ]] || missing+=("k8s.io/kubernetes/cmd/$b"); done
if (( ${#missing[@]} )); then
  log "building ${missing[*]##*/} $KUBE_VERSION (first time: ~25 minutes on 2 cores)"
  major=${KUBE_VERSION#v}; minor=${major#*.}; major=${major%%.*}; minor=${minor%%.*}
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  staged_build kube -ldflags "$ldflags" "${missing[@]}"
fi

if [[ ! -x "$BIN/kwok" || ! -d "$BIN/kwok-stages" ]]; then
  log "building kwok $KWOK_VERSION"
  tmp=$(mktemp -d "$BIN/.build.XXXXXX")
  GOBIN="$tmp" go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  # kwok refuses to start without stages; they ship in its module.
  src="$(go env GOMODCACHE)/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage"
  mkdir -p "$tmp/kwok-stages"
  for s in node/fast node/heartbeat pod/fast; do
    for f in "$src/$s"/*.yaml; do
      [[ $(basename "$f") == kustomization.yaml ]] && continue
      cp "$f" "$tmp/kwok-stages/${s//\//-}-$(basename "$f")"
    done
  done
  chmod -R u+w "$tmp/kwok-stages"
  rm -rf "$BIN/kwok-stages"
  mv "$tmp/kwok" "$tmp/kwok-stages" "$BIN/"
  rmdir "$tmp"
fi

echo "$BIN"
