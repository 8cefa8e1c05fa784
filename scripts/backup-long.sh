#!/usr/bin/env bash
# Backups end to end at length (issue 48): a library of MEMOS memos (default 1000, about 2 MB each:
# 2-minute mono AAC, made and imported by bench/backup.py --make-library) backed up through recd
# (`recctl backup init`, which makes the repository and backs up; recd's repository check runs after
# it), then changed (notes edited, plays counted, one memo deleted) and backed up again (`recctl
# backup now --wait`); the data directory wiped; `recctl restore --into` the same path (no daemon);
# a new recd started on it. Every recording's row (`recctl --json list`: every field, title, notes
# and playCount among them) and every file's sha256 must equal what the first recd had.
#
# Usage: scripts/backup-long.sh [MEMOS]
#   RECD_BIN_DIR=DIR  recd, recd-media and recctl to test (default .build/debug; built if missing)
#   KEEP_WORK=1       keeps the work folder (library, repository, listings, logs)
# Exit status: 0 everything came back equal, 1 a difference or a failed step, 2 something is missing here.
# Needs restic, ffmpeg, curl, sqlite3, sha256sum and python3 (scripts/install-deps.sh --test).
# Disk: about 3× the library (library, repository, restore). 1,000 memos: about 15–25 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)
n=${1:-${MEMOS:-1000}}
bin=$(cd "${RECD_BIN_DIR:-.build/debug}" 2>/dev/null && pwd -P) || bin=$root/.build/debug
if [ ! -x "$bin/recd" ] || [ ! -x "$bin/recctl" ] || [ ! -x "$bin/recd-media" ]; then
  swift build --product recd && swift build --product recctl && swift build --product recd-media || exit 2
  bin=$root/.build/debug
fi
for tool in restic ffmpeg ffprobe curl sqlite3 sha256sum python3; do
  command -v $tool >/dev/null || { echo "backup-long: $tool is missing (scripts/install-deps.sh --test)" >&2; exit 2; }
done
recctl=$bin/recctl

work=$(mktemp -d /tmp/recd-backup-long.XXXXXX)
data=$work/data sock=$work/recd.sock repo=$work/repo pw=$work/password
(umask 077; echo "the long backup test's password" > "$pw")
recd_pid=
cleanup() {
  if [ -n "$recd_pid" ] && kill -0 "$recd_pid" 2>/dev/null; then kill "$recd_pid"; wait "$recd_pid" 2>/dev/null || true; fi
  if [ "${KEEP_WORK:-}" = 1 ]; then echo "backup-long: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() { echo "backup-long: FAILED: $*" >&2; echo "(recd's log: $work/recd.log; KEEP_WORK=1 keeps it)" >&2; exit 1; }
say() { echo "backup-long: [$(date +%T)] $*"; }

start_recd() {   # start_recd [extra recd options]: recd on $data, waits until it answers
  "$bin/recd" --data-dir "$data" --socket "$sock" --capture-device null --playback-device null --transcribe off \
    --log-level info "$@" >>"$work/recd.log" 2>&1 &
  recd_pid=$!
  for _ in $(seq 600); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$sock" http://recd/v1/status)" = 200 ] && return 0
    kill -0 "$recd_pid" 2>/dev/null || fail "recd exited at start-up"
    sleep 0.1
  done
  fail "recd did not answer within 60 s"
}
stop_recd() { kill "$recd_pid"; wait "$recd_pid" 2>/dev/null || true; recd_pid=; }

# Every recording's row (all pages of `recctl --json list`, sorted by id) and its file's sha256.
dump() {   # dump OUT.json
  python3 - "$recctl" "$sock" "$data" "$1" <<'EOF'
import json, subprocess, sys
recctl, sock, data, out = sys.argv[1:]
rows, offset = [], 0
while True:
    page = json.loads(subprocess.run([recctl, "--socket", sock, "--json", "list", "--limit", "1000", "--offset", str(offset)],
                                     capture_output=True, text=True, check=True).stdout)
    rows += page["recordings"]
    offset += len(page["recordings"])
    if not page["recordings"] or offset >= page["total"]:
        break
rows.sort(key=lambda r: r["id"])
files = [f"{data}/{r['file']}" for r in rows]
sums = {}
for i in range(0, len(files), 200):
    out_ = subprocess.run(["sha256sum", "--", *files[i:i + 200]], capture_output=True, text=True, check=True).stdout
    for line in out_.splitlines():
        digest, path = line.split(None, 1)
        sums[path.lstrip("*")] = digest
for r, f in zip(rows, files):
    r["sha256"] = sums[f]
json.dump(rows, open(out, "w"), indent=1, sort_keys=True)
print(len(rows))
EOF
}

backup_status() { "$recctl" --socket "$sock" --json backup status; }
field() {   # field EXPRESSION: a Python expression over s (the backup status), printed
  python3 -c "import json, sys; s = json.load(sys.stdin); print($1)"
}

say "$n memos into $data (bench/backup.py --make-library)"
RECD_BIN_DIR=$bin python3 bench/backup.py --make-library "$data" --memos "$n" 2>&1 | sed 's/^/  /'
start_recd --backup "$repo" --backup-password-file "$pw" --backup-delay 86400
say "recctl backup init (makes the repository, then backs up)"
t0=$SECONDS
"$recctl" --socket "$sock" backup init >/dev/null || fail "recctl backup init"
while :; do
  s=$(backup_status) || fail "recctl backup status"
  [ "$(field 's.get("lastError") is not None' <<<"$s")" = True ] && fail "the first backup: $(field 's["lastError"]["message"]' <<<"$s")"
  [ "$(field 's.get("lastSuccess") is not None' <<<"$s")" = True ] && break
  [ $((SECONDS - t0)) -lt 7200 ] || fail "the first backup took more than 2 hours"
  sleep 1
done
say "first snapshot $(field 's["lastSuccess"]["snapshotID"]' <<<"$s"): $(field 's["lastSuccess"]["recordings"]' <<<"$s") recordings, $(field 's["lastSuccess"]["totalBytes"] // 1000000' <<<"$s") MB, in $((SECONDS - t0)) s"
[ "$(field 's["lastSuccess"]["recordings"]' <<<"$s")" = "$n" ] || fail "the first snapshot holds $(field 's["lastSuccess"]["recordings"]' <<<"$s") recordings, not $n"

# What changed after the first snapshot must be in the one restored (the newest).
ids=$("$recctl" --socket "$sock" --json list --limit 1000 | python3 -c 'import json, sys; print(" ".join(r["id"] for r in json.load(sys.stdin)["recordings"]))')
read -r -a ids <<<"$ids"
(( ${#ids[@]} >= 3 )) || fail "the library lists ${#ids[@]} recordings"
"$recctl" --socket "$sock" edit "${ids[0]}" --notes "edited after the first snapshot" >/dev/null || fail "recctl edit"
for _ in 1 2 3 4; do "$recctl" --socket "$sock" played "${ids[1]}" >/dev/null || fail "recctl played"; done
"$recctl" --socket "$sock" delete "${ids[2]}" --yes >/dev/null || fail "recctl delete"
say "edited, played and deleted one memo each; recctl backup now --wait"
t0=$SECONDS
"$recctl" --socket "$sock" backup now --wait >/dev/null || fail "recctl backup now --wait: $("$recctl" --socket "$sock" backup status)"
s=$(backup_status)
say "second snapshot $(field 's["lastSuccess"]["snapshotID"]' <<<"$s") in $((SECONDS - t0)) s; added $(field 's["lastSuccess"]["addedBytes"] // 1000' <<<"$s") kB"
[ "$(field '(s.get("lastCheck") or {}).get("ok")' <<<"$s")" = True ] || fail "recd's check of the repository: $(field 's.get("lastCheck")' <<<"$s")"
say "recd's repository check: $(field 's["lastCheck"]["message"]' <<<"$s")"
snapshots=$("$recctl" --socket "$sock" --json backup list | field 'len(s["snapshots"])')
[ "$snapshots" = 2 ] || fail "recctl backup list shows $snapshots snapshots, not 2"
count=$(dump "$work/before.json")
[ "$count" = $((n - 1)) ] || fail "the library lists $count recordings, not $((n - 1))"
stop_recd

say "the disk dies: $data removed; recctl restore --into $data"
rm -rf "$data"
t0=$SECONDS
out=$("$recctl" restore --into "$data" --repository "$repo" --password-file "$pw") || fail "recctl restore: $out"
say "$(head -1 <<<"$out") in $((SECONDS - t0)) s"
grep -q "restored $((n - 1)) recording(s)" <<<"$out" || fail "recctl restore said: $out"

say "a new recd on the restored data directory"
start_recd
count=$(dump "$work/after.json")
stop_recd
python3 - "$work/before.json" "$work/after.json" <<'EOF' || fail "the restored library differs from the one backed up"
import json, sys
before, after = (json.load(open(p)) for p in sys.argv[1:])
b, a = {r["id"]: r for r in before}, {r["id"]: r for r in after}
problems = [f"{i}: not restored ({b[i]['title']})" for i in sorted(b.keys() - a.keys())]
problems += [f"{i}: restored but never backed up ({a[i]['title']})" for i in sorted(a.keys() - b.keys())]
for i in sorted(b.keys() & a.keys()):
    for k in sorted(b[i].keys() | a[i].keys()):
        if b[i].get(k) != a[i].get(k):
            problems.append(f"{i} ({b[i]['title']}): {k} {b[i].get(k)!r} -> {a[i].get(k)!r}")
for p in problems[:30]:
    print("  " + p, file=sys.stderr)
if problems:
    print(f"  {len(problems)} difference(s)", file=sys.stderr)
    sys.exit(1)
edited = next(r for r in after if r["notes"] == "edited after the first snapshot")
print(f"  {len(after)} recordings: every row (all {len(after[0])} fields: title, notes, playCount, … and the file's sha256) equal; "
      f"the edit after the first snapshot is there ({edited['title']})")
EOF
say "PASSED: $((n - 1)) recordings backed up, wiped, restored and equal"
