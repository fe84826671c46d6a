#!/usr/bin/env bash
# Runs the end-to-end tests (test/e2e) as three groups at once, each a
# process of the test binary with a control plane and a controller of its
# own:
#
#   serial-1,  the tests that must run alone (they stop or restart the
#   serial-2   controller, its API server or etcd, run a second replica on
#              its Lease, or count every write in the cluster), one after
#              the other, in the lane each names: two lanes of about the
#              same length, which wait on leases and resyncs more than they
#              compute;
#   parallel   every other test, side by side in namespaces of their own
#              (or on control planes of their own), E2E_PARALLEL at a time.
#
# Each test names its group with its first statement (serial(t, lane) or
# parallel(t); TestEveryTestHasAGroup checks). The test binary and the
# controller are built once, for all.
#
# Usage: hack/test-e2e.sh [-v] [go test flags for the binary, e.g. -test.run X]
#   -v                   stream the groups' verbose output, each line
#                        prefixed with its group; without it, a group's
#                        output is printed only when it fails
#   APPSERVICE_BIN_DIR   the control plane's binaries (else ensure-binaries.sh)
#   APPSERVICE_PROMETHEUS  the Prometheus server the tests of canary
#                        analysis run (else ensure-prometheus.sh)
#   APPSERVICE_CHROMIUM  the browser TestDashboard drives (else
#                        ensure-chromium.sh installs Debian's)
#   E2E_PARALLEL         tests of the parallel group at once (default 8)
#   E2E_LOAD             busy processes per core beside the tests (default
#                        0): a test that passes only on an idle machine
#                        fails here before it fails on a new machine
#                        (make test-e2e-loaded)
#   E2E_BUILD_LOAD       loops beside the tests (default 0) that each build
#                        the project from an empty Go cache, again and
#                        again: the compiler's CPU, memory and disk, the
#                        load of a new machine's make test (its fuzzing,
#                        demo and admission test compile while the e2e runs)
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

verbose=false
args=()
for a in "$@"; do
  case $a in
    -v | -test.v | -test.v=true) verbose=true ;;
    *) args+=("$a") ;;
  esac
done

APPSERVICE_BIN_DIR=${APPSERVICE_BIN_DIR:-$(./hack/ensure-binaries.sh)}
APPSERVICE_PROMETHEUS=${APPSERVICE_PROMETHEUS:-$(./hack/ensure-prometheus.sh)}
APPSERVICE_CHROMIUM=${APPSERVICE_CHROMIUM:-$(./hack/ensure-chromium.sh)}
export APPSERVICE_BIN_DIR APPSERVICE_PROMETHEUS APPSERVICE_CHROMIUM
out=$ROOT/_output/test-e2e
rm -rf "$out"
mkdir -p "$out"

# TEST_VET: make test sets -vet=off, its lint step having vetted the tests.
go test -c ${TEST_VET:-} -tags e2e -o "$out/e2e.test" ./test/e2e
# As users build it: make build stamps the version.
make --no-print-directory build BIN="$out/appservice-controller"
export APPSERVICE_CONTROLLER_BIN=$out/appservice-controller

# run GROUP FLAGS...: one process of the test binary, from its package's
# folder as go test runs it; its output in $out/GROUP.log.
run() {
  local group=$1; shift
  (
    cd test/e2e
    APPSERVICE_E2E_GROUP=$group "$out/e2e.test" -test.v -test.count=1 -test.timeout=40m "$@" ${args[@]+"${args[@]}"} 2>&1 |
      tee "$out/$group.log" |
      if $verbose; then sed -u "s/^/[$group] /"; else cat > /dev/null; fi
  )
}

# The load, once everything is built, at the tests' own priority, until
# the tests end: E2E_LOAD loops per core that only burn CPU, and
# E2E_BUILD_LOAD loops of cold builds, each in a process group of its own
# (setsid), so that its compilers end with it.
load=()
stop_load() { if (( ${#load[@]} )); then kill -- "${load[@]}" 2> /dev/null || true; fi; }
trap stop_load EXIT
for ((i = 0; i < ${E2E_LOAD:-0} * $(nproc); i++)); do
  ( while :; do :; done ) &
  load+=($!)
done
(( ${#load[@]} == 0 )) || echo "e2e: ${#load[@]} busy processes beside the tests (E2E_LOAD=$E2E_LOAD per core)"
for ((i = 0; i < ${E2E_BUILD_LOAD:-0}; i++)); do
  cache=$out/build-load-$i
  setsid bash -c 'while :; do rm -rf "$1"; GOCACHE=$1 go build -o /dev/null ./... > /dev/null 2>&1 || true; done' _ "$cache" &
  load+=("-$!")
done
(( ${E2E_BUILD_LOAD:-0} == 0 )) || echo "e2e: builds from an empty Go cache, in a loop, beside the tests (E2E_BUILD_LOAD=$E2E_BUILD_LOAD loops)"

start=$SECONDS
groups=(serial-1 serial-2 parallel)
declare -A pids
for group in "${groups[@]}"; do
  flags=()
  [[ $group != parallel ]] || flags=(-test.parallel="${E2E_PARALLEL:-8}")
  # Each group's time, from the shell's clock, for the summary.
  (
    s=$SECONDS
    rc=0
    run "$group" ${flags[@]+"${flags[@]}"} || rc=$?
    echo $((SECONDS - s)) > "$out/$group.seconds"
    # The CPU of the group's process and of all it started and waited for
    # (its control planes, controllers, Prometheus, browser): the second
    # line of times, its children's user and system time (times itself
    # in this shell: in a pipeline's subshell it would count none).
    times > "$out/$group.times"
    awk 'NR == 2 {
        n = 0
        for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); n += t[1] * 60 + t[2] }
        printf "%.0f\n", n
      }' "$out/$group.times" > "$out/$group.cpu"
    exit "$rc"
  ) &
  pids[$group]=$!
done
status=0
for group in "${groups[@]}"; do
  if wait "${pids[$group]}"; then
    echo "ok    e2e ($group group, $(cat "$out/$group.seconds") s): $(grep -cE '^--- PASS: ' "$out/$group.log") passed, $(grep -cE '^--- SKIP: ' "$out/$group.log") in the other groups"
  else
    status=1
    $verbose || cat "$out/$group.log"
    echo "FAIL  e2e ($group group, $(cat "$out/$group.seconds" 2> /dev/null) s): $(grep -E '^--- FAIL: ' "$out/$group.log" | tr '\n' ' ')"
  fi
done
echo "e2e: $((SECONDS - start)) s (all groups; logs in ${out#"$ROOT"/})"
# The CPU each group used, its processes and all they started: what the
# suite costs the machine, whatever runs beside it (docs/testing.md).
cpu=0
parts=()
for group in "${groups[@]}"; do
  c=$(cat "$out/$group.cpu" 2> /dev/null || echo 0)
  cpu=$((cpu + c))
  parts+=("$group $c s")
done
echo "e2e: CPU $cpu s ($(IFS=,; echo "${parts[*]}" | sed 's/,/, /g'))"
for group in "${groups[@]}"; do
  sed -n "s/^e2e group cpu: /e2e: $group's shared processes, seconds of CPU: /p" "$out/$group.log"
done
# The serial tests' own CPU (each runs alone on its group's control plane:
# the "cpu:" line it logs when it ends, test/e2e/cpu_test.go).
echo "e2e: the ten serial tests that used the most CPU"
for group in serial-1 serial-2; do cat "$out/$group.log"; done |
  awk '/^=== RUN   Test/ { split($3, name, "/"); cur = name[1] }
       / cpu: [0-9.]+ s / && cur != "" { for (i = 1; i <= NF; i++) if ($i == "cpu:") { sub(/^ +/, ""); sub(/^[^ ]+ cpu: /, ""); printf "%8.1f s  %s  %s\n", $0 + 0, cur, $0; break } }' |
  sed -E 's/  [0-9.]+ s \((.*)\)$/  (\1)/' | sort -rn | head -10
# The control planes tests start for themselves ("own control plane cpu:",
# when such a test ends), whatever their group.
echo "e2e: the control planes of tests' own"
for group in "${groups[@]}"; do cat "$out/$group.log"; done |
  awk '/^=== (RUN|CONT|NAME|PAUSE) / { split($3, name, "/"); cur = name[1]; next }
       / own control plane cpu: / && cur != "" { sub(/^.* own control plane cpu: /, ""); printf "%8.1f s  %s  %s\n", $0 + 0, cur, $0 }' |
  sed -E 's/  [0-9.]+ s \((.*)\)$/  (\1)/' | sort -rn
# The ten slowest tests, from go test's "--- PASS: TestX (12.34s)" lines. A
# test whose subtests run in parallel reports its own function's time only:
# it counts as long as its slowest subtest. Parallel tests overlap, so the
# times add up to more than the run.
echo "e2e: the ten slowest tests"
for group in "${groups[@]}"; do cat "$out/$group.log"; done |
  grep -hE '^ *--- (PASS|FAIL): Test' |
  sed -E 's/^ *--- (PASS|FAIL): ([^ /]+)[^ ]* \(([0-9.]+)s\)$/\2 \3 \1/' |
  awk '$2 > t[$1] {t[$1] = $2} $3 == "FAIL" {f[$1] = 1}
       END {for (n in t) printf "%8.1f s  %s%s\n", t[n], n, (n in f ? " (FAIL)" : "")}' |
  sort -rn | head -10
# Last, so that the tail of a long log shows it: what each failed test
# logged (its own lines of go test -v's output, which interleaves the
# parallel tests; a subtest's lines count as its test's), at most its last
# 40 lines.
for group in "${groups[@]}"; do
  awk '
    /^=== (RUN|CONT|NAME|PAUSE) / { split($3, name, "/"); cur = name[1]; next }
    /^ *--- FAIL: / { split($3, name, "/"); failed[name[1]] = 1; next }
    /^ *--- (PASS|SKIP): / { next }
    /^    / && cur != "" { n[cur]++; line[cur, n[cur]] = $0 }
    END {
      for (t in failed) {
        printf "e2e (%s group): what %s logged\n", group, t
        for (i = (n[t] > 40 ? n[t] - 39 : 1); i <= n[t]; i++) print line[t, i]
      }
    }' group="$group" "$out/$group.log"
done
exit "$status"
