#!/usr/bin/env bash
# Builds the generators hack/update-codegen.sh runs, at the versions go.mod
# pins, and prints the folder that holds code-generator's:
#   - code-generator's (deepcopy-gen, client-gen, lister-gen, informer-gen,
#     applyconfiguration-gen and the others kube_codegen.sh installs), with
#     `go install` from code-generator's own module as kube_codegen.sh does,
#     into a folder of the tools' cache keyed by the version;
#   - controller-gen and kustomize, go.mod's tools, into the build cache,
#     where `go tool` finds them.
# On 2 cores that is about a minute the first time, nothing later:
# kube_codegen.sh's own `go install` and `go tool` then only check them.
# .ci/run calls it before `make test`, as it calls hack/ensure-lint.sh, so a
# new machine's `make test` times its checks, not the tools' builds.
#
# Usage: hack/ensure-codegen.sh         build what is missing, print the folder
#        APPSERVICE_CACHE=/path ...     use another cache root
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The Makefile's build settings: built with others, the generators would be
# built again by make verify (`go install` counts a binary built with other
# flags stale, and `go tool` caches a build under the flags it had).
source "$ROOT/hack/build-env.sh"
cd "$ROOT"

go mod download k8s.io/code-generator
CODEGEN_PKG=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
CACHE=${APPSERVICE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/appservice-controller}
GOBIN="$CACHE/codegen-$(go list -m -f '{{.Version}}' k8s.io/code-generator)"
export GOBIN
mkdir -p "$GOBIN"

# The generators kube_codegen.sh's gen_helpers, gen_client and
# gen_register install, built the way it builds them.
( cd "$CODEGEN_PKG" && GO111MODULE=on go install \
    k8s.io/code-generator/cmd/{conversion-gen,deepcopy-gen,defaulter-gen,validation-gen,applyconfiguration-gen,client-gen,informer-gen,lister-gen,register-gen} ) >&2
go tool -n controller-gen > /dev/null
go tool -n kustomize > /dev/null
echo "$GOBIN"
