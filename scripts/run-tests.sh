#!/usr/bin/env bash
# `make test`'s runner: builds the tests once, then runs the suite as two XCTest processes side by side.
#
# One build, release: the test bundle and the binaries users get (recd, recctl, recd-media: the
# package's, which link the Swift runtime in; Package.swift's `staticRuntime`), so the tests drive the
# optimized daemon and PackageTests packs the same binaries instead of compiling a second time. (A
# debug build of the tests and a release build of the package took about 1,580 of the suite's 3,189
# CPU seconds on 2 cores, and the debug build, emulated, was too slow for the power cuts: testing.md.)
# RECD_TEST_CONFIGURATION=debug builds and runs the tests unoptimized (quicker to rebuild after a
# change; the package is still the release build, compiled beside the tests).
#
# Why two: most of the suite waits (paced audio plays in real time, daemons start and stop), while a
# few classes keep a core busy for minutes (QEMU emulating a machine, the package's second build). On
# two cores, the busy classes in one process and the waiting ones in the other take the time of the
# longer half instead of the sum. They share nothing: each test has its own data directory, socket,
# PulseAudio and VM disk, and no test looks at processes it did not start.
#
#   RECD_TEST_JOBS=1   one process, every class in order (what the suite did before)
#   RECD_TEST_FILTER=… only the classes or tests matching (XCTest's --filter), in one process
#
# Each half's output goes to .build/test-logs/ as it runs, and is printed whole at the end (first the
# waiting half, then the busy one), then a summary; the exit status is non-zero if either half failed.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
swift=${SWIFT:-swift}

begun=$(date +%s)
config=${RECD_TEST_CONFIGURATION:-release}
$swift build -c "$config" --build-tests || exit 1

run=("$swift" test -c "$config" --skip-build --disable-swift-testing)
if [ -n "${RECD_TEST_FILTER:-}" ]; then
  exec "${run[@]}" --filter "$RECD_TEST_FILTER"
fi
if [ "${RECD_TEST_JOBS:-2}" = 1 ]; then
  exec "${run[@]}"
fi

# The halves run the test bundle itself: two `swift test` would take turns (SwiftPM locks .build).
xctest="$($swift build -c "$config" --show-bin-path)/recdPackageTests.xctest"
# The classes that keep a core busy: QEMU guests (TCG here), the package's clean root (its packing runs
# beside the halves, below), schemathesis generating requests and Whisper: chosen so that the halves
# end about together (BackupTests, TrimRecordingTests, WebAppTranscriptTests, TranscriptTests,
# MarkerTests, LevelMatchedPlaybackTests, ListenTests, EnhanceTests and MediaWorkerTests are here for
# that balance: in a fresh-clone run about 137 s, 36 s, 33 s, 66 s, 44 s, 30 s, 65 s, 82 s and 87 s).
busy_classes='PackageTests|PowerCutTests|VideoTests|KernelDriverTests|SystemdTests|FuzzTests|BackupTests|TrimRecordingTests|WebAppTranscriptTests|TranscriptTests|MarkerTests|LevelMatchedPlaybackTests|ListenTests|EnhanceTests|MediaWorkerTests'
# Of those, the guests that capture in real time (a camera at 15 fps, ALSA formats with a stalled
# converter) run first and alone: the other half starts once they are done. Beside even its light
# classes, CI's guests fell behind real time (a camera missed 19 frames of 110; an ALSA take lost
# 1.6 s of 17 to rings that filled while its encoder waited), and under three CPU hogs half of a take's
# frames were lost. The other half had slack: in a fresh-clone run the guests took 443 s alone, and the
# halves then ended at 1947 s (this one, now the longer) and 1906 s.
real_time='VideoTests|KernelDriverTests'
classes=$("$xctest" --list-tests | sed -n 's|^\([A-Za-z0-9_]*\.[A-Za-z0-9_]*\)/.*|\1|p' | uniq)
busy_first=$(echo "$classes" | grep -E "\.($real_time)\$" | paste -sd, -)
# Then the classes that need no guest, while the package is built; then PackageTests (which waits for
# that build) and the other guests, once it is done: the power cuts run the package's binaries.
after_build='PackageTests|PowerCutTests|SystemdTests'
# BackupTests last, once the package is made: restic, at nice 19 as the package's compile was, took
# 289 s beside it in CI against 111 s alone.
after_all='BackupTests'
busy=$(echo "$classes" | grep -E "\.($busy_classes)\$" | grep -vE "\.($real_time|$after_build|$after_all)\$" | paste -sd, -)
# PackageTests and the power cuts in one run, then the user unit's guest: the light half's heavy classes
# (below) wait for the first to end.
busy_cuts=$(echo "$classes" | grep -E "\.(PackageTests|PowerCutTests)\$" | paste -sd, -)
busy_unit=$(echo "$classes" | grep -E "\.($after_build)\$" | grep -vE "\.(PackageTests|PowerCutTests)\$" | paste -sd, -)
busy_after=$(echo "$classes" | grep -E "\.($after_all)\$" | paste -sd, -)
# The other half's classes that keep a core busy themselves (a load test, a 50,000-row repair, twenty
# kill -9 restarts, deletes of hundreds of files) run after the rest of it, once the real-time guests are
# done: beside them, CI saw the guest's aplay underrun (a 440 Hz tone measured at 383) and a camera's
# frames come late enough to turn 15 fps into 15000/1001. And not beside the power cuts: in CI a
# 50,000-row repair (BlockingWorkTests) beside a power-cut round left its emulated encoder below real
# time (the start's catch-up timed out, 57,200 frames dropped) and the cut lost 7.2 s (seed 926486206).
# They wait for the power cuts' run to end (`cuts_done`); it ended about when the rest of this half did.
heavy_light='ClientTests|BlockingWorkTests|CrashTests|DeletionTests'
waiting=$(echo "$classes" | grep -vE "\.($busy_classes)\$" | grep -vE "\.($heavy_light)\$" | paste -sd, -)
waiting_last=$(echo "$classes" | grep -vE "\.($busy_classes)\$" | grep -E "\.($heavy_light)\$" | paste -sd, -)
[ -n "$busy_first" ] && [ -n "$busy" ] && [ -n "$busy_cuts" ] && [ -n "$busy_unit" ] && [ -n "$busy_after" ] && [ -n "$waiting" ] && [ -n "$waiting_last" ] || { echo "run-tests: no tests listed by $xctest" >&2; exit 1; }

logs="$root/.build/test-logs"
mkdir -p "$logs"
started=$(date +%s)
# PackageTests' package — the release build users get, built above — is packed once the real-time
# guests are done, at nice 19, beside the halves (its man pages' generator is compiled, and dpkg-deb
# compresses 150 MB). PackageTests waits for it (RECD_TEST_DEB_STATUS) and installs what it made;
# PowerCutTests and the user unit's guest unpack it and run its binaries.
deb_out="$root/.build/test-deb"
rm -rf "$deb_out"; mkdir -p "$deb_out"
export RECD_TEST_DEB_STATUS="$deb_out/status" RECD_TEST_DEB_LOG="$logs/deb-build.log"
build_package() {
  RECD_DEB_OUT="$deb_out" RECD_DEB_NICE=19 scripts/build-deb.sh > "$RECD_TEST_DEB_LOG" 2>&1
  echo $? > "$RECD_TEST_DEB_STATUS.part" && mv "$RECD_TEST_DEB_STATUS.part" "$RECD_TEST_DEB_STATUS"
}
busy_pid='' waiting_pid=''
# Ctrl-C or CI's stop ends both halves (and the daemons their tests started, through their own clean-up).
interrupted=''
trap 'interrupted=1; kill -INT $busy_pid $waiting_pid 2>/dev/null; pkill -f "$root/scripts/build-deb.sh" 2>/dev/null; wait' INT TERM
# XCTest runs a filter's classes in its own order: runs one after the other set ours. The
# real-time guests run first, alone, at a higher priority (nice -5, where allowed: root, as in CI), so
# that QEMU keeps up (CI saw a guest's aplay underrun beside the other half's tests). In the
# background and waited for, so that Ctrl-C or CI's stop reaches the trap at once.
nice -n -5 "$xctest" "$busy_first" > "$logs/busy.log" 2>&1 & busy_pid=$!
wait $busy_pid; first=$?
[ -z "$interrupted" ] || { cat "$logs/busy.log"; exit 130; }
cuts_done="$logs/power-cuts.done"
rm -f "$cuts_done"
( build_package & build=$!
  "$xctest" "$busy"; rest=$?
  "$xctest" "$busy_cuts"; cuts=$?
  : > "$cuts_done"
  "$xctest" "$busy_unit"; unit=$?
  wait $build
  "$xctest" "$busy_after"; after=$?
  times > "$logs/busy.times"
  [ $first = 0 ] && [ $rest = 0 ] && [ $cuts = 0 ] && [ $unit = 0 ] && [ $after = 0 ] ) >> "$logs/busy.log" 2>&1 &
busy_pid=$!
( "$xctest" "$waiting"; first=$?
  while [ ! -e "$cuts_done" ] && kill -0 "$busy_pid" 2>/dev/null; do sleep 2; done
  "$xctest" "$waiting_last"; rest=$?; times > "$logs/waiting.times"
  [ $first = 0 ] && [ $rest = 0 ] ) > "$logs/waiting.log" 2>&1 &
waiting_pid=$!
wait $waiting_pid; waiting_status=$?
wait $busy_pid; busy_status=$?

for half in waiting busy; do
  echo "=== $half half (.build/test-logs/$half.log) ==="
  cat "$logs/$half.log"
done
echo "=== summary: $(( $(date +%s) - started )) s for both halves ==="
# The CPU the run used (the build, the tests and what they started and waited for: bash's `times`,
# its children's line, user and sys), against what the machine's cores could give in that time: how
# far the suite's time is CPU-bound.
times > "$logs/all.times"
cpu() { tail -1 "$logs/$1.times" | awk '{ s = 0; for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); s += t[1] * 60 + t[2] } printf "%d", s }'; }
echo "CPU: $(cpu all) s used over $(( $(date +%s) - begun )) s on $(nproc) cores (the busy half $(cpu busy) s with the package's packing, the waiting half $(cpu waiting) s; the rest is the build and the real-time guests)"
for half in waiting busy; do
  # Each run's total follows its "Selected tests" line (the busy half has five runs, the light two).
  grep -A1 "Test Suite 'Selected tests'" "$logs/$half.log" | grep -E "Executed [0-9]+ tests?," | sed "s/^[[:space:]]*/$half: /"
  # A failed test prints "error:"; a test that crashes the process prints Swift's trap and the crash.
  grep -E "error: |: error -|failed \(|Fatal error|Precondition failed|Program crashed" "$logs/$half.log" || true
done
[ "$waiting_status" = 0 ] && [ "$busy_status" = 0 ]
