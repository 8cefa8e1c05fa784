#!/usr/bin/env bash
# Power cuts in a real kernel on a real filesystem (issue 16): N rounds (default 100). Each round is
# one boot of the test VM (scripts/vm, VM_DISK: an ext4 image as /dev/vda that outlives the guest):
# recd starts on it (start-up recovery after the previous cut), what it shows is dumped, then a random
# operation (record, video, pause, import, stop, save, edit, played, play, delete, discard, delete-all,
# trim, mark) is started
# and the guest's power is cut a random moment later (`echo b > /proc/sysrq-trigger`: no sync, no
# unmount). The replies acknowledged before the cut are logged outside the guest (a VM_RW folder).
# One more boot after the last cut dumps its result. Tests/vm/power-cut-check.py then holds every
# round's acknowledged replies against what the next boot found, and prints "N passed, M failed".
#
# Usage: scripts/power-cut-test.sh [N]
#   RECD_POWER_CUT_SEED=S  replays a run (the seed is printed)
#   RECD_POWER_CUT_OUT=DIR keeps the rounds there (default: a temporary folder, removed when all pass)
#   RECD_BIN_DIR=DIR       recd, recd-media and recctl to test (default: the release build, built
#                          first). Release, as users run it: emulated, the debug build's media worker
#                          starts seconds after capture and catches up slowly, so a cut early in a take
#                          loses what the rings still hold (2.65 s against 0.52 s; docs/testing.md).
#   RECD_POWER_CUT_OPS="mark trim" only those operations
# Exit status: 0 every cut passed, 1 some failed, 2 something is missing here, 125 the VM could not run.
# Needs qemu and a kernel (scripts/vm installs them on first use), mkfs.ext4 (e2fsprogs), sox,
# ffmpeg, curl, sqlite3, aplay (alsa-utils) and python3: scripts/install-deps.sh --test.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)
n=${1:-100}
vm=$root/scripts/vm/run-in-vm.sh
[ -x "$vm" ] || { echo "power-cut-test: no $vm: the VM harness of scripts/vm is missing" >&2; exit 2; }
if [ -n "${RECD_BIN_DIR:-}" ]; then
  bin=$(cd "$RECD_BIN_DIR" && pwd -P) || exit 2
else
  for p in recd recd-media recctl; do swift build -c release --product $p || exit 2; done
  bin=$(swift build -c release --show-bin-path)
fi
for p in recd recd-media recctl; do
  [ -x "$bin/$p" ] || { echo "power-cut-test: no $bin/$p" >&2; exit 2; }
done
for tool in mkfs.ext4 sox ffmpeg ffprobe curl sqlite3 aplay python3; do
  command -v $tool >/dev/null || { echo "power-cut-test: $tool is missing (scripts/install-deps.sh --test)" >&2; exit 2; }
done

keep=${RECD_POWER_CUT_OUT:+1}
out=${RECD_POWER_CUT_OUT:-$(mktemp -d /tmp/recd-power-cut.XXXXXX)}
mkdir -p "$out"
out=$(cd "$out" && pwd -P)
seed=${RECD_POWER_CUT_SEED:-$(( (RANDOM << 15) | RANDOM ))}
RANDOM=$seed
echo "power-cut test: $n cuts, RECD_POWER_CUT_SEED=$seed, rounds in $out"

img=$out/disk.img
rm -rf "$img" "$out/rounds.txt" "$out"/round-*
truncate -s 128M "$img"
mkfs.ext4 -q -F "$img" || exit 2
sox -n -r 48000 -c 1 -b 16 "$out/tone.wav" synth 90 sine 1000 vol 0.5 || exit 2

# Every operation equally often (a shuffled cycle), each cut a random moment after it began, in a
# window that covers its whole course in the emulated guest (measured: see BENCHMARKS.md).
ops=(record video pause import stop save edit played play delete discard delete-all trim mark)
# RECD_POWER_CUT_OPS="mark trim": only those (a change to one operation, tried many times).
[ -n "${RECD_POWER_CUT_OPS:-}" ] && read -ra ops <<< "$RECD_POWER_CUT_OPS"
# (A request takes 0.3-0.6 s there, curl's start included; a stop 0.6-1.2 s, a trim about 1.4 s; a
# mark's chapter copy starts a second after the marker and takes about as long as a trim.)
declare -A window=([record]="1000 3000" [video]="1000 3000" [pause]="0 1500" [import]="0 2500" [stop]="0 1500" [save]="0 700" [edit]="0 700" [played]="0 700"
                   [play]="0 700" [delete]="0 700" [discard]="0 700" [delete-all]="0 900" [trim]="0 1600"
                   [mark]="0 3000")
cycle=()
started=$(date +%s)
for ((r = 1; r <= n + 1; r++)); do
  if ((r > n)); then
    op=check delay=0
  else
    if ((${#cycle[@]} == 0)); then
      cycle=("${ops[@]}")
      for ((i = ${#cycle[@]} - 1; i > 0; i--)); do j=$((RANDOM % (i + 1))); t=${cycle[i]}; cycle[i]=${cycle[j]}; cycle[j]=$t; done
    fi
    op=${cycle[0]}; cycle=("${cycle[@]:1}")
    read -r lo hi <<< "${window[$op]}"
    delay=$((lo + RANDOM % (hi - lo + 1)))
  fi
  t0=$(date +%s)
  VM_DISK=$img VM_RW=$out VM_MODULES="virtio_blk;ext4;snd-aloop;vivid" VM_TIMEOUT=150 \
    "$vm" "$root/Tests/vm/power-cut.sh" "$bin/recd" "$bin/recctl" "$out" "$out/tone.wav" "$r" "$op" "$delay" "$RANDOM" \
    > "$out/round-$r.vm.log" 2>&1
  status=$?
  echo "$r $op $delay $status" >> "$out/rounds.txt"
  echo "round $r/$n: $op, cut $delay ms in: guest status $status ($(( $(date +%s) - t0 )) s)"
  if [ "$r" = 1 ] && [ ! -d "$out/round-1" ]; then
    # The guest never ran the script (qemu or the kernel could not start here): not recd's failure.
    echo "power-cut-test: the VM could not run the test:" >&2
    tail -20 "$out/round-1.vm.log" >&2
    exit 125
  fi
done
echo "power-cut test: $(( $(date +%s) - started )) s of VM runs; checking"
python3 "$root/Tests/vm/power-cut-check.py" "$out" | tee "$out/result.txt"
result=${PIPESTATUS[0]}
if [ "$result" = 0 ] && [ -z "$keep" ]; then rm -rf "$out"; fi
exit "$result"
