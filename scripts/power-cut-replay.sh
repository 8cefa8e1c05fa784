#!/usr/bin/env bash
# Every flush point of one run instead of a few random power cuts: dm-log-writes in the test VM
# (Tests/vm/log-writes.sh) logs every write, flush and FUA of a run of recd on ext4 (takes, a 4 s
# recording, stop, save, edit, played, trim, delete, discard, delete-all), then rebuilds the disk as a
# power cut after each flush would leave it, starts recd on it (recovery) and dumps what it shows;
# Tests/vm/power-cut-check.py --log-writes holds each state against the replies acknowledged before
# that point. Ends with "N passed, M failed" (N flush points).
# Usage: scripts/power-cut-replay.sh [MAX_POINTS]   (default 0: every flush point; ~6 s each)
#   RECD_POWER_CUT_OUT=DIR keeps the results there; RECD_BIN_DIR as for power-cut-test.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)
vm=$root/scripts/vm/run-in-vm.sh
[ -x "$vm" ] || { echo "power-cut-replay: no $vm" >&2; exit 2; }
bin=$(cd "${RECD_BIN_DIR:-.build/debug}" 2>/dev/null && pwd -P) || bin=$root/.build/debug
[ -x "$bin/recd" ] || { swift build --product recd && swift build --product recctl || exit 2; bin=$root/.build/debug; }
keep=${RECD_POWER_CUT_OUT:+1}
out=${RECD_POWER_CUT_OUT:-$(mktemp -d /tmp/recd-log-writes.XXXXXX)}
rm -rf "$out"; mkdir -p "$out"; out=$(cd "$out" && pwd -P)
sox -n -r 48000 -c 1 -b 16 "$out/tone.wav" synth 120 sine 1000 vol 0.5 || exit 2
echo "power-cut-replay: results in $out"
VM_RW=$out VM_MODULES="dm_mod;dm_log_writes;loop;ext4;snd-aloop" VM_TIMEOUT=${VM_TIMEOUT:-3600} \
  "$vm" "$root/Tests/vm/log-writes.sh" "$bin/recd" "$bin/recctl" "$out" "$out/tone.wav" "${1:-0}" > "$out/vm.log" 2>&1
status=$?
tail -3 "$out/vm.log"
[ $status = 0 ] || { echo "power-cut-replay: the VM run failed ($status)"; exit 2; }
python3 "$root/Tests/vm/power-cut-check.py" --log-writes "$out" | tee "$out/result.txt"
result=${PIPESTATUS[0]}
if [ "$result" = 0 ] && [ -z "$keep" ]; then rm -rf "$out"; fi
exit "$result"
