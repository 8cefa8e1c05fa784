#!/usr/bin/env bash
# Where the CPU of a video take goes, inside the test VM: perf samples of recd and its media worker
# during a 10 s take from vivid + snd-aloop (the settings of bench/vm-video.sh), and of the ffmpeg CLI
# recording the same devices, per thread and per function, kernel included. Not a benchmark (no
# ratio, nothing written to BENCHMARKS.md): the tool for finding what bench/video.py's figure is made of.
#
# Usage: bench/vm-profile.sh [OUTDIR]   (default /tmp/recd-vm-profile; release build of recd/recctl)
# Writes OUTDIR/{recd,ffmpeg}.data (perf), {recd,ffmpeg}.script (perf script, symbolized in the
# guest, where the guest kernel's symbols are), and prints per thread: its samples, the share in
# the kernel, its hottest leaf functions and kernel call chains.
#
# The host's perf runs in the guest: the guest boots the host's Debian kernel package (6.1), and
# Debian's perf wrapper picks perf_6.1 for it. cpu-clock sampling (no hardware counters under TCG).
# Under TCG, float SIMD is emulated op by op (~70x the host, against ~20x for integer code), so
# float-heavy code weighs more here than on hardware.
set -euo pipefail
if [[ ${1:-} == --guest ]]; then
    recd=$2 recctl=$3 out=$4
    work=$(mktemp -d /tmp/recd-prof.XXXXXX)
    sox -n -r 48000 -c 1 -b 16 -e signed-integer "$work/tone.wav" synth 120 sine 1000 vol 0.5
    aplay -q -D hw:Loopback,0,0 "$work/tone.wav" & player=$!
    sock=$work/recd.sock
    "$recd" --data-dir "$work/data" --socket "$sock" --capture-device hw:Loopback,1,0 --channels 1 --bitrate 128000 \
        --video-device /dev/video0 --video-size 320x180 --video-fps 15 --video-preset ultrafast --video-crf 23 \
        --ffmpeg-idle-unload 300 >"$out/recd.log" 2>&1 &
    pid=$!
    for _ in $(seq 600); do "$recctl" --socket "$sock" status >/dev/null 2>&1 && break; sleep 0.1; done
    # A first take starts the worker the measured one uses (as in bench/vm-video.sh).
    "$recctl" --socket "$sock" record start --video >/dev/null; sleep 2; "$recctl" --socket "$sock" record stop --discard >/dev/null
    sleep 1
    workers=$(cat /proc/$pid/task/*/children | tr ' ' '\n' | grep . | paste -sd,)
    "$recctl" --socket "$sock" record start --video >/dev/null
    perf record -q -e cpu-clock -F 499 -g -o "$out/recd.data" -p "$pid,$workers" -- sleep 10
    "$recctl" --socket "$sock" record stop --save >/dev/null
    kill $pid
    perf record -q -e cpu-clock -F 499 -g -o "$out/ffmpeg.data" -- ffmpeg -nostdin -hide_banner -y \
        -thread_queue_size 64 -f v4l2 -input_format yuv420p -video_size 320x180 -framerate 15 -i /dev/video0 \
        -thread_queue_size 64 -f alsa -sample_rate 48000 -channels 1 -i hw:Loopback,1,0 \
        -c:v libx264 -preset ultrafast -tune zerolatency -crf 23 -g 15 -pix_fmt yuv420p -c:a aac -b:a 128k \
        -movflags frag_keyframe+empty_moov+default_base_moof -frag_duration 1000000 -flush_packets 1 \
        -t 10 "$work/ffmpeg.mov" >"$out/ffmpeg.log" 2>&1
    kill $player 2>/dev/null || true
    for d in recd ffmpeg; do perf script -i "$out/$d.data" -F comm,tid,ip,sym,dso >"$out/$d.script" 2>/dev/null; done
    exit 0
fi

repo=$(cd "$(dirname "$0")/.." && pwd -P)
out=${1:-/tmp/recd-vm-profile}
mkdir -p "$out"
out=$(cd "$out" && pwd -P)
run_in_vm=$repo/scripts/vm/run-in-vm.sh
[[ -x $run_in_vm ]] || { echo "no $run_in_vm (the repository's VM harness)" >&2; exit 1; }
VM_RW=$out "$run_in_vm" "$repo/bench/vm-profile.sh" --guest "$repo/.build/release/recd" "$repo/.build/release/recctl" "$out"
python3 - "$out" <<'EOF'
import collections, os, re, sys
out = sys.argv[1]
for name in ("recd", "ffmpeg"):
    samples, current = [], None
    for line in open(os.path.join(out, name + ".script"), errors="replace"):
        if not line.strip():
            current = None
        elif not line[0].isspace():
            fields = line.split()
            current = {"comm": fields[0], "tid": fields[1], "stack": []}
            samples.append(current)
        elif current is not None:
            m = re.match(r"\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$", line)
            if m:
                current["stack"].append((m.group(1), m.group(2)))
    print(f"== {name}: {len(samples)} samples (499 Hz)")
    for tid, n in collections.Counter(s["tid"] for s in samples).most_common(8):
        mine = [s for s in samples if s["tid"] == tid and s["stack"]]
        kernel = [s for s in mine if "kernel" in s["stack"][0][1]]
        print(f"  thread {tid} ({mine[0]['comm'] if mine else '?'}): {n} samples, {len(kernel)} in the kernel")
        for leaf, k in collections.Counter(s["stack"][0][0][:60] for s in mine).most_common(4):
            print(f"      {k:5d}  {leaf}")
        for chain, k in collections.Counter(" < ".join(f[:26] for f, d in s["stack"][:5] if "kernel" in d)
                                            for s in kernel).most_common(3):
            print(f"      {k:5d}  {chain}")
EOF
