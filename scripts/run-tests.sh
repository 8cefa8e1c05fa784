#!/usr/bin/env bash
# `make test`'s runner: builds the tests once, then runs the suite as several XCTest processes side by side.
#
# One build, release: the test bundle and the binaries users get (recd, recctl, recd-media: the
# package's, which link the Swift runtime in; Package.swift's `staticRuntime`), so the tests drive the
# optimized daemon and PackageTests packs the same binaries instead of compiling a second time. (A
# debug build of the tests and a release build of the package took about 1,580 of the suite's 3,189
# CPU seconds on 2 cores, and the debug build, emulated, was too slow for the power cuts: testing.md.)
# RECD_TEST_CONFIGURATION=debug builds and runs the tests unoptimized (quicker to rebuild after a
# change; the package is still the release build, compiled beside the tests).
#
# Why several: most of the suite waits (paced audio plays in real time, daemons start and stop), while
# a few classes keep a core busy for minutes (QEMU emulating a machine). The guests run one after the
# other in one process, the light classes in lanes beside it: the suite takes the time of the longest
# instead of the sum. They share nothing: each test has its own data directory, socket, PulseAudio and
# VM disk, and no test looks at processes it did not start.
#
#   RECD_TEST_JOBS=1   one process, every class in order (what the suite did before)
#   RECD_TEST_FILTER=… only the classes or tests matching (XCTest's --filter), in one process
#
# Each process's output goes to .build/test-logs/ as it runs, and is printed whole at the end, then a
# summary (with how busy each part kept the cores); the exit status is non-zero if any failed.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
swift=${SWIFT:-swift}

begun=$(date +%s)
logs="$root/.build/test-logs"
rm -rf "$logs"; mkdir -p "$logs"
# The machine's CPU at each step (all processes, from /proc/stat), for the summary: how busy each part kept the cores.
mark() { awk -v t="$(date +%s)" -v what="$1" '/^cpu / { print t, $2 + $3 + $4 + $7 + $8 + $9, what; exit }' /proc/stat >> "$logs/marks"; }
mark start
config=${RECD_TEST_CONFIGURATION:-release}
$swift build -c "$config" --build-tests || exit 1

run=("$swift" test -c "$config" --skip-build --disable-swift-testing)
if [ -n "${RECD_TEST_FILTER:-}" ]; then
  exec "${run[@]}" --filter "$RECD_TEST_FILTER"
fi
if [ "${RECD_TEST_JOBS:-2}" = 1 ]; then
  exec "${run[@]}"
fi

# The processes run the test bundle itself: several `swift test` would take turns (SwiftPM locks .build).
xctest="$($swift build -c "$config" --show-bin-path)/recdPackageTests.xctest"
classes=$("$xctest" --list-tests | sed -n 's|^\([A-Za-z0-9_]*\.[A-Za-z0-9_]*\)/.*|\1|p' | uniq)
pick() { echo "$classes" | grep -E "\.($1)\$" | paste -sd, -; }
# The guests that capture in real time (a camera at 15 fps, ALSA formats with a stalled converter) run
# first and alone: beside even the light classes, CI's guests fell behind real time (a camera missed 19
# frames of 110; an ALSA take lost 1.6 s of 17 to rings that filled while its encoder waited), and under
# three CPU hogs half of a take's frames were lost.
real_time='VideoTests|KernelDriverTests'
# Then the other two guests, one after the other in one process (each emulates a machine on about 1.5
# cores; at nice -5 where allowed, so that the tests beside them yield): the power cuts, then the user
# unit, both on the package's binaries (they wait for it to be packed).
guests_cuts='PowerCutTests'
guests_last='SystemdTests'
# Every other class runs in lanes, processes side by side: 2 beside the guests, and 2 more once the
# guests are done. Each class goes to the lane that is least loaded so far, longest first, by the
# seconds it took in a fresh-clone run (below; a class not listed counts 3 s; a later lane counts as
# loaded with the guests' time). Most classes wait on real-time audio, a daemon or a browser far more
# than they compute: in a fresh-clone run of the release build (4e36641) they used 372 CPU s in 1,285 s,
# in one process, and until the power cuts began the whole machine used less than one of its two cores.
# The guests need about 1.5 cores: with 4 lanes beside them (2342580) the machine was 2.00 cores busy,
# every class took about twice as long, and 3 power cuts did not end in 240 s.
# The classes that keep a core busy (the API fuzzing, the clean Debian root, restic, a load test, a
# 50,000-row repair, twenty kill -9 restarts, deletes of hundreds of files) run only in the later lanes,
# not beside the guests: in CI a 50,000-row repair (BlockingWorkTests) beside a power-cut round left its
# emulated encoder below real time (the start's catch-up timed out, 57,200 frames dropped) and the cut
# lost 7.2 s (seed 926486206).
hogs='PackageTests|BackupTests|FuzzTests|ClientTests|BlockingWorkTests|CrashTests|DeletionTests'
early=2 late=2 guests_seconds=450
seconds='WebAppTests 365 PackageTests 134 BackupTests 125 FuzzTests 116 ClientTests 95 RecordingTests 63 DeletionTests 62
MediaWorkerTests 59 TranscriptTests 59 CrashTests 55 EnhanceTests 55 BlockingWorkTests 54 RecordScreenTests 50
MeterEventTests 48 PlaybackTests 48 ListenTests 45 TrimRecordingTests 36 WebAppTranscriptTests 34 DaemonTests 33
ImportTests 32 FormatRecordingTests 31 MarkerTests 30 LevelMatchedPlaybackTests 29 PauseTests 25 UIRelayTests 25
LoudnessRecordingTests 22 WorkerEscapeTests 22 VideoHostTests 20 SkipSilenceTests 19 DiskTests 18 PlaybackSpeedTests 17
ConnectionTimeoutTests 16 AccessTests 15 IdleTests 14 PlayCountTests 13 HostileImportTests 12 LimitsTests 12
DefaultFormatTests 10 EndsTests 9 FirstWordTests 9 StereoMeterTests 8 APIContractTests 7 HoardTests 7 VideoSessionTests 7'
# LANE CLASS lines: the hogs first (late lanes only), then the rest, each longest first.
lanes_of() {
  for set in hogs rest; do
    if [ $set = hogs ]; then echo "$classes" | grep -E "\.($hogs)\$"
    else echo "$classes" | grep -vE "\.($real_time|$guests_cuts|$guests_last|$hogs)\$"; fi | while read -r c; do
      n=$(echo $seconds | tr ' ' '\n' | paste - - -d' ' | awk -v c="${c#*.}" '$1 == c { print $2 }')
      echo "$set $c ${n:-3}"
    done | sort -k3,3nr
  done | awk -v early="$early" -v late="$late" -v g="$guests_seconds" '
    BEGIN { for (i = early; i < early + late; i++) load[i] = g }
    { from = $1 == "hogs" ? early : 0; b = from
      for (i = from; i < early + late; i++) if (load[i] < load[b]) b = i
      load[b] += $3; print b, $2 }'
}
lanes=$((early + late))
assigned=$(lanes_of)
lane_list() { echo "$1" | awk -v l="$2" '$1 == l { print $2 }' | paste -sd, -; }
[ -n "$(pick "$real_time")" ] && [ -n "$(pick "$guests_cuts")" ] && [ -n "$(lane_list "$assigned" 0)" ] ||
  { echo "run-tests: no tests listed by $xctest" >&2; exit 1; }

started=$(date +%s)
# PackageTests' package — the release build users get, built above — is packed once the real-time
# guests are done, beside the early lanes (its man pages' generator is compiled, and dpkg-deb
# compresses 150 MB). PackageTests waits for it (RECD_TEST_DEB_STATUS) and installs what it made;
# PowerCutTests and the user unit's guest unpack it and run its binaries (they wait for it too).
deb_out="$root/.build/test-deb"
rm -rf "$deb_out"; mkdir -p "$deb_out"
export RECD_TEST_DEB_STATUS="$deb_out/status" RECD_TEST_DEB_LOG="$logs/deb-build.log"
build_package() {
  RECD_DEB_OUT="$deb_out" scripts/build-deb.sh > "$RECD_TEST_DEB_LOG" 2>&1
  echo $? > "$RECD_TEST_DEB_STATUS.part" && mv "$RECD_TEST_DEB_STATUS.part" "$RECD_TEST_DEB_STATUS"
}
pids=''
# Ctrl-C or CI's stop ends every process (and the daemons their tests started, through their own clean-up).
interrupted=''
trap 'interrupted=1; kill -INT $pids 2>/dev/null; pkill -f "$root/scripts/build-deb.sh" 2>/dev/null; wait' INT TERM
# run LOG CLASSES: one XCTest run of those classes (XCTest runs a filter's classes in its own order:
# runs one after the other set ours); nothing when there are none (an empty filter would run them all).
run_classes() { [ -z "$2" ] || "$xctest" "$2" >> "$logs/$1.log" 2>&1; }
mark build
# The real-time guests first, alone, at a higher priority (nice -5, where allowed: root, as in CI), so
# that QEMU keeps up. In the background and waited for, so that Ctrl-C or CI's stop reaches the trap at once.
nice -n -5 "$xctest" "$(pick "$real_time")" > "$logs/real-time.log" 2>&1 & pids=$!
wait $pids; real_time_status=$?
[ -z "$interrupted" ] || { cat "$logs/real-time.log"; exit 130; }
mark "real-time guests"
build_package & build_pid=$!
( renice -n -5 -p $BASHPID > /dev/null 2>&1 || true   # what it starts inherits it
  run_classes guests "$(pick "$guests_cuts")"; cuts=$?
  mark "the power cuts"
  run_classes guests "$(pick "$guests_last")"; unit=$?
  mark "the user unit's guest"
  [ $cuts = 0 ] && [ $unit = 0 ] ) &
guests_pid=$!; pids="$guests_pid"
for ((l = 0; l < lanes; l++)); do
  ( if [ $l -ge $early ]; then while kill -0 "$guests_pid" 2>/dev/null; do sleep 2; done; fi
    run_classes "lane$l" "$(lane_list "$assigned" $l)"; ok=$?
    mark "lane $l"
    [ $ok = 0 ] ) &
  pids="$pids $!"
done
status=$real_time_status
for p in $pids; do wait "$p" || status=1; done
wait $build_pid

names="real-time guests $(for ((l = 0; l < lanes; l++)); do echo -n "lane$l "; done)"
for n in $names; do
  echo "=== $n (.build/test-logs/$n.log) ==="
  cat "$logs/$n.log"
done
mark "the last of them"
echo "=== summary: $(( $(date +%s) - started )) s after the build, $(( $(date +%s) - begun )) s in all ==="
# The CPU the whole machine used from each step to the next, against what its cores could give: how far
# each part of the suite was bound by CPU.
sort -n -k1,1 "$logs/marks" | awk -v cores="$(nproc)" -v hz="$(getconf CLK_TCK)" '
  NR > 1 { dt = $1 - t; printf "%5d s to the end of %s: %.2f of %d cores busy\n", dt, substr($0, index($0, $3)), dt ? ($2 - c) / hz / dt : 0, cores }
  NR == 1 { t0 = $1; c0 = $2 }
  { t = $1; c = $2 }
  END { printf "CPU: %d s used over %d s on %d cores (%.2f busy)\n", (c - c0) / hz, t - t0, cores, t > t0 ? (c - c0) / hz / (t - t0) : 0 }'
for n in $names; do
  # Each run's total follows its "Selected tests" line.
  grep -A1 "Test Suite 'Selected tests'" "$logs/$n.log" | grep -E "Executed [0-9]+ tests?," | sed "s/^[[:space:]]*/$n: /"
  # A failed test prints "error:"; a test that crashes the process prints Swift's trap and the crash.
  grep -E "error: |: error -|failed \(|Fatal error|Precondition failed|Program crashed" "$logs/$n.log" || true
done
[ "$status" = 0 ]
