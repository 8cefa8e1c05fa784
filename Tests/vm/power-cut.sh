#!/usr/bin/env bash
# Runs INSIDE the test VM (scripts/vm/run-in-vm.sh with VM_DISK): one round of the power-cut test
# (scripts/power-cut-test.sh). The data directory is on /dev/vda (ext4), which outlives the guest.
# Usage: power-cut.sh RECD RECCTL OUTDIR TONE.wav ROUND OP DELAY_MS SEED
#   1. mounts the disk (ext4 replays its journal), starts recd (start-up recovery runs before the
#      socket answers), and dumps what the last cut left into OUTDIR/round-ROUND/: the catalog as
#      recd shows it (list, check, status), PRAGMA integrity_check, every file of the data
#      directory and a copy of each recording's file (for the host to decode);
#   2. unless OP is "check", makes sure there is something to work on (two saved recordings, one
#      pending; a delete-all when the library has grown past 8), then starts OP (record, video, pause,
#      stop, save, edit, played, play, delete, discard, delete-all, trim, import, mark) and, DELAY_MS later,
#      cuts the power: `echo b > /proc/sysrq-trigger` (no sync, no unmount).
#   With OP "check" it stops there (recd stopped, the disk unmounted): the last boot, and each replayed
#   state of Tests/vm/log-writes.sh (RECD_PC_DEVICE: the device to mount instead of /dev/vda).
# Every reply recd gave is appended to round-ROUND/acks.jsonl as it arrives, on the VM_RW share
# (9p, written through to the host at each write): the log of what was acknowledged before the cut.
set -uo pipefail
recd=$1 recctl=$2 out=$3 tone=$4 round=$5 op=$6 delay_ms=$7 seed=$8
rd=$out/round-$round
mkdir -p "$rd/files"
RANDOM=$seed
now() { echo "${EPOCHREALTIME}"; }
note() { printf '%s\n' "$1" >> "$rd/acks.jsonl"; }

mkdir -p /mnt/recd-disk
# RECD_PC_DEVICE: another block device (Tests/vm/log-writes.sh checks replayed states on loop devices).
device=${RECD_PC_DEVICE:-/dev/vda}
mount -t ext4 "$device" /mnt/recd-disk || { echo "power-cut: cannot mount $device" >&2; exit 2; }
data=/mnt/recd-disk/data
work=$(mktemp -d /tmp/recd-pc.XXXXXX)
sock=$work/recd.sock
[ "$op" = check ] || aplay -q -D hw:Loopback,0,0 "$tone" &
t_boot=$(cut -d' ' -f1 /proc/uptime)
# The camera (vivid) where the guest has one: the video rounds record from it.
video=()
[ -e /dev/video0 ] && video=(--video-device /dev/video0 --video-size 320x180 --video-fps 15 --video-preset ultrafast)
"$recd" --data-dir "$data" --socket "$sock" --capture-device hw:Loopback,1,0 --playback-device plughw:Loopback,0,1 \
  "${video[@]}" --min-free-mb 10 --log-level info > "$rd/recd.log" 2>&1 &
recd_pid=$!
up=false
for _ in $(seq 600); do
  curl -sf --unix-socket "$sock" http://recd/v1/status -o "$rd/status.json" && { up=true; break; }
  kill -0 $recd_pid 2>/dev/null || break
  sleep 0.05
done
$up || { echo "power-cut: recd did not start" >&2; cat "$rd/recd.log" >&2; exit 3; }
echo "{\"uptimeAtCommand\": $t_boot, \"uptimeAtReady\": $(cut -d' ' -f1 /proc/uptime)}" > "$rd/timing.json"

# --- 1. what the last cut left ---------------------------------------------------------------------
# The chapter copies recd finishes after its start (ChapterPass, in the background, each a
# FileReplacement of its own): settled before the files are listed and copied, as a person's `check`
# waits for them. (Recovery settled what the cut left before the socket answered.)
for _ in $(seq 300); do
  [ "$(sqlite3 "$data/catalog.sqlite" 'SELECT count(*) FROM chapterWork' 2>/dev/null)" = 0 ] && break
  sleep 0.1
done
curl -s --unix-socket "$sock" "http://recd/v1/recordings?limit=1000" -o "$rd/after.json"
curl -s --unix-socket "$sock" http://recd/v1/check -o "$rd/check.json"
(cd "$data" && find . -printf '%y %s %p\n' | sort -k3) > "$rd/tree.txt"
sqlite3 "$data/catalog.sqlite" 'PRAGMA integrity_check' > "$rd/integrity.txt" 2>&1
sqlite3 -json "$data/catalog.sqlite" 'SELECT id, recordingID, time, label FROM marker' > "$rd/markers.json" 2>&1
for f in "$data"/Recordings/*; do [ -f "$f" ] && cp "$f" "$rd/files/"; done
if [ "$op" = check ]; then
  kill $recd_pid; wait $recd_pid 2>/dev/null
  umount /mnt/recd-disk
  echo "power-cut: round $round checked"
  exit 0
fi

# --- 2. something to work on, acknowledged like the rest -------------------------------------------
# call NAME METHOD PATH [BODY]: one request; its reply (status and JSON) goes to the log on arrival.
call() {
  local name=$1 method=$2 path=$3 body=${4:-} t0 code reply
  t0=$(now)
  if [ -n "$body" ]; then
    code=$(curl -s -o "$work/reply" -w '%{http_code}' --unix-socket "$sock" -X "$method" -H 'Content-Type: application/json' \
           -d "$body" "http://recd$path")
  else
    code=$(curl -s -o "$work/reply" -w '%{http_code}' --unix-socket "$sock" -X "$method" "http://recd$path")
  fi
  reply=$(tr -d '\n' < "$work/reply" 2>/dev/null)
  note "{\"call\": \"$name\", \"method\": \"$method\", \"path\": \"$path\", \"status\": ${code:-0}, \"t0\": $t0, \"t1\": $(now), \"reply\": ${reply:-null}}"
}
# upload NAME PATH FILE: an import, the file's bytes as the body (as recctl sends them).
upload() {
  local name=$1 path=$2 file=$3 t0 code reply
  t0=$(now)
  code=$(curl -s -o "$work/reply" -w '%{http_code}' --unix-socket "$sock" -X POST -H 'Content-Type: application/octet-stream' \
         --data-binary @"$file" "http://recd$path")
  reply=$(tr -d '\n' < "$work/reply" 2>/dev/null)
  note "{\"call\": \"$name\", \"method\": \"POST\", \"path\": \"$path\", \"status\": ${code:-0}, \"t0\": $t0, \"t1\": $(now), \"reply\": ${reply:-null}}"
}
# The library, read with the sqlite3 CLI (python would take a second to start in the emulated guest).
sql() { sqlite3 "$data/catalog.sqlite" "$1" | tr '\n' ' '; }
ids() { sql "SELECT id FROM recording WHERE state = '$1' ORDER BY createdAt"; }
take() { # record a short take and stop it with THEN (save|keep)
  call setup-start POST /v1/record/start '{}'
  sleep 0.6
  call setup-stop POST /v1/record/stop "{\"then\": \"$1\"}"
}
if [ "$(sql 'SELECT count(*) FROM recording')" -gt 8 ]; then call setup-delete-all DELETE "/v1/recordings?confirm=all"; fi
read -ra ready <<< "$(ids ready)"
for _ in $(seq $((${#ready[@]} < 2 ? 2 - ${#ready[@]} : 0))); do take save; done
read -ra pending <<< "$(ids pending)"
[ ${#pending[@]} -eq 0 ] && take keep
read -ra ready <<< "$(ids ready)"
read -ra pending <<< "$(ids pending)"
if [ ${#ready[@]} -eq 0 ] || [ ${#pending[@]} -eq 0 ]; then
  echo "power-cut: the set-up failed (ready: ${ready[*]}, pending: ${pending[*]}); see acks.jsonl and recd.log" >&2
  exit 5
fi
victim=${ready[$((RANDOM % ${#ready[@]}))]}

# --- 3. the operation, and the cut DELAY_MS after it began ------------------------------------------
inflight() { # NAME METHOD PATH [BODY] [TARGET]: logged as begun, then sent in the background
  note "{\"begin\": \"$1\", \"path\": \"$3\", \"body\": ${4:-null}, \"target\": \"${5:-}\", \"t\": $(now)}"
  call "$1" "$2" "$3" "${4:-}" &
}
case $op in
  record)    # cut while recording: DELAY_MS of recording (the start is acknowledged first)
    call start POST /v1/record/start '{}'
    note "{\"begin\": \"record\", \"t\": $(now)}" ;;
  video)     # the same with a video take: camera (vivid) and microphone, through a media worker
    call start POST /v1/record/start '{"type": "video"}'
    note "{\"begin\": \"record\", \"t\": $(now)}" ;;
  pause)     # cut in a take that was paused: the resume in flight or done
    call start POST /v1/record/start '{}'
    sleep 0.8
    call pause POST /v1/record/pause
    sleep 0.4
    inflight resume POST /v1/record/resume ;;
  import)    # cut while an import is received, encoded (a WAV becomes AAC in a worker) and saved
    sox -n -r 48000 -c 1 -b 16 "$work/import.wav" synth 3 sine $((200 + round))   # new bytes each round
    note "{\"begin\": \"import\", \"path\": \"/v1/recordings/import\", \"body\": null, \"target\": \"imported in round $round\", \"t\": $(now)}"
    upload import "/v1/recordings/import?name=round-$round.wav&title=imported%20in%20round%20$round" "$work/import.wav" & ;;
  stop)      # cut while the stop (finalize, then save, keep or discard) is under way
    call start POST /v1/record/start '{}'
    sleep 1.$((RANDOM % 10))
    thens=(save keep discard)
    inflight stop POST /v1/record/stop "{\"then\": \"${thens[$((RANDOM % 3))]}\", \"title\": \"stopped in round $round\"}" ;;
  save)      inflight save POST "/v1/recordings/${pending[0]}/save" "{\"title\": \"saved in round $round\"}" "${pending[0]}" ;;
  edit)      inflight edit PATCH "/v1/recordings/$victim" "{\"notes\": \"edited in round $round\"}" "$victim" ;;
  played)    inflight played POST "/v1/recordings/$victim/played" "" "$victim" ;;
  play)      # a real playback (through snd-aloop) whose stop counts it
    call play POST "/v1/recordings/$victim/play" '{}'
    inflight playback-stop POST /v1/playback/stop "" "$victim" ;;
  delete)    inflight delete DELETE "/v1/recordings/$victim" "" "$victim" ;;
  discard)   inflight discard POST "/v1/recordings/${pending[0]}/discard" "" "${pending[0]}" ;;
  delete-all) inflight delete-all DELETE "/v1/recordings?confirm=all" ;;
  trim)      inflight trim POST "/v1/recordings/$victim/trim" '{"end": 0.3}' "$victim" ;;
  mark)      # a marker acknowledged, then one in flight; a second later recd copies the file with them as
             # chapters (ChapterPass, a lossless copy put in place as a trim's file is)
    call mark-acked POST "/v1/recordings/$victim/markers" "{\"time\": 0.2, \"label\": \"acked in round $round\"}"
    inflight mark POST "/v1/recordings/$victim/markers" "{\"time\": 0.4, \"label\": \"in flight in round $round\"}" "$victim" ;;
  *) echo "power-cut: unknown operation $op" >&2; exit 2 ;;
esac
sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
# A take cut mid-way: what had been captured just before the cut (the status reply's frame count),
# to measure what the cut lost against.
case $op in record|video|pause) call status GET /v1/status ;; esac
note "{\"cut\": $(now)}"
echo b > /proc/sysrq-trigger
sleep 10
echo "power-cut: the guest did not reset" >&2
exit 4
