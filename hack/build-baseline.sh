#!/usr/bin/env bash
# Builds the controller of an earlier commit, for make bench's -baseline:
# the backlog runs under it beside the current controller, in the same
# turns, so that a regression shows apart from the machine's own drift
# (BENCHMARKS.md, "A regression that was the machine's drift"). Usage:
# hack/build-baseline.sh REV. Prints the binary's path, cached under
# _output/baseline by commit; prints nothing, and says why on stderr, when
# the checkout lacks REV (a shallow clone): make bench then runs without it.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source hack/build-env.sh

rev=${1:?usage: hack/build-baseline.sh REV}
if ! commit=$(git rev-parse --verify --quiet "$rev^{commit}"); then
  echo "build-baseline: $rev is not in this checkout's history (a shallow clone?): no baseline" >&2
  exit 0
fi
bin=$PWD/_output/baseline/appservice-controller-${commit:0:12}
if [[ ! -x $bin ]]; then
  tree=$(mktemp -d)
  trap 'git worktree remove --force "$tree"' EXIT
  git worktree add --detach --quiet "$tree" "$commit"
  echo "build-baseline: building the controller of ${commit:0:12}" >&2
  (cd "$tree" && go build -o "$bin" .) >&2
fi
echo "$bin"
