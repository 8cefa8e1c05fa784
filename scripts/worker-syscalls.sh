#!/usr/bin/env bash
# The system calls recd's media workers and transcriber really make, measured: runs test classes with
# every recd-media (and the transcriber it becomes) under `strace -f -c`, then prints each call
# name once per kind of process with how many processes made it. This is where the media worker's
# seccomp allow-list (`media_worker_calls` in Sources/CProcessShim/CProcessShim.c) comes from: run
# it after an FFmpeg, glibc or Swift upgrade and compare.
#
#   scripts/worker-syscalls.sh [XCTest filter…]    (default: the classes that make, play, trim,
#                                                   import, measure and transcribe recordings)
# Needs strace (apt-get install strace) and a build (`swift build --build-tests`).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$(cd "$root" && swift build --show-bin-path)"
command -v strace >/dev/null || { echo "worker-syscalls: strace is missing (apt-get install strace)" >&2; exit 1; }
work="$(mktemp -d)"   # kept: each process's table and the tests' log
mkdir "$work/out"
# -D: strace runs as a grandchild, so the worker keeps recd as its parent (it checks, and dies with it).
cat > "$work/recd-media" <<EOF
#!/bin/sh
kind=worker; [ "\$3" = "--transcriber" ] && kind=transcriber
exec strace -D -f -qq -c -o "$work/out/\$kind.\$\$" "$bin/recd-media" "\$@"
EOF
chmod +x "$work/recd-media"
filters=("$@")
[ ${#filters[@]} -gt 0 ] || filters=(RecdIntegrationTests.RecordingTests RecdIntegrationTests.PlaybackTests
  RecdIntegrationTests.TrimRecordingTests RecdIntegrationTests.ImportTests RecdIntegrationTests.HostileImportTests
  RecdIntegrationTests.FormatRecordingTests RecdIntegrationTests.LoudnessRecordingTests
  RecdIntegrationTests.LevelMatchedPlaybackTests RecdIntegrationTests.MediaWorkerTests RecdIntegrationTests.VideoHostTests
  RecdIntegrationTests.PauseTests RecdIntegrationTests.StereoMeterTests RecdIntegrationTests.TranscriptTests)
RECD_MEDIA_WORKER="$work/recd-media" "$bin/recdPackageTests.xctest" "$(IFS=,; echo "${filters[*]}")" > "$work/tests.log" 2>&1 ||
  echo "worker-syscalls: some tests failed under strace (their calls are counted all the same): $work/tests.log" >&2
for kind in worker transcriber; do
  files=("$work/out/$kind".*)
  [ -e "${files[0]}" ] || continue
  echo "# $kind: ${#files[@]} processes"
  # strace -c's table: the call's name is the last column of each row between the dashed lines.
  awk '/^-+ /{inside = !inside; next} inside && NF >= 5 {print $NF}' "${files[@]}" | sort | uniq -c | sort -k2
done
echo "# each process's table: $work/out"
