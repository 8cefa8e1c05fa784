#!/usr/bin/env bash
# Runs INSIDE the test VM (scripts/vm/run-in-vm.sh), where snd-aloop is a real ALSA kernel driver:
# audio played into hw:Loopback,0,0 is captured from hw:Loopback,1,0, paced by a kernel timer.
# Usage: aloop-record.sh RECD RECCTL OUTDIR TONE.wav
# Writes OUTDIR/clean.json and OUTDIR/overrun.json (recctl's stop replies) and copies the recorded
# files to OUTDIR/clean.m4a and OUTDIR/overrun.m4a for the host to analyse.
set -euo pipefail
recd=$1 recctl=$2 out=$3 tone=$4
# Each command with the guest's clock, for the host's summary of the slowest steps (VMRun.timing).
exec {trace}>> "$out/trace.txt"; BASH_XTRACEFD=$trace; PS4='+ ${EPOCHREALTIME} '; set -x
work=$(mktemp -d /tmp/recd-vm.XXXXXX)
sock=$work/recd.sock
"$recd" --data-dir "$work/data" --socket "$sock" --capture-device hw:Loopback,1,0 --log-level debug \
  > "$out/recd.log" 2>&1 &
recd_pid=$!
aplay -q -D hw:Loopback,0,0 "$tone" &
aplay_pid=$!
trap 'kill $aplay_pid $recd_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do "$recctl" --socket "$sock" status >/dev/null 2>&1 && break; sleep 0.1; done

copy() { # $1 = stop reply json, $2 = name
  local file
  file=$(jq -er .recording.file "$1")
  cp "$work/data/$file" "$out/$2.m4a"
}

# 1. A clean recording of the tone.
"$recctl" --socket "$sock" --json record start > "$out/clean-start.json"
sleep 2
"$recctl" --socket "$sock" --json record stop > "$out/clean.json"
copy "$out/clean.json" clean

# 2. The daemon is frozen for 1.5 s mid-recording: the 0.5 s device buffer overruns (EPIPE), and
#    the capture thread must recover, count it and carry on.
"$recctl" --socket "$sock" --json record start > "$out/overrun-start.json"
sleep 1
kill -STOP $recd_pid
sleep 1.5
kill -CONT $recd_pid
sleep 1
"$recctl" --socket "$sock" --json record stop > "$out/overrun.json"
copy "$out/overrun.json" overrun
echo "vm: done"
