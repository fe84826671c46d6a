#!/usr/bin/env bash
# Runs make targets at once, each in a make of its own with its output in
# _output/make-test/TARGET.log, and prints each one's output when it ends,
# then "make test: TARGET took N s" (or "failed after N s"), as make test
# does for the steps it runs one by one. It waits for all of them and fails
# if any failed.
#
# make test runs its last steps this way: each has a control plane of its
# own, and the end-to-end tests wait on leases, resyncs and API servers for
# minutes with part of a core idle. The targets after --nice run at a lower
# priority (nice 10): they take what the others leave idle and never slow
# them. Only a target with no deadline of its own can run so: the
# end-to-end tests, the demo (which waits on canary steps that last
# seconds) and the admission property test (whose API server must be ready
# within 90 s) keep the normal priority; the fuzzing only computes.
#
# Usage: hack/make-at-once.sh TARGET... [--nice TARGET...]
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$ROOT/_output/make-test
mkdir -p "$out"

declare -A target_of started
priority=()
for target in "$@"; do
  if [[ $target == --nice ]]; then
    priority=(nice -n 10)
    continue
  fi
  started[$target]=$SECONDS
  ${priority[@]+"${priority[@]}"} make --no-print-directory -C "$ROOT" "$target" > "$out/$target.log" 2>&1 &
  target_of[$!]=$target
done

# Each is reported as it ends (wait -n -p: bash 5.1).
status=0
while (( ${#target_of[@]} )); do
  rc=0
  wait -n -p ended "${!target_of[@]}" || rc=$?
  target=${target_of[$ended]}
  unset "target_of[$ended]"
  cat "$out/$target.log"
  if (( rc == 0 )); then
    echo "make test: $target took $((SECONDS - started[$target])) s"
  else
    echo "make test: $target failed after $((SECONDS - started[$target])) s" >&2
    status=1
  fi
done
exit "$status"
