#!/usr/bin/env bash
# Runs INSIDE the test VM (scripts/vm/run-in-vm.sh), where vivid is a real V4L2 camera driver and
# snd-aloop a real ALSA card: a tone played into hw:Loopback,0,0 is captured from hw:Loopback,1,0.
# Usage: video-record.sh RECD RECCTL OUTDIR TONE.wav
# Leaves in OUTDIR, for the host to check with ffprobe/ffmpeg: av.mov/av.json/av.jpg (camera + sound), av-ffmpeg-maps.txt, av-frame-maps.txt,
# silent.mov/silent.json (--video-only), paused-av.* and paused-silent.* (paused and resumed), busy.txt, nocamera.txt, output-node.txt, nomic.txt (refusals),
# drops.json (frames vivid was told to drop), unplugged.json/unplugged.mov (camera disconnected
# mid-recording), killed.mov + recovered.json (kill -9 mid-recording, then a restart), full.json/
# full.mov/full-status.json (the disk filled mid-recording), devices.json, recd*.log.
set -euo pipefail
recd=$1 recctl=$2 out=$3 tone=$4
# Each command with the guest's clock, for the host's summary of the slowest steps (VMRun.timing).
exec {trace}>> "$out/trace.txt"; BASH_XTRACEFD=$trace; PS4='+ ${EPOCHREALTIME} '; set -x
work=$(mktemp -d /tmp/recd-vm.XXXXXX)
sock=$work/recd.sock
size=320x180 fps=15
video_args=(--video-device /dev/video0 --video-size $size --video-fps $fps --video-preset ultrafast)
pids=()
trap 'kill ${pids[*]} 2>/dev/null || true' EXIT

aplay -q -D hw:Loopback,0,0 "$tone" &
pids+=($!)

start_recd() { # $1 = log name, rest = extra options
  local log=$1; shift
  "$recd" --data-dir "$work/data" --socket "$sock" --capture-device hw:Loopback,1,0 "${video_args[@]}" "$@" \
    >> "$out/$log" 2>&1 &
  recd_pid=$!
  pids+=($recd_pid)
  for _ in $(seq 200); do "$recctl" --socket "$sock" status >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "recd did not come up" >&2; return 1
}
rc() { "$recctl" --socket "$sock" "$@"; }
file_of() { jq -er .recording.file "$1"; }
id_of() { jq -er .recording.id "$1"; }
wait_idle() { # $1 = where the last status goes; waits (30 s at most) until a recording ended by itself
  for _ in $(seq 300); do
    rc --json status > "$1"
    grep -q '"activity" *: *"idle"' "$1" && return 0
    sleep 0.1
  done
}

start_recd recd.log
rc --json devices > "$out/devices.json"

# 1. Camera + microphone, 4 s.
rc --json record start --video --title "vm video" > "$out/av-start.json"
sleep 4
# The camera's frames reach the media worker through a shared memory file, not the socket: its
# mappings of it (and recd's), while recording. A take's worker does each job in a process it
# forked for it: those are the grandchildren.
workers=$(cat /proc/$recd_pid/task/*/children 2>/dev/null || true)   # a thread that ended meanwhile: not an error
for p in $recd_pid $workers $(for w in $workers; do cat /proc/$w/task/*/children 2>/dev/null; done); do
  printf '%s %s\n' "$(cat /proc/$p/comm)" "$(grep -c 'memfd:recd-camera-frames' /proc/$p/maps || true)"
done > "$out/av-frame-maps.txt"
rc --json record stop --save > "$out/av.json"
# FFmpeg's libraries mapped in recd (none: the camera's conversion, both encoders and the muxer ran in a media worker).
grep -c -E '/lib(avformat|avcodec|avutil|swresample|swscale)\.so' "/proc/$recd_pid/maps" > "$out/av-ffmpeg-maps.txt" || true
cp "$work/data/$(file_of "$out/av.json")" "$out/av.mov"
rc poster "$(id_of "$out/av.json")" -o "$out/av.jpg"

# 2. A silent video, 3 s.
rc --json record start --video-only > "$out/silent-start.json"
sleep 3
rc --json record stop --save > "$out/silent.json"
cp "$work/data/$(file_of "$out/silent.json")" "$out/silent.mov"

# 2a. Paused and resumed: camera + microphone (2 s, a 1.5 s pause, 2 s), then a silent video (a 2 s pause). Through
#     curl, which starts at once in the slow guest, so that the guest's clock around the requests
#     tells the time recorded (the silent one's: the other's is counted by its sound).
api() { curl -s --unix-socket "$sock" -X POST "http://recd/v1/record/$1" ${2:+-d "$2"}; }
api start '{"type":"video"}' > /dev/null
sleep 2
api pause > "$out/paused-av-pause.json"
sleep 1.5
api resume > "$out/paused-av-resume.json"
sleep 2
api stop '{"then":"save"}' > "$out/paused-av.json"
cp "$work/data/$(file_of "$out/paused-av.json")" "$out/paused-av.mov"
# The guest's clock around the requests: before the start and after the stop (the longest the take
# can have run), after the start's reply and before the stop (the shortest).
date +%s.%N > "$out/paused-silent-outer.txt"
api start '{"type":"video","audio":false}' > /dev/null
date +%s.%N > "$out/paused-silent-times.txt"
sleep 1.5
api pause > /dev/null
sleep 2
api resume > "$out/paused-silent-resume.json"
sleep 1.5
date +%s.%N >> "$out/paused-silent-times.txt"
api stop '{"then":"save"}' > "$out/paused-silent.json"
date +%s.%N >> "$out/paused-silent-outer.txt"
cp "$work/data/$(file_of "$out/paused-silent.json")" "$out/paused-silent.mov"

# 2b. The recording screen (recctl record --video) without a terminal: plain lines; end of input
#     stops the take and leaves it pending.
(sleep 2) | rc record --video > "$out/screen.txt" 2>&1

# 3. The camera busy: another program streams from it.
# It prints a "<" for each frame it takes: once one is there and it still runs, it is streaming (a
# fixed sleep was not always enough in a loaded VM, and it fails at once if the camera is still
# being let go of by the take before: then it is started again).
streamer=
for _ in $(seq 50); do
  v4l2-ctl -d /dev/video0 --stream-mmap --stream-count=100000 > "$work/streamer.out" 2>&1 &
  streamer=$!
  for _ in $(seq 20); do grep -q '<' "$work/streamer.out" && break; kill -0 $streamer 2>/dev/null || break; sleep 0.1; done
  grep -q '<' "$work/streamer.out" && kill -0 $streamer 2>/dev/null && break
  kill $streamer 2>/dev/null || true; wait $streamer 2>/dev/null || true
  sleep 0.2
done
grep -q '<' "$work/streamer.out" || { echo "v4l2-ctl did not start streaming: $(head -c 400 "$work/streamer.out")" >&2; exit 1; }
if rc record start --video > "$out/busy.txt" 2>&1; then
  echo "started while the camera was busy (the other program: $(head -c 200 "$work/streamer.out" | tr -d '<'); running: $(kill -0 $streamer 2>/dev/null && echo yes || echo no))" >&2
  exit 1
fi
kill $streamer; wait $streamer 2>/dev/null || true

# 4. Frames dropped by the driver (vivid drops the given percentage of buffers): counted.
v4l2-ctl -d /dev/video0 -c percentage_of_dropped_buffers=25
rc --json record start --video > /dev/null
sleep 3
rc --json record stop --discard > "$out/drops.json"
v4l2-ctl -d /dev/video0 -c percentage_of_dropped_buffers=0

# 5. The camera unplugged mid-recording (vivid's "disconnect" button: every call then fails ENODEV):
#    the recording ends by itself with what was captured.
rc --json record start --video > "$out/unplugged-start.json"
sleep 2.5
v4l2-ctl -d /dev/video0 -c disconnect=1
wait_idle "$out/unplugged-status.json"
rc --json show "$(id_of "$out/unplugged-start.json")" > "$out/unplugged.json"
cp "$work/data/$(jq -er .file "$out/unplugged.json")" "$out/unplugged.mov"
kill $recd_pid; wait $recd_pid 2>/dev/null || true
echo "vm: disconnected vivid; reloading it" >&2
# A disconnected vivid stays so until the module is reloaded.
rmmod vivid && modprobe vivid

# 6. No camera: the refusal names it and offers audio only; no microphone: offers a silent video.
start_recd recd-nocamera.log --video-device /dev/video9
if rc record start --video > "$out/nocamera.txt" 2>&1; then echo "started without a camera" >&2; exit 1; fi
api_start() { curl -s --unix-socket "$sock" -X POST http://recd/v1/record/start -d "$1" -w '\n%{http_code}\n'; }
api_start '{"type":"video"}' > "$out/nocamera.json"
kill $recd_pid; wait $recd_pid 2>/dev/null || true
# A V4L2 node that cannot capture (vivid's video output, /dev/video1): refused, naming it.
start_recd recd-output.log --video-device /dev/video1
if rc record start --video > "$out/output-node.txt" 2>&1; then echo "started on an output node" >&2; exit 1; fi
kill $recd_pid; wait $recd_pid 2>/dev/null || true
start_recd recd-nomic.log --capture-device hw:7,0
if rc record start --video > "$out/nomic.txt" 2>&1; then echo "started without a microphone" >&2; exit 1; fi
api_start '{"type":"video"}' > "$out/nomic.json"
# ... and a silent video records without the microphone.
rc --json record start --video-only > /dev/null
sleep 1.5
rc --json record stop --save > "$out/nomic-silent.json"
kill $recd_pid; wait $recd_pid 2>/dev/null || true

# 7. kill -9 mid-recording: the file plays up to its last fragment; a restart salvages it.
start_recd recd-killed.log
rc --json record start --video > "$out/killed-start.json"
sleep 4
kill -9 $recd_pid; wait $recd_pid 2>/dev/null || true
cp "$work/data/$(file_of "$out/killed-start.json")" "$out/killed.mov"
start_recd recd-recovered.log
rc --json show "$(id_of "$out/killed-start.json")" > "$out/recovered.json"
kill $recd_pid; wait $recd_pid 2>/dev/null || true

# 8. The disk fills mid-recording (Recordings/ on a 256 KiB tmpfs): the recording ends by itself,
#    what was written is kept.
full=$work/full
mkdir -p "$full/Recordings"
mount -t tmpfs -o size=256k,mode=0700 tmpfs "$full/Recordings"
"$recd" --data-dir "$full" --socket "$sock" --capture-device hw:Loopback,1,0 "${video_args[@]}" --min-free-mb 0 \
  >> "$out/recd-full.log" 2>&1 &
recd_pid=$!
pids+=($recd_pid)
for _ in $(seq 200); do rc status >/dev/null 2>&1 && break; sleep 0.1; done
rc --json record start --video > "$out/full-start.json"
wait_idle "$out/full-status.json"
rc --json show "$(id_of "$out/full-start.json")" > "$out/full.json"
cp "$full/$(jq -er .file "$out/full.json")" "$out/full.mov"
kill $recd_pid; wait $recd_pid 2>/dev/null || true
umount "$full/Recordings"
echo "vm: done"
