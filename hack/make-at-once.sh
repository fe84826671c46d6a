#!/usr/bin/env bash
# Runs make targets at once, each in a make of its own with its output in
# _output/make-test/TARGET.log, and prints each one's output when it ends,
# then "make test: TARGET took N s, CPU M s" (or "failed after N s"). It
# waits for all of them and fails if any failed. Given one target, it
# streams that target's output as it comes: make test runs its first steps
# one by one so.
#
# The CPU is the user and system time of the target's make and all it
# started and waited for (compilers, tests, control planes), from the
# shell's times; each target's is also added to _output/make-test/cpu as
# "TARGET SECONDS CPU", which make test sums at its end: on N cores a run
# can end no sooner than its CPU over N (docs/testing.md).
#
# make test runs its last steps at once: each has a control plane of its
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

# cpu FILE: the seconds of CPU in the second line of times' output (the
# children's user and system time, as "XmY.YYYs XmY.YYYs").
cpu() {
  awk 'NR == 2 {
      n = 0
      for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); n += t[1] * 60 + t[2] }
      printf "%.0f\n", n
    }' "$1"
}

targets=0
for target in "$@"; do [[ $target == --nice ]] || targets=$((targets + 1)); done
stream=false
(( targets != 1 )) || stream=true

declare -A target_of started
priority=()
for target in "$@"; do
  if [[ $target == --nice ]]; then
    priority=(nice -n 10)
    continue
  fi
  started[$target]=$SECONDS
  (
    rc=0
    if $stream; then
      ${priority[@]+"${priority[@]}"} make --no-print-directory -C "$ROOT" "$target" 2>&1 | tee "$out/$target.log" || rc=$?
    else
      ${priority[@]+"${priority[@]}"} make --no-print-directory -C "$ROOT" "$target" > "$out/$target.log" 2>&1 || rc=$?
    fi
    # times in this subshell itself: the make and all it waited for.
    times > "$out/$target.times"
    exit "$rc"
  ) &
  target_of[$!]=$target
done

# Each is reported as it ends (wait -n -p: bash 5.1).
status=0
while (( ${#target_of[@]} )); do
  rc=0
  wait -n -p ended "${!target_of[@]}" || rc=$?
  target=${target_of[$ended]}
  unset "target_of[$ended]"
  $stream || cat "$out/$target.log"
  seconds=$((SECONDS - started[$target]))
  used=$(cpu "$out/$target.times")
  echo "$target $seconds $used" >> "$out/cpu"
  if (( rc == 0 )); then
    echo "make test: $target took $seconds s, CPU $used s"
  else
    echo "make test: $target failed after $seconds s, CPU $used s" >&2
    status=1
  fi
done
exit "$status"
