#!/usr/bin/env bash
# Runs INSIDE the test VM (modules dm_mod, dm_log_writes, loop, ext4, snd-aloop): every flush point of
# one run of recd, instead of a few random power cuts (scripts/power-cut-replay.sh drives it).
# Usage: log-writes.sh RECD RECCTL OUTDIR TONE.wav [MAX_POINTS]
#   1. An ext4 filesystem on a loop device under dm-log-writes, which logs every write, flush and FUA
#      reaching the device, in order, to a second loop device; recd runs a fixed sequence on it (three
#      takes, a 4 s recording with marks every 0.25 s, stop and save, save, edit, played, trim, delete,
#      a take discarded, delete-all). Before each request and after each reply a mark goes into the
#      log (`dmsetup message ... mark`), with the time; the replies go to OUTDIR/acks.jsonl.
#   2. For every flush or FUA entry of the log (or MAX_POINTS of them, evenly spread; default all),
#      the disk as a power cut right after it would leave it is rebuilt (Tests/vm/log-writes-replay.py:
#      the filesystem before the run, with the logged writes up to that entry), mounted, and recd
#      started on it: what it shows goes to OUTDIR/round-<entry>/ (Tests/vm/power-cut.sh "check").
# The host (Tests/vm/power-cut-check.py --log-writes) holds each state against the replies
# acknowledged before that entry.
set -uo pipefail
recd=$1 recctl=$2 out=$3 tone=$4 max_points=${5:-0}
here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
export DM_DISABLE_UDEV=1   # no udev in the guest: dmsetup makes /dev/mapper/lw itself, waits for no one
w=$(mktemp -d /tmp/recd-lw.XXXXXX)
now() { echo "${EPOCHREALTIME}"; }
note() { printf '%s\n' "$1" >> "$out/acks.jsonl"; }
mark() { dmsetup message lw 0 mark "$1:$(now)"; }

# --- 1. the run, logged ----------------------------------------------------------------------------
truncate -s 96M "$w/data.img" && mkfs.ext4 -q -F "$w/data.img" && cp "$w/data.img" "$w/base.img" || exit 2
truncate -s 768M "$w/log.img"
dev=$(losetup -f --show "$w/data.img") && logdev=$(losetup -f --show "$w/log.img") || exit 2
dmsetup create lw --table "0 $(blockdev --getsz "$dev") log-writes $dev $logdev" || exit 2
mkdir -p /mnt/recd-disk
mount -t ext4 /dev/mapper/lw /mnt/recd-disk || exit 2
data=/mnt/recd-disk/data
sock=$w/recd.sock
aplay -q -D hw:Loopback,0,0 "$tone" &
player=$!
"$recd" --data-dir "$data" --socket "$sock" --capture-device hw:Loopback,1,0 --playback-device plughw:Loopback,0,1 \
  --min-free-mb 10 --log-level info > "$out/recd-run.log" 2>&1 &
recd_pid=$!
for _ in $(seq 600); do curl -sf --unix-socket "$sock" http://recd/v1/status >/dev/null && break; sleep 0.05; done
mark ready

n=0
# op NAME METHOD PATH [BODY] [TARGET]: marks b<n> and logs "begin", sends, logs the reply, marks a<n>.
op() {
  local name=$1 method=$2 path=$3 body=${4:-} target=${5:-} t0 code reply
  n=$((n + 1))
  mark "b$n"
  t0=$(now)
  note "{\"n\": $n, \"begin\": \"$name\", \"path\": \"$path\", \"body\": ${body:-null}, \"target\": \"$target\", \"t\": $t0}"
  if [ -n "$body" ]; then
    code=$(curl -s -o "$w/reply" -w '%{http_code}' --unix-socket "$sock" -X "$method" -H 'Content-Type: application/json' \
           -d "$body" "http://recd$path")
  else
    code=$(curl -s -o "$w/reply" -w '%{http_code}' --unix-socket "$sock" -X "$method" "http://recd$path")
  fi
  reply=$(tr -d '\n' < "$w/reply" 2>/dev/null)
  note "{\"n\": $n, \"call\": \"$name\", \"method\": \"$method\", \"path\": \"$path\", \"status\": ${code:-0}, \"t0\": $t0, \"t1\": $(now), \"reply\": ${reply:-null}}"
  mark "a$n"
  last=$reply
}
# A short take's 0.6 s, with marks on the way: they bound when each flush of the take happened
# (without them a busy guest can stretch the gap between two marks past the loss limit).
take_time() { sleep 0.3; mark tick; sleep 0.3; mark tick; }
# The id of the recording in a reply (the first "id" in it: the recording's own).
id_of() { grep -o '"id":"[0-9A-F-]*"' <<< "$1" | head -1 | cut -d'"' -f4; }
op start POST /v1/record/start '{}'; a=$(id_of "$last"); take_time; op stop POST /v1/record/stop '{"then": "save"}'
op start POST /v1/record/start '{}'; b=$(id_of "$last"); take_time; op stop POST /v1/record/stop '{"then": "save"}'
op start POST /v1/record/start '{}'; c=$(id_of "$last"); take_time; op stop POST /v1/record/stop '{"then": "keep"}'
op start POST /v1/record/start '{}'
for i in $(seq 16); do sleep 0.25; mark "tick"; done
op stop POST /v1/record/stop '{"then": "save", "title": "the long take"}'
op save POST "/v1/recordings/$c/save" '{"title": "saved"}' "$c"
op edit PATCH "/v1/recordings/$a" '{"notes": "edited"}' "$a"
op played POST "/v1/recordings/$a/played" "" "$a"
op trim POST "/v1/recordings/$b/trim" '{"end": 0.3}' "$b"
op delete DELETE "/v1/recordings/$b" "" "$b"
op start POST /v1/record/start '{}'; e=$(id_of "$last"); take_time; op stop POST /v1/record/stop '{"then": "keep"}'
op discard POST "/v1/recordings/$e/discard" "" "$e"
op delete-all DELETE "/v1/recordings?confirm=all"
sleep 0.5
mark end
kill $recd_pid $player 2>/dev/null; wait $recd_pid 2>/dev/null
umount /mnt/recd-disk
dmsetup remove lw
losetup -d "$dev" "$logdev"

# --- 2. every flush point, replayed and recovered ----------------------------------------------------
python3 "$here/log-writes-replay.py" "$w/log.img" list > "$out/entries.jsonl" || exit 2
# The points: flush and FUA entries from the "ready" mark to the "end" mark.
python3 - "$out/entries.jsonl" "$max_points" > "$w/points" <<'EOF'
import json, sys
entries = [json.loads(l) for l in open(sys.argv[1])]
start = next(e["index"] for e in entries if e["kind"] == "mark" and e["mark"].startswith("ready"))
end = next(e["index"] for e in entries if e["kind"] == "mark" and e["mark"].startswith("end"))
points = [e["index"] for e in entries if e["kind"] in ("flush", "fua") and start < e["index"] < end]
limit = int(sys.argv[2])
if limit and len(points) > limit:
    points = [points[round(i * (len(points) - 1) / (limit - 1))] for i in range(limit)]
print(" ".join(map(str, sorted(set(points)))))
EOF
read -ra points < "$w/points"
echo "log-writes: ${#points[@]} flush points to check" >&2
previous=
for p in "${points[@]}"; do
  python3 "$here/log-writes-replay.py" "$w/log.img" replay "$w/base.img" "$w/replay.img" "$p" $previous || exit 2
  previous=$p
  cp "$w/replay.img" "$w/snap.img"
  loop=$(losetup -f --show "$w/snap.img")
  RECD_PC_DEVICE=$loop "$here/power-cut.sh" "$recd" "$recctl" "$out" "$tone" "$p" check 0 0 > /dev/null 2>> "$out/points.log" ||
    echo "log-writes: point $p: the check failed ($?)" >> "$out/points.log"
  losetup -d "$loop"
done
echo "log-writes: done" >&2
