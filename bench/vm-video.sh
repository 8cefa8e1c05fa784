#!/usr/bin/env bash
# Runs INSIDE the test VM (scripts/vm/run-in-vm.sh), where vivid is a real V4L2 camera driver and
# snd-aloop a real ALSA card. Driven by bench/video.py; see bench/README.md.
#
# Usage: vm-video.sh RECD RECCTL OUTDIR SECONDS [ROUNDS]
#
# CPU seconds of recording SECONDS of H.264 + AAC from /dev/video0 (vivid, 320x180 YU12 at 15 fps)
# and hw:Loopback,1,0 (snd-aloop, 48 kHz mono; a 1 kHz tone is played into hw:Loopback,0,0 the
# whole time), ROUNDS times (default 3) alternating:
#   recd    the daemon (started fresh each round, its start-up not counted; a 2 s take first, not
#           counted, starts its media worker) driven by recctl: utime+stime of the recd process and
#           its media workers from /proc/PID/stat, read just before `record start
#           --video` and just after `record stop --save` returns (so the finalizing remux, the
#           waveform and the poster are included); recorded seconds = the reply's recording.duration.
#   ffmpeg  the ffmpeg CLI recording the same devices with the same codec and muxer settings, for
#           SECONDS (-t): user+sys of the whole process from /usr/bin/time; recorded seconds =
#           ffprobe's duration of its output.
#   remux   `ffmpeg -c copy -movflags +faststart` of that output (what recd does at stop).
#   startup `ffmpeg -version` (process start + loading its libraries), to subtract from the above.
# The tone is OUTDIR/tone.wav if the host made it (48 kHz mono S16), else it is made here with sox.
# Writes OUTDIR/video-bench.json (raw numbers) and, per run, the logs and stop replies.
set -euo pipefail
recd=$1 recctl=$2 out=$3 secs=$4 rounds=${5:-3}
work=$(mktemp -d /tmp/recd-vmbench.XXXXXX)
size=320x180 fps=15
pids=()
trap 'kill ${pids[*]} 2>/dev/null || true' EXIT
log() { printf '[vm-video] %s\n' "$*" >&2; }

tone=$out/tone.wav
if [[ ! -f $tone ]]; then
    tone=$work/tone.wav
    sox -n -r 48000 -c 1 -b 16 -e signed-integer "$tone" synth $((rounds * (2 * secs + 60) + 60)) sine 1000 vol 0.5
fi
aplay -q -D hw:Loopback,0,0 "$tone" &
pids+=($!)
player=$!

TICK=$(getconf CLK_TCK)
# CPU of recd and its media workers so far, in clock ticks: the whole process tree under recd. A take
# is encoded by a process its kept media worker forks (docs/decisions/0025), a grandchild of recd, so
# each process of the tree counts its utime+stime (fields 14, 15 of /proc/PID/stat, counted after the
# ")" that ends the command name) + cutime+cstime (16, 17: the children it has ended and reaped). Only
# recd's direct children were counted before 2026-11-30: the forked encoder's CPU was missed.
ticks() {
    local s total c
    s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }   # ended meanwhile: in its parent's cutime
    s=${s##*) }
    total=$(awk '{ print $12 + $13 + $14 + $15 }' <<<"$s")
    for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
        total=$((total + $(ticks "$c")))
    done
    echo "$total"
}
# recd's own threads only (utime+stime), to tell its share from its workers'.
own_ticks() { local s; s=$(<"/proc/$1/stat"); s=${s##*) }; awk '{ print $12 + $13 }' <<<"$s"; }
now() { date +%s.%N; }

# --- recd ----------------------------------------------------------------------------------------
run_recd() {   # $1 = round
    local n=$1 sock=$work/recd$1.sock data=$work/data$1 before after t0 t1 pid
    "$recd" --data-dir "$data" --socket "$sock" --capture-device hw:Loopback,1,0 --channels 1 --bitrate 128000 \
        --video-device /dev/video0 --video-size $size --video-fps $fps --video-preset ultrafast --video-crf 23 --ffmpeg-idle-unload 300 \
        >"$out/recd$n.log" 2>&1 &
    pid=$!
    pids+=($pid)
    for _ in $(seq 600); do
        "$recctl" --socket "$sock" status >/dev/null 2>&1 && break
        kill -0 $pid 2>/dev/null || { log "recd exited at start-up; see recd$n.log"; return 1; }
        sleep 0.1
    done
    "$recctl" --socket "$sock" status >/dev/null
    # A short take first, not counted: it starts the media worker that the measured take then uses,
    # as a running daemon's recordings do (its start, like recd's own and ffmpeg's, is not counted).
    "$recctl" --socket "$sock" record start --video >/dev/null
    sleep 2
    "$recctl" --socket "$sock" record stop --discard >/dev/null
    sleep 1   # let start-up settle
    before=$(ticks $pid); own_before=$(own_ticks $pid); t0=$(now)
    "$recctl" --socket "$sock" --json record start --video >"$out/recd$n-start.json"
    sleep "$secs"
    "$recctl" --socket "$sock" --json record stop --save >"$out/recd$n-stop.json"
    after=$(ticks $pid); own_after=$(own_ticks $pid); t1=$(now)
    local file
    file=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["recording"]["file"])' "$out/recd$n-stop.json")
    cp "$data/$file" "$work/recd$n.mov"
    kill $pid; wait $pid 2>/dev/null || true
    printf '%s %s %s %s %s %s\n' "$before" "$after" "$t0" "$t1" "$own_before" "$own_after" >"$out/recd$n.ticks"
    log "recd round $n: $(awk -v a="$before" -v b="$after" -v h="$TICK" 'BEGIN { printf "%.2f", (b - a) / h }') s CPU"
}

# --- ffmpeg CLI ----------------------------------------------------------------------------------
run_ffmpeg() {   # $1 = round
    local n=$1 t0 t1
    t0=$(now)
    /usr/bin/time -f '%U %S %e' -o "$out/ffmpeg$n.time" \
        ffmpeg -nostdin -hide_banner -y \
        -thread_queue_size 64 -f v4l2 -input_format yuv420p -video_size $size -framerate $fps -i /dev/video0 \
        -thread_queue_size 64 -f alsa -sample_rate 48000 -channels 1 -i hw:Loopback,1,0 \
        -c:v libx264 -preset ultrafast -tune zerolatency -crf 23 -g $fps -pix_fmt yuv420p \
        -c:a aac -b:a 128k \
        -movflags frag_keyframe+empty_moov+default_base_moof -frag_duration 1000000 -flush_packets 1 \
        -t "$secs" "$work/ffmpeg$n.mov" >"$out/ffmpeg$n.log" 2>&1 \
        || { log "ffmpeg failed; see ffmpeg$n.log"; tail -n 20 "$out/ffmpeg$n.log" >&2; return 1; }
    t1=$(now)
    printf '%s %s\n' "$t0" "$t1" >"$out/ffmpeg$n.wall"
    log "ffmpeg round $n: $(awk '{ printf "%.2f", $1 + $2 }' "$out/ffmpeg$n.time") s CPU"
    # What recd does at stop: a stream copy into a faststart file.
    /usr/bin/time -f '%U %S %e' -o "$out/remux$n.time" \
        ffmpeg -nostdin -hide_banner -y -i "$work/ffmpeg$n.mov" -c copy -movflags +faststart "$work/ffmpeg$n-final.mov" \
        >"$out/remux$n.log" 2>&1 || { log "remux failed; see remux$n.log"; return 1; }
}

run_startup() {   # $1 = round
    /usr/bin/time -f '%U %S %e' -o "$out/startup$1.time" ffmpeg -hide_banner -version >/dev/null 2>&1
}

log "recd: $recd; $rounds rounds of $secs s each; CLK_TCK $TICK"
run_startup 0   # warm-up: the first ffmpeg start reads its libraries over 9p
for n in $(seq "$rounds"); do   # alternating, so drift touches both alike
    run_recd "$n"
    run_ffmpeg "$n"
    run_startup "$n"
done
kill -0 $player 2>/dev/null || log "warning: the tone ended before the last run (recordings may hold silence)"

# --- after all timing: probe the files, write the JSON -------------------------------------------
for f in "$work"/recd*.mov "$work"/ffmpeg[0-9]*.mov; do
    [[ $f == *-final.mov ]] && continue
    ffprobe -v error -count_packets -show_entries format=duration:stream=codec_type,codec_name,pix_fmt,width,height,nb_read_packets,sample_rate,channels \
        -of json "$f" >"$out/$(basename "$f" .mov).probe.json"
done
# Peak level of the sound in the last round's files (a silent take would make a meaningless comparison).
for f in "$work/recd$rounds.mov" "$work/ffmpeg$rounds.mov"; do
    ffmpeg -nostdin -hide_banner -i "$f" -map 0:a -af volumedetect -f null - 2>&1 | sed -n 's/.*max_volume: //p' \
        >"$out/$(basename "$f" .mov).volume"
done
cp "$work/recd$rounds.mov" "$work/ffmpeg$rounds.mov" "$out/" 2>/dev/null || true

python3 - "$out" "$rounds" "$secs" "$TICK" <<'EOF'
import json, os, re, sys
out, rounds, secs, tick = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
rd = lambda name: open(os.path.join(out, name)).read()
def cpu(name):
    u, s, e = rd(name + ".time").split()[-3:]   # /usr/bin/time may put a "Command exited..." line first
    return {"user": float(u), "sys": float(s), "cpu": float(u) + float(s), "wall": float(e)}
def probe(name):
    p = json.loads(rd(name + ".probe.json"))
    streams = {s["codec_type"]: s for s in p.get("streams", [])}
    return {"duration": float(p["format"]["duration"]),
            "videoPackets": int(streams.get("video", {}).get("nb_read_packets", 0)),
            "audioPackets": int(streams.get("audio", {}).get("nb_read_packets", 0)),
            "video": {k: streams.get("video", {}).get(k) for k in ("codec_name", "pix_fmt", "width", "height")},
            "audio": {k: streams.get("audio", {}).get(k) for k in ("codec_name", "sample_rate", "channels")}}
def volume(name):
    try:
        return float(rd(name + ".volume").split()[0])
    except (OSError, ValueError, IndexError):
        return None
runs = []
for n in range(1, rounds + 1):
    b, a, t0, t1, own_b, own_a = rd(f"recd{n}.ticks").split()
    stop = json.loads(rd(f"recd{n}-stop.json"))
    rec, cap = stop.get("recording") or {}, stop.get("capture") or {}
    log = rd(f"ffmpeg{n}.log")
    # ffmpeg's last progress line: "frame=  150 fps= ... [dup=D drop=D] speed=..." (dup/drop only when not 0)
    frames = re.findall(r"frame=\s*(\d+)", log)
    dupdrop = re.findall(r"dup=(\d+) drop=(\d+)", log)
    frames = frames[-1] if frames else ""
    dup, drop = dupdrop[-1] if dupdrop else ("0", "0")
    recd = {"cpu": (int(a) - int(b)) / tick, "ticks": int(a) - int(b), "wall": float(t1) - float(t0),
            "ownCPU": (int(own_a) - int(own_b)) / tick,
            "duration": rec.get("duration"), "videoFrames": cap.get("videoFrames"),
            "videoDroppedFrames": cap.get("videoDroppedFrames"), "overruns": cap.get("overruns"),
            "droppedAudioFrames": cap.get("droppedFrames"), "framesCaptured": cap.get("framesCaptured"),
            "file": probe(f"recd{n}")}
    ff = cpu(f"ffmpeg{n}")
    ff.update({"duration": probe(f"ffmpeg{n}")["duration"], "file": probe(f"ffmpeg{n}"),
               "frames": int(frames) if frames else None, "dup": int(dup) if dup else None,
               "drop": int(drop) if drop else None,
               "xruns": len(re.findall(r"xrun", log, re.I)),
               "warnings": sorted(set(l.strip()[:160] for l in re.split(r"[\r\n]", log)
                                      if re.search(r"past duration|non-monoton|queue|dropp|xrun|too slow|Thread message", l, re.I)))[:10]})
    runs.append({"round": n, "recd": recd, "ffmpeg": ff, "remux": cpu(f"remux{n}"), "startup": cpu(f"startup{n}")})
result = {"seconds": secs, "rounds": rounds, "clkTck": tick, "size": "320x180", "fps": 15,
          "startupWarmup": cpu("startup0"), "runs": runs,
          "peakDb": {"recd": volume(f"recd{rounds}"), "ffmpeg": volume(f"ffmpeg{rounds}")},
          "uname": os.uname().release, "cpus": os.cpu_count()}
json.dump(result, open(os.path.join(out, "video-bench.json"), "w"), indent=1)
EOF
log "done: $out/video-bench.json"
