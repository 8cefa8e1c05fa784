#!/usr/bin/env bash
# The package in a clean Debian 12 root (issue 39): mmdebstrap makes a bookworm root from the Debian
# archive, apt installs recd_VERSION_amd64.deb there (its Depends resolved by apt), and inside, with no
# Swift anywhere: recd --version, the recd user and units as postinst left them, recd recording 2 s from
# ALSA's null device on a socket, recctl list showing it, a play, the web app and OpenAPI document served
# from /usr/share/recd, then apt remove and purge leaving the recording in place.
# Usage: scripts/deb-test.sh [recd_VERSION_amd64.deb]   (default: the newest one in the repository root)
# Needs root (mmdebstrap's root mode, chroot) and the Debian archive. Prints "N passed, 0 failed" last.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
deb="${1:-$(ls -t "$repo"/recd_*_amd64.deb 2>/dev/null | head -1)}"
[[ -n "$deb" && -f "$deb" ]] || { echo "deb-test: no recd_*_amd64.deb: run make deb first, or pass its path" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "deb-test: needs root (mmdebstrap --mode=root and chroot)" >&2; exit 2; }
command -v mmdebstrap >/dev/null || { echo "deb-test: mmdebstrap is missing: apt-get install mmdebstrap" >&2; exit 2; }

work="$(mktemp -d /tmp/recd-deb-test.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cp "$deb" "$work/"
deb_name="$(basename "$deb")"

# What runs inside the root, as root, after mmdebstrap has mounted /proc, /sys and /dev there.
cat > "$work/inside.sh" <<'INSIDE'
set -eu
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
passed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
fail() { echo "FAIL: $*" >&2; echo "$passed passed, 1 failed"; exit 1; }

cd /tmp
apt-get install -y -q --no-install-recommends "./$DEB" > apt-install.log 2>&1 || { cat apt-install.log; fail "apt install ./$DEB"; }
ok "apt install ./$DEB: $(grep -c '^Setting up' apt-install.log) packages set up"

if command -v swift >/dev/null || ls /usr/lib/swift /opt/swift >/dev/null 2>&1; then fail "a Swift toolchain is in the root"; fi
for b in recd recctl recd-media; do
  if ldd "/usr/bin/$b" | grep -E 'libswift|libFoundation|libdispatch|libBlocksRuntime|not found'; then
    fail "$b loads a Swift runtime library or misses one"
  fi
done
ok "no Swift in the root; recd, recctl and recd-media load only Debian's libraries"

v="$(recd --version)"; [ "$v" = "$VERSION" ] || fail "recd --version printed '$v', not $VERSION"
v="$(recctl --version)"; [ "$v" = "$VERSION" ] || fail "recctl --version printed '$v', not $VERSION"
ok "recd --version and recctl --version: $v"

getent passwd recd > /dev/null || fail "postinst made no recd user"
id -nG recd | grep -qw audio || fail "the recd user is not in the audio group: $(id -nG recd)"
[ -L /etc/systemd/user/sockets.target.wants/recd.socket ] || fail "the user socket is not enabled for every user"
[ ! -e /etc/systemd/system/multi-user.target.wants/recd.service ] || fail "the system service was enabled"
[ ! -e /etc/systemd/system/sockets.target.wants/recd.socket ] || fail "the system socket was enabled"
ok "recd user (groups: $(id -nG recd)); user recd.socket enabled for all users; system units not enabled"

mkdir -p /tmp/t
recd --data-dir /tmp/t/data --socket /tmp/t/recd.sock --capture-device null --playback-device null > /tmp/t/recd.log 2>&1 &
pid=$!
export RECD_SOCKET=/tmp/t/recd.sock
i=0
until recctl list > /dev/null 2>&1; do
  i=$((i + 1)); [ $i -lt 100 ] || { cat /tmp/t/recd.log; fail "recd did not answer on its socket within 10 s"; }
  kill -0 $pid 2>/dev/null || { cat /tmp/t/recd.log; fail "recd exited at start-up"; }
  sleep 0.1
done
ok "recd serves on /tmp/t/recd.sock"
# With the Swift runtime linked in, Swift concurrency must still run on NIO's event loops (else an
# idle recd wakes once a second for Dispatch's monitor), counted: each thread's context switches over
# 5 s (after start-up's chapter pass, whose 1 s Task.sleep is what put Swift 6.3's timers on Dispatch),
# per thread id so that a thread ending in the window does not take its earlier switches off the sum.
# (sh and sed only: the root has no awk.)
switches() {
  for t in /proc/$pid/task/*; do
    n=0; for v in $(sed -n 's/^.*ctxt_switches:[[:space:]]*//p' "$t/status" 2>/dev/null); do n=$((n + v)); done
    echo "${t##*/} $n"
  done
}
sleep 3; switches > /tmp/t/switches.0; sleep 5; switches > /tmp/t/switches.1
woke=0
while read -r tid n; do
  b="$(sed -n "s/^$tid //p" /tmp/t/switches.0)"; woke=$((woke + n - ${b:-0}))
done < /tmp/t/switches.1
[ "$woke" -le 2 ] || fail "the packaged recd, idle, switched $woke times in 5 s (Dispatch's monitor wakes it once a second)"
ok "Swift concurrency on NIO's event loops, as in the built recd: an idle recd does not wake ($woke context switches in 5 s)"

recctl record start || { cat /tmp/t/recd.log; fail "recctl record start"; }
sleep 2
recctl record stop --save --title "deb test" || { cat /tmp/t/recd.log; fail "recctl record stop --save"; }
recctl list > list.txt
cat list.txt
grep -q "deb test" list.txt || fail "recctl list does not show the recording"
n="$(ls /tmp/t/data/Recordings/ | grep -c '^audio_.*\.m4a$')"
[ "$n" = 1 ] || fail "$n audio files in the data directory, not 1"
ok "recorded 2 s from ALSA's null device; recctl list shows it"

id="$(ls /tmp/t/data/Recordings/ | sed -n 's/^audio_\(........\).*/\1/p')"
recctl play "$id" --wait || { cat /tmp/t/recd.log; fail "recctl play $id --wait"; }
ok "recctl play $id --wait"
# libavfilter is not linked: recd-media loads it (dlopen) for an enhanced copy alone, from the
# package Depends names.
if ldd /usr/bin/recd-media | grep -q libavfilter; then fail "recd-media links libavfilter (every worker would load it)"; fi
recctl enhance "$id" || { cat /tmp/t/recd.log; fail "recctl enhance $id"; }
[ -f "/tmp/t/data/Enhanced/$(ls /tmp/t/data/Recordings/ | sed -n 's/^audio_\(.*\)\.m4a$/\1/p').m4a" ] || fail "no enhanced copy in Enhanced/"
ok "recctl enhance $id: libavfilter loaded by the worker when asked, not linked"

curl -sS --fail --unix-socket /tmp/t/recd.sock http://recd/ -o index.html || fail "GET / (the web app)"
grep -qi '<html' index.html || fail "GET / returned no HTML page"
curl -sS --fail --unix-socket /tmp/t/recd.sock http://recd/v1/openapi.yaml -o openapi.yaml || fail "GET /v1/openapi.yaml"
cmp -s openapi.yaml /usr/share/recd/openapi.yaml || fail "/v1/openapi.yaml is not /usr/share/recd/openapi.yaml"
ok "the web app and the OpenAPI document are served from /usr/share/recd"

kill -TERM $pid; wait $pid || true
[ -f /usr/share/man/man1/recctl.1.gz ] && [ -f /usr/share/man/man1/recd.1.gz ] || fail "no man pages recctl(1) and recd(1)"
[ -f /usr/share/bash-completion/completions/recctl ] || fail "no bash completion for recctl"
ok "man pages and completions in place"

apt-get remove -y -q recd > remove.log 2>&1 || { cat remove.log; fail "apt remove recd"; }
[ ! -e /usr/bin/recd ] || fail "apt remove left /usr/bin/recd"
[ -f "$(ls /tmp/t/data/Recordings/audio_*.m4a)" ] || fail "apt remove took the recording"
apt-get purge -y -q recd > purge.log 2>&1 || { cat purge.log; fail "apt purge recd"; }
grep -q "Recordings were left where they are" purge.log || { cat purge.log; fail "purge did not say that recordings are kept"; }
[ ! -e /etc/systemd/user/sockets.target.wants/recd.socket ] || fail "purge left the user socket enabled"
[ -f "$(ls /tmp/t/data/Recordings/audio_*.m4a)" ] || fail "apt purge took the recording"
ok "apt remove and purge: units gone, the recording kept, purge says so"
echo "$passed passed, 0 failed"
INSIDE

version="$(dpkg-deb -f "$deb" Version)"
start=$(date +%s)
# --variant=apt: Essential and apt only; curl is the test's own client for the raw HTTP checks.
# The checks' output goes straight to $work/inside.log (the redirection is the host shell's).
if ! mmdebstrap --quiet --mode=root --variant=apt --include=curl \
  --customize-hook="upload '$work/$deb_name' '/tmp/$deb_name'" \
  --customize-hook="upload '$work/inside.sh' /tmp/inside.sh" \
  --customize-hook="chroot \"\$1\" env -i HOME=/root DEB='$deb_name' VERSION='$version' sh /tmp/inside.sh > '$work/inside.log' 2>&1 || true" \
  bookworm "$work/root" > "$work/mmdebstrap.log" 2>&1; then
  cat "$work/mmdebstrap.log" "$work/inside.log" 2>/dev/null
  echo "deb-test: mmdebstrap could not make the Debian 12 root (is the Debian archive reachable? see above)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
echo "deb-test: $deb_name in a clean bookworm root: $(( $(date +%s) - start )) s with mmdebstrap"
cat "$work/inside.log"
last="$(tail -1 "$work/inside.log")"
if [[ "$last" != *" passed, 0 failed" ]]; then
  [[ "$last" == *" passed, "*" failed" ]] || echo "0 passed, 1 failed"
  exit 1
fi
