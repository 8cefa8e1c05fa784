#!/usr/bin/env bash
# Runs INSIDE the test VM (scripts/vm/run-in-vm.sh with VM_DISK: an ext4 image as /dev/vda).
# Driven by bench/power-cut.py; see bench/README.md.
#
# Usage: vm-sync-cost.sh RECD OUTDIR TONE.wav SECONDS INTERVAL_MS...
#
# What the sync cadence costs the disk while recording: for each INTERVAL_MS (0 = off), a fresh recd
# (its data directory on /dev/vda) records SECONDS of 48 kHz mono AAC from snd-aloop (a 1 kHz tone
# played into hw:Loopback,0,0) under `strace -f --seccomp-bpf -e trace=fdatasync,fsync` (only those
# two calls stop the process). From the start reply to a `sync` after SECONDS (so that in both cases
# the span ends with everything recorded so far on the disk) it reads /sys/block/vda/stat (writes,
# sectors written, flushes: what reached the disk, journal and metadata included), and counts the
# fdatasync and fsync calls strace saw until the sync. Writes OUTDIR/sync-cost.json.
set -euo pipefail
recd=$1 out=$2 tone=$3 secs=$4
shift 4
mkdir -p /mnt/recd-disk
mount -t ext4 /dev/vda /mnt/recd-disk
aplay -q -D hw:Loopback,0,0 "$tone" &
player=$!
trap 'kill $player 2>/dev/null || true' EXIT
# /sys/block/vda/stat: 5th field writes completed, 7th sectors written (512 B), 16th flushes completed.
disk() { awk '{print $5, $7, $16}' /sys/block/vda/stat; }
results=()
for interval in "$@"; do
  work=$(mktemp -d /tmp/recd-sync.XXXXXX)
  data=/mnt/recd-disk/bench-$interval
  rm -rf "$data"
  strace -f --seccomp-bpf -qq -e trace=fdatasync,fsync -e signal=none -ttt -o "$work/strace.txt" \
    "$recd" --data-dir "$data" --socket "$work/recd.sock" --capture-device hw:Loopback,1,0 --min-free-mb 10 \
    --sync-interval-ms "$interval" > "$out/recd-sync-$interval.log" 2>&1 &
  tracer=$!
  for _ in $(seq 600); do curl -sf --unix-socket "$work/recd.sock" http://recd/v1/status >/dev/null && break; sleep 0.05; done
  sync
  curl -sf --unix-socket "$work/recd.sock" -X POST -d '{}' http://recd/v1/record/start > "$work/start.json"
  t0=$EPOCHREALTIME; d0=$(disk)
  sleep "$secs"
  # The span ends once the recording so far is on the disk in both cases: `sync` writes back what
  # the cadence left in the page cache (without it, all of it; with it, the last second).
  t1=$EPOCHREALTIME; sync; d1=$(disk)
  curl -sf --unix-socket "$work/recd.sock" -X POST -d '{"then": "keep"}' http://recd/v1/record/stop > "$out/stop-sync-$interval.json"
  kill -TERM $(pgrep -P "$tracer") 2>/dev/null || true   # recd, strace's child
  wait "$tracer" 2>/dev/null || true
  read -r fdatasyncs fsyncs <<< "$(awk -v a="$t0" -v b="$t1" '$2 >= a && $2 <= b && /fdatasync\(/ {d++}
                                    $2 >= a && $2 <= b && /[^a]fsync\(/ {f++} END {print d+0, f+0}' "$work/strace.txt")"
  read -r w0 s0 f0 <<< "$d0"; read -r w1 s1 f1 <<< "$d1"
  cp "$work/strace.txt" "$out/strace-sync-$interval.txt"
  results+=("{\"intervalMs\": $interval, \"seconds\": $(echo "$t1 - $t0" | bc), \"diskWrites\": $((w1 - w0)),
    \"bytesWritten\": $(((s1 - s0) * 512)), \"diskFlushes\": $((f1 - f0)), \"fdatasyncs\": $fdatasyncs, \"fsyncs\": $fsyncs}")
  rm -rf "$work"
done
(IFS=,; echo "[${results[*]}]") > "$out/sync-cost.json"
cat "$out/sync-cost.json"
