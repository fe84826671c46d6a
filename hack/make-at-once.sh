#!/usr/bin/env bash
# Runs make targets, each in a make of its own with its output in
# _output/make-test/TARGET.log, and reports each one as it ends: its output
# (unless it was streamed), then "make test: TARGET took N s, CPU M s" (or
# "failed after N s"). It fails if any target failed.
#
# The targets niced run beside all the others; the rest run in phases, in
# the order of the flags:
#   --nice T...        at a lower priority (nice 10), from the start to
#                      the end of the run: they take mostly what the others
#                      leave idle, and a tenth of a busy core. Not nice 19:
#                      starved there beside the end-to-end tests, a fuzzing
#                      worker gave no answer for over 10 s, which Go's
#                      fuzzing reports as a hang. Their output is shown
#                      when they end, between the other targets' outputs.
#   --one-by-one T...  a phase of targets one after another, each streaming
#                      its output; the first that fails ends the run (and
#                      stops the niced).
#   --at-once T...     a phase of targets all at once (the default for
#                      targets before any flag), reported as each ends; the
#                      next phase starts once they all have, unless one
#                      failed, which ends the run. Given one target and
#                      nothing else, it streams that target's output as it
#                      comes.
#
# make test runs its checks one by one; then the end-to-end tests, the
# demo, the admission property tests and the build of the unit tests'
# dependencies under the race detector at once; then the unit tests. The
# first three have a control plane each, and the end-to-end tests wait on
# leases, resyncs and API servers for minutes with part of a core idle,
# which the build takes (niced by its own recipe, TEST_BUILD_NICE); the unit
# tests then run on their own. The fuzzing runs niced beside all of them,
# from the start: the steps one by one leave part of a core idle too, while
# they link, start test binaries and wait on tests that sleep. Only work
# with no deadline of its own can run niced: the end-to-end tests, the demo
# (which waits on canary steps that last seconds), the admission property
# test and the CRD install paths (whose API servers must be ready within
# 90 s) and the unit tests (leases, timeouts) keep the normal priority; the
# fuzzing and a build only compute.
#
# The CPU is the user and system time of the target's make and all it
# started and waited for (compilers, tests, control planes), from the
# shell's times; each target's is also added to _output/make-test/cpu as
# "TARGET SECONDS CPU", which make test sums at its end: on N cores a run
# can end no sooner than its CPU over N (docs/testing.md).
#
# Usage: hack/make-at-once.sh [--at-once] T... [--one-by-one T... | --at-once T... | --nice T...]...
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$ROOT/_output/make-test
mkdir -p "$out"

# phases[i] is "one_by_one T..." or "at_once T...", in the order given.
niced=() phases=() all=()
kind=at_once
for arg in "$@"; do
  case $arg in
    --nice) kind=niced ;;
    --one-by-one) kind=one_by_one; phases+=("$kind") ;;
    --at-once) kind=at_once; phases+=("$kind") ;;
    --*) echo "make-at-once: unknown flag $arg" >&2; exit 2 ;;
    *)
      all+=("$arg")
      if [[ $kind == niced ]]; then niced+=("$arg")
      elif (( ${#phases[@]} == 0 )); then phases+=("at_once $arg")
      else phases[-1]+=" $arg"
      fi ;;
  esac
done

# cpu FILE: the seconds of CPU in the second line of times' output (the
# children's user and system time, as "XmY.YYYs XmY.YYYs").
cpu() {
  awk 'NR == 2 {
      n = 0
      for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); n += t[1] * 60 + t[2] }
      printf "%.0f\n", n
    }' "$1"
}

declare -A target_of started streamed
# start TARGET HOW: runs the target's make in the background (HOW: niced,
# streamed or quiet). A niced make runs in a process group of its own (job
# control, set -m), so that the run can stop it and everything it started
# (stop); not in a session of its own, for a new session is a new
# autogroup of the kernel's scheduler, which shares the CPU with the others
# as equals whatever its nice. The subshell records its own end ($SECONDS
# counts from this script's start in it too): a niced target may end while
# another streams, and is reported after.
start() {
  local target=$1 how=$2
  started[$target]=$SECONDS
  [[ $how != niced ]] || set -m
  (
    rc=0
    case $how in
      niced) nice -n 10 make --no-print-directory -C "$ROOT" "$target" > "$out/$target.log" 2>&1 || rc=$? ;;
      streamed) make --no-print-directory -C "$ROOT" "$target" 2>&1 | tee "$out/$target.log" || rc=$? ;;
      *) make --no-print-directory -C "$ROOT" "$target" > "$out/$target.log" 2>&1 || rc=$? ;;
    esac
    # times in this subshell itself: the make and all it waited for.
    times > "$out/$target.times"
    echo "$SECONDS" > "$out/$target.end"
    exit "$rc"
  ) &
  set +m
  target_of[$!]=$target
  [[ $how != streamed ]] || streamed[$target]=1
}

# report PID [RC]: reports that target, waiting for it to end unless its
# exit status RC is given (wait -n has reaped it).
status=0
report() {
  local pid=$1 rc=${2:-0} target seconds used
  [[ $# == 2 ]] || wait "$pid" || rc=$?
  target=${target_of[$pid]}
  unset "target_of[$pid]"
  [[ -n ${streamed[$target]:-} ]] || cat "$out/$target.log"
  seconds=$(( $(cat "$out/$target.end") - started[$target] ))
  used=$(cpu "$out/$target.times")
  echo "$target $seconds $used" >> "$out/cpu"
  if (( rc == 0 )); then
    echo "make test: $target took $seconds s, CPU $used s"
  else
    echo "make test: $target failed after $seconds s, CPU $used s" >&2
    status=1
  fi
}

# report_ended: reports the targets that have ended, without waiting.
report_ended() {
  local pid
  for pid in "${!target_of[@]}"; do
    [[ ! -e $out/${target_of[$pid]}.end ]] || report "$pid"
  done
}

# stop: ends the targets still running (a failed step, or the run
# interrupted): a niced one with its process group, the others with the
# processes they started.
stop() {
  local pid
  for pid in "${!target_of[@]}"; do
    kill -- -"$pid" 2> /dev/null || { pkill -P "$pid"; kill "$pid"; } 2> /dev/null || true
  done
}
trap stop EXIT
trap 'exit 130' INT TERM

for target in "${all[@]+"${all[@]}"}"; do
  rm -f "$out/$target.end" "$out/$target.times"
done
for target in "${niced[@]+"${niced[@]}"}"; do start "$target" niced; done

# wait_for TARGET...: reports the targets as they end (wait -n -p: bash
# 5.1), the niced among them, until none of TARGET runs.
wait_for() {
  local pid rc ended running
  while :; do
    running=0
    for pid in "${!target_of[@]}"; do
      [[ " $* " != *" ${target_of[$pid]} "* ]] || running=1
    done
    (( running )) || return 0
    rc=0
    wait -n -p ended "${!target_of[@]}" || rc=$?
    report "$ended" "$rc"
  done
}

how=quiet
(( ${#all[@]} != 1 )) || how=streamed
for phase in "${phases[@]+"${phases[@]}"}"; do
  read -r -a targets <<< "$phase"
  kind=${targets[0]} targets=("${targets[@]:1}")
  (( ${#targets[@]} )) || continue
  if [[ $kind == one_by_one ]]; then
    for target in "${targets[@]}"; do
      start "$target" streamed
      report "$!"
      report_ended
      (( status == 0 )) || exit 1
    done
  else
    for target in "${targets[@]}"; do start "$target" "$how"; done
    wait_for "${targets[@]}"
    (( status == 0 )) || exit 1
  fi
done

# The niced, reported as each ends.
wait_for "${niced[@]+"${niced[@]}"}"
exit "$status"
