#!/usr/bin/env bash
# Regenerates everything derived from the API types in pkg/apis:
#   - deepcopy functions (zz_generated.deepcopy.go),
#   - the typed clientset, listers, informers and apply configurations
#     under pkg/generated (k8s.io/code-generator's kube_codegen.sh),
#   - the CRD artifacts/examples/crd.yaml (controller-gen, from the markers,
#     and kustomize, with the patches in config/crd).
# The generators come from the module cache at the versions pinned in go.mod;
# no vendor directory or sibling checkout of code-generator is needed.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

MODULE=$(go list -m)
go mod download k8s.io/code-generator
CODEGEN_PKG=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)

# kube_codegen.sh `go install`s its generators into GOBIN; keep them out of
# the user's GOPATH/bin, beside the rest of the project's cached tools.
GOBIN="${APPSERVICE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/appservice-controller}/codegen-$(go list -m -f '{{.Version}}' k8s.io/code-generator)"
export GOBIN
mkdir -p "$GOBIN"

# shellcheck source=/dev/null
source "$CODEGEN_PKG/kube_codegen.sh"

kube::codegen::gen_helpers \
  --boilerplate "$ROOT/hack/boilerplate.go.txt" \
  "$ROOT/pkg/apis"

kube::codegen::gen_client \
  --with-watch \
  --with-applyconfig \
  --output-dir "$ROOT/pkg/generated" \
  --output-pkg "$MODULE/pkg/generated" \
  --boilerplate "$ROOT/hack/boilerplate.go.txt" \
  "$ROOT/pkg/apis"

# The CRD: structural schema, validation, defaults, subresources and printer
# columns come from the markers in pkg/apis/app/v1/types.go (controller-gen,
# into config/crd/bases); config/crd/patches adds the bounds of the embedded
# core/v1 fields that markers cannot reach (kustomize).
go tool controller-gen crd:crdVersions=v1 paths=./pkg/apis/... output:crd:dir=config/crd/bases
# The CRD as installed: controller-gen's output with config/crd's patches,
# and without the descriptions nested in core/v1 types (see hack/crdtrim).
go tool kustomize build config/crd | go run ./hack/crdtrim > artifacts/examples/crd.yaml.tmp
mv artifacts/examples/crd.yaml.tmp artifacts/examples/crd.yaml
# The Activity's CRD is small and has no patches: controller-gen's output as
# it is, beside the AppService's (applied first: crd-activity.yaml sorts
# before the examples that use it).
cp config/crd/bases/app.example.com_activities.yaml artifacts/examples/crd-activity.yaml
