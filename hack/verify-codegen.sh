#!/usr/bin/env bash
# Fails when anything hack/update-codegen.sh generates is stale: it runs the
# generators on a scratch copy of this repository and compares the results.
# Works in this repository on its own; the work tree is not modified.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT

# Copy the files git knows of (tracked, or new and not ignored), so that what
# is compared is what would be committed.
cd "$ROOT"
git ls-files --cached --others --exclude-standard -z \
  | while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done \
  | xargs -0 cp --parents -t "$SCRATCH"

"$SCRATCH/hack/update-codegen.sh" >/dev/null

GENERATED=(pkg/apis pkg/generated config/crd/bases artifacts/examples/crd.yaml artifacts/examples/crd-activity.yaml artifacts/examples/crd-analysistemplate.yaml artifacts/examples/crd-clusteranalysistemplate.yaml artifacts/examples/crd-notificationdestination.yaml
  artifacts/components/prometheus-rule/prometheusrule.yaml artifacts/components/grafana-dashboard/dashboard.json
  charts/appservice-controller/files)
status=0
for g in "${GENERATED[@]}"; do
  if ! diff -Nru "$ROOT/$g" "$SCRATCH/$g"; then
    status=1
  fi
done
if (( status )); then
  echo "Generated files are out of date: run ./hack/update-codegen.sh and commit the result." >&2
  exit 1
fi
echo "Generated files are up to date."
