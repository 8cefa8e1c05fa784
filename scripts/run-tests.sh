#!/usr/bin/env bash
# `make test`'s runner: builds the tests once, then runs the suite's classes in three processes side by side.
#
# One build, release: the test bundle and the binaries users get (recd, recctl, recd-media: the
# package's, which link the Swift runtime in; Package.swift's `staticRuntime`), so the tests drive the
# optimized daemon and PackageTests packs the same binaries instead of compiling a second time
# (decision 0026). RECD_TEST_CONFIGURATION=debug builds and runs the tests unoptimized (quicker to
# rebuild after a change).
#
# Why side by side: most of the suite waits (paced audio plays in real time, daemons start and stop,
# browsers load pages); a fresh-clone run in one process kept its 2 cores a quarter busy. So:
#   1. the guests that capture in real time (a camera at 15 fps, ALSA formats with a stalled converter)
#      run first and alone: beside even light classes, CI's emulated guests fell behind real time (a
#      camera missed 19 frames of 110; an ALSA take lost 1.6 s of 17 while its encoder waited);
#   2. then the busy lane runs the classes that keep a core busy in a fixed order (the API fuzzing
#      while the package is packed; the package's clean root and the power cuts; the user unit's
#      guest; restic), and 2 light lanes (RECD_TEST_LANES) take the other classes from a shared queue,
#      longest first, one `xctest` process per class; the busy lane joins them when its list is done.
#   3. the light classes that keep a core busy themselves (a load test, a 50,000-row repair, twenty
#      kill -9 restarts, deletes of hundreds of files) wait for the power cuts to end, and run one at a
#      time: beside a power-cut round, a 50,000-row repair left the emulated encoder below real time
#      and the cut lost 7.2 s (seed 926486206).
# They share nothing: each test has its own data directory, socket, PulseAudio and VM disk, and no
# test looks at processes it did not start. (Four lanes beside the guests made the machine 2.00 cores
# busy and starved the power cuts: testing.md.)
#
#   RECD_TEST_JOBS=1   one process, every class in order
#   RECD_TEST_FILTER=… only the classes or tests matching (XCTest's --filter), in one process
#   RECD_TEST_LANES=N  light lanes beside the busy one (default 2)
#
# Each lane's output goes to .build/test-logs/ as it runs, and is printed whole at the end, then a
# summary; the exit status is non-zero if any class failed.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
swift=${SWIFT:-swift}

begun=$(date +%s)
config=${RECD_TEST_CONFIGURATION:-release}
logs="$root/.build/test-logs"
rm -rf "$logs"; mkdir -p "$logs"
# The VMs' boot files, and the Debian packages they and QEMU come from, while the build compiles: on a
# fresh machine installing them took 50 s of the first guest's time. (The guests' tests make them
# themselves when run alone; a failure here shows there again.)
if [ -z "${RECD_TEST_FILTER:-}" ]; then
  ( . scripts/vm/vm-lib.sh && vm_need_packages qemu-system-x86 && scripts/vm/build-vm-image.sh ) > "$logs/vm-image.log" 2>&1 &
  vm_image=$!
fi
$swift build -c "$config" --build-tests || exit 1
[ -z "${vm_image:-}" ] || wait "$vm_image"

run=("$swift" test -c "$config" --skip-build --disable-swift-testing)
if [ -n "${RECD_TEST_FILTER:-}" ]; then
  exec "${run[@]}" --filter "$RECD_TEST_FILTER"
fi
if [ "${RECD_TEST_JOBS:-2}" = 1 ]; then
  exec "${run[@]}"
fi
lanes=${RECD_TEST_LANES:-2}

# The lanes run the test bundle itself: several `swift test` would take turns (SwiftPM locks .build).
xctest="$($swift build -c "$config" --show-bin-path)/recdPackageTests.xctest"
classes=$("$xctest" --list-tests | sed -n 's|^\([A-Za-z0-9_]*\.[A-Za-z0-9_]*\)/.*|\1|p' | uniq)
pick() { echo "$classes" | grep -E "\.($1)\$" | paste -sd, -; }
real_time_names='VideoTests|KernelDriverTests'
real_time=$(pick "$real_time_names")
# The busy lane's list, in order. Its runs: the fuzzing while the package is packed; the package's clean
# root and the power cuts (they run its binaries), then `cuts_done`; the user unit's guest; restic last,
# once the package is made (at nice 19 beside the package's compile it took 289 s against 111 s alone).
busy_runs=("$(pick FuzzTests)" "$(pick 'PackageTests|PowerCutTests')" cuts_done "$(pick SystemdTests)" package_made "$(pick BackupTests)")
# The light classes that keep a core busy themselves, the longest first (heavy_lines: their queue).
heavy='ClientTests DeletionTests CrashTests BlockingWorkTests'
busy_classes="$real_time_names|FuzzTests|PackageTests|PowerCutTests|SystemdTests|BackupTests|${heavy// /|}"
# The light queue, one class a line (the unit tests as one: a process each would cost more than they
# take), the longest first (as measured in a fresh-clone run) so that the lanes end about together.
longest='WebAppTests|RecordingTests|MediaWorkerTests|RecordScreenTests|MeterEventTests|EnhanceTests|PlaybackTests|DaemonTests|TranscriptTests|ListenTests'
light=$(echo "$classes" | grep -vE "\.($busy_classes)\$")
queue_lines() {
  for name in ${longest//|/ }; do echo "$light" | grep -E "\.$name\$"; done
  echo "$light" | grep '^RecdUnitTests\.' | paste -sd, -
  echo "$light" | grep -vE "\.($longest)\$" | grep -v '^RecdUnitTests\.'
}
heavy_lines() { for name in $heavy; do echo "$classes" | grep -E "\.$name\$"; done; }
[ -n "$real_time" ] && [ -n "$light" ] && [ -n "$(heavy_lines)" ] && ! printf '%s\n' "${busy_runs[@]}" | grep -qx '' ||
  { echo "run-tests: no tests listed by $xctest" >&2; exit 1; }

queue=$logs/queue heavy_queue=$logs/queue-heavy cuts_done=$logs/power-cuts.done
queue_lines | grep . > "$queue"
heavy_lines > "$heavy_queue"
started=$(date +%s)
# PackageTests' package — the release build users get, built above — is packed once the real-time
# guests are done, beside the lanes (its man pages' generator is compiled, and dpkg-deb compresses
# 150 MB). PackageTests waits for it (RECD_TEST_DEB_STATUS) and installs what it made; PowerCutTests
# and the user unit's guest unpack it and run its binaries.
deb_out="$root/.build/test-deb"
rm -rf "$deb_out"; mkdir -p "$deb_out"
export RECD_TEST_DEB_STATUS="$deb_out/status" RECD_TEST_DEB_LOG="$logs/deb-build.log"
build_package() {
  RECD_DEB_OUT="$deb_out" RECD_DEB_NICE=19 scripts/build-deb.sh > "$RECD_TEST_DEB_LOG" 2>&1
  echo $? > "$RECD_TEST_DEB_STATUS.part" && mv "$RECD_TEST_DEB_STATUS.part" "$RECD_TEST_DEB_STATUS"
}

# pop QUEUE: the queue's first line, removed (under the queue's lock: lanes share it).
pop() {
  local lock next
  exec {lock}> "$1.lock"
  flock "$lock"
  next=$(head -n 1 "$1")
  [ -z "$next" ] || sed -i 1d "$1"
  exec {lock}>&-
  printf '%s' "$next"
}
# run_heavy [-n]: the next heavy class, under heavy.lock (one at a time; -n: only if none runs); false
# if it ran none. A failure sets the calling lane's `status`.
run_heavy() {
  local lock class=''
  exec {lock}> "$logs/heavy.lock"
  flock "$@" "$lock" && class=$(pop "$heavy_queue")
  [ -z "$class" ] || "$xctest" "$class" {lock}>&- || status=1
  exec {lock}>&-
  [ -n "$class" ]
}
# lane: runs classes from the queues until both are empty: a heavy one when the power cuts are done and
# none runs, else a light one; when only heavy ones are left, it waits for the cuts (or for the busy
# lane's end, if it died before them), then for its turn.
lane() {
  local status=0 class
  while :; do
    [ -e "$cuts_done" ] && run_heavy -n && continue
    class=$(pop "$queue")
    if [ -n "$class" ]; then "$xctest" "$class" || status=1; continue; fi
    [ -s "$heavy_queue" ] || break
    if [ ! -e "$cuts_done" ]; then
      kill -0 "$busy_pid" 2>/dev/null || : > "$cuts_done"
      sleep 2; continue
    fi
    run_heavy
  done
  return $status
}

lane_pids=() busy_pid=''
# Ctrl-C or CI's stop ends every lane (and the daemons their tests started, through their own clean-up).
interrupted=''
trap 'interrupted=1; : > "$queue"; : > "$heavy_queue"; pkill -INT -f "^$xctest" 2>/dev/null; pkill -f "$root/scripts/build-deb.sh" 2>/dev/null; wait' INT TERM
# The real-time guests first, alone, at a higher priority (nice -5, where allowed: root, as in CI), so
# that QEMU keeps up. In the background and waited for, so that Ctrl-C or CI's stop reaches the trap at once.
nice -n -5 "$xctest" "$real_time" > "$logs/busy.log" 2>&1 & busy_pid=$!
wait $busy_pid; first=$?
[ -z "$interrupted" ] || { cat "$logs/busy.log"; exit 130; }
( build_package & build=$!
  status=$first
  for run in "${busy_runs[@]}"; do
    case $run in
      cuts_done) : > "$cuts_done" ;;
      package_made) wait $build ;;
      *) "$xctest" "$run" || status=1 ;;
    esac
  done
  lane || status=1
  times > "$logs/busy.times"
  exit $status ) >> "$logs/busy.log" 2>&1 &
busy_pid=$!
for n in $(seq "$lanes"); do
  ( lane; status=$?; times > "$logs/lane-$n.times"; exit $status ) > "$logs/lane-$n.log" 2>&1 &
  lane_pids+=($!)
done
status=0
for pid in "${lane_pids[@]}" "$busy_pid"; do wait "$pid" || status=1; done

names=(busy); for n in $(seq "$lanes"); do names+=("lane-$n"); done
for name in "${names[@]}"; do
  echo "=== $name (.build/test-logs/$name.log) ==="
  cat "$logs/$name.log"
done
echo "=== summary: $(( $(date +%s) - started )) s for the lanes, the real-time guests included ==="
# The CPU the run used (the build, the tests and what they started and waited for: bash's `times`,
# its children's line, user and sys), against what the machine's cores could give in that time: how
# far the suite's time is CPU-bound.
times > "$logs/all.times"
cpu() { tail -1 "$logs/$1.times" | awk '{ s = 0; for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); s += t[1] * 60 + t[2] } printf "%d", s }'; }
per_lane=$(for name in "${names[@]}"; do printf '%s %s s, ' "$name" "$(cpu "$name")"; done)
echo "CPU: $(cpu all) s used over $(( $(date +%s) - begun )) s on $(nproc) cores (${per_lane%, }; the rest is the build and the real-time guests)"
for name in "${names[@]}"; do
  # Each run's total follows its "Selected tests" line; a lane's are added up.
  grep -A1 "Test Suite 'Selected tests'" "$logs/$name.log" | grep -E "Executed [0-9]+ tests?," |
    awk -v lane="$name" '{ runs++; tests += $2; failures += $5; for (i = 1; i <= NF; i++) if ($i == "in") seconds += $(i + 1) }
      END { printf "%s: %d runs, %d tests, %d failures, %.0f s of tests\n", lane, runs, tests, failures, seconds }'
  # A failed test prints "error:"; a test that crashes the process prints Swift's trap and the crash.
  grep -E "error: |: error -|failed \(|Fatal error|Precondition failed|Program crashed" "$logs/$name.log" || true
done
[ -s "$queue" ] || [ -s "$heavy_queue" ] && { echo "run-tests: classes left unrun: $(cat "$queue" "$heavy_queue" | paste -sd' ')" >&2; status=1; }
exit $status
