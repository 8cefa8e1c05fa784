#!/usr/bin/env bash
# Runs INSIDE the test VM (scripts/vm/run-in-vm.sh): recd records from hw:Loopback,1,0 while aplay holds
# the loopback to a format that is not the recording's (snd-aloop: the first side to open fixes it), as
# a stereo-only codec, a 44.1 kHz USB microphone, a 96 kHz interface or a mono-only device would.
# stall44k is the 44.1 kHz take again with the converter's worker stopped for 3 s in the middle.
# Usage: aloop-formats.sh RECD RECCTL OUTDIR — OUTDIR holds the tones made on the host:
#   s32-44k-stereo.wav, s16-48k-mono.wav, s16-96k-stereo.wav
# Writes OUTDIR/<case>.json (recctl's start reply), OUTDIR/<case>.m4a (the file), OUTDIR/<case>.ffmpeg-maps.txt
# and <case>.worker-ffmpeg-maps.txt (how many of recd's and of its media worker's mappings are FFmpeg's)
# for the host to check.
set -euo pipefail
recd=$1 recctl=$2 out=$3
# Each command with the guest's clock, for the host's summary of the slowest steps (VMRun.timing).
exec {trace}>> "$out/trace.txt"; BASH_XTRACEFD=$trace; PS4='+ ${EPOCHREALTIME} '; set -x
work=$(mktemp -d /tmp/recd-vm.XXXXXX)
sock=$work/recd.sock
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT

start_recd() { # extra recd options...
  "$recd" --data-dir "$work/data" --socket "$sock" --capture-device hw:Loopback,1,0 --log-level debug "$@" \
    >> "$out/recd.log" 2>&1 &
  recd_pid=$!
  pids+=("$recd_pid")
  for _ in $(seq 100); do "$recctl" --socket "$sock" status >/dev/null 2>&1 && return; sleep 0.1; done
  echo "vm: recd did not start" >&2; exit 1
}
stop_recd() { kill "$recd_pid"; wait "$recd_pid" || true; }

# The child processes of PID: each of its threads' children files (a thread that ends between the
# glob and the read leaves a name that is gone: not an error; under set -e and pipefail it ended the
# run with 1 in CI).
children() { cat /proc/"$1"/task/*/children 2>/dev/null || true; }

take() { # case-name tone.wav [stall]
  # The tone from the guest's own memory and a 2 s buffer: read from the host's share, in a guest
  # starved by a loaded host, the player underran and the loopback carried its gaps (440 Hz measured
  # as 312-351, at -10.5 dBFS for -9, with recd counting no overrun and no lost frame).
  cp "$out/$2" "$work/$2"
  aplay -q -B 2000000 -D hw:Loopback,0,0 "$work/$2" &
  local player=$!
  sleep 0.5
  "$recctl" --socket "$sock" --json record start > "$out/$1.json"
  "$recctl" --socket "$sock" status > "$out/$1.status.txt"
  # The recording's media worker (recd's child) maps FFmpeg: the count below, which must find it there.
  for w in $(children "$recd_pid"); do grep -c -E '/lib(avformat|avcodec|avutil|swresample|swscale)\.so' "/proc/$w/maps" || true; done \
    | sort -n | tail -n 1 > "$out/$1.worker-ffmpeg-maps.txt"
  if [ "${3:-}" = stall ]; then
    # The converter's worker stopped for 3 s (as one stuck on a loaded machine): capture goes on,
    # and what it captured meanwhile is converted once the worker answers again. It is the take's
    # first worker (the pipeline makes the converter before the writer), so the lowest pid.
    converter=$(children "$recd_pid" | tr ' ' '\n' | grep . | sort -n | head -n 1)
    # A take's worker does each job in a process it forked for it: that process converts.
    job=$(children "$converter" | tr ' ' '\n' | grep . | head -n 1)
    if [ -n "$job" ]; then converter=$job; fi
    kill -STOP "$converter"
    sleep 0.2
    # What was stopped, for the host to check: a media worker, stopped.
    { tr '\0' ' ' < /proc/"$converter"/cmdline; echo; grep '^State:' /proc/"$converter"/status; } > "$out/$1.stopped.txt"
    sleep 2.8
    kill -CONT "$converter"
  fi
  sleep 2.5
  "$recctl" --socket "$sock" --json record stop > "$out/$1.stop.json"
  # FFmpeg's libraries mapped in recd (none: the conversion and the encoding ran in a media worker).
  grep -c -E '/lib(avformat|avcodec|avutil|swresample|swscale)\.so' "/proc/$recd_pid/maps" > "$out/$1.ffmpeg-maps.txt" || true
  kill "$player" 2>/dev/null || true
  wait "$player" 2>/dev/null || true
  local file
  file=$(jq -er .recording.file "$out/$1.stop.json")
  cp "$work/data/$file" "$out/$1.m4a"
}

start_recd                   # the defaults: 48 kHz mono
"$recctl" --socket "$sock" --json devices > "$out/devices.json"
take stereo44k s32-44k-stereo.wav
stop_recd
start_recd                   # a fresh recd: no worker kept from the take before
take stall44k s32-44k-stereo.wav stall
take rate96k s16-96k-stereo.wav
stop_recd
start_recd --channels 2      # a stereo recording from a mono-only device
take mono s16-48k-mono.wav
stop_recd
echo "vm: done"
