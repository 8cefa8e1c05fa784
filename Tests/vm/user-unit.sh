#!/usr/bin/env bash
# Runs INSIDE the test VM (scripts/vm/run-in-vm.sh): recd's user unit (systemd/recd.service) under a
# real systemd user manager (`systemd --user`, the one Debian 12 ships) for a user made here, as
# `systemctl --user enable --now recd.socket` would run it: socket activation, READY=1, the sandbox the
# unit asks for, then a take from snd-aloop and an import through the media worker inside it.
# The guest has no systemd as PID 1, so this script gives the user manager what logind and PID 1 would:
# a delegated cgroup (cgroup2), /run/user/UID, and /run/systemd/system (sd_booted()).
# Usage: user-unit.sh RECD RECCTL OUTDIR TONE.wav   (the host puts OUTDIR/import-me.m4a and hostile.wav there:
# the ffmpeg CLI took 9 s in the emulated guest for a 2 s file)
# Writes OUTDIR/security.txt (systemd-analyze security --user, asked of the running manager),
# OUTDIR/status.txt (recd's /proc status: NoNewPrivs, Seccomp, capabilities),
# OUTDIR/uid_map.txt, OUTDIR/root-status.txt (root's recctl status), OUTDIR/take.json, OUTDIR/import.json,
# OUTDIR/list.json, OUTDIR/pulse.json and pulse.m4a (a take through the user's PulseAudio) and
# OUTDIR/recd.log for the host to check; OUTDIR/elsewhere.log and .code: a start with a data folder
# the unit does not let recd write; with OUTDIR/hook/escape-hook.so, hostile-*.txt/json and kernel.txt
# (hostile code in the unit's media worker, its results in recd.log).
set -Eeuo pipefail
# The guest's stage 2 runs chrooted into its root, and the kernel refuses a user namespace (which the
# unit's PrivateUsers=yes makes) to a chrooted process. So first what switch_root does at boot, in a
# mount namespace of our own: the root moved onto the initramfs's "/" and entered, chroot no more.
if [ -z "${RECD_VM_SWITCHED_ROOT:-}" ] && ! unshare -U true 2>/dev/null; then
  script=$(readlink -f "$0")
  cd /
  exec chroot /proc/1/root /bin/busybox unshare -m /bin/busybox sh -c \
    '/bin/busybox mount --make-rprivate / && cd /newroot && /bin/busybox mount --move . / &&
     exec /bin/busybox chroot . /usr/bin/env RECD_VM_SWITCHED_ROOT=1 /bin/bash "$0" "$@"' "$script" "$@"
fi
recd=$1 recctl=$2 out=$3 tone=$4
# Each command with the guest's clock, for the host's summary of the slowest steps (VMRun.timing).
exec {trace}>> "$out/trace.txt"; BASH_XTRACEFD=$trace; PS4='+ ${EPOCHREALTIME} '; set -x
repo=$(cd "$(dirname "$0")/../.." && pwd)
user=recdunit
useradd -m -s /bin/bash "$user"
uid=$(id -u "$user")
home=$(getent passwd "$user" | cut -d: -f6)
runtime=/run/user/$uid
as_user() { runuser -u "$user" -- env XDG_RUNTIME_DIR="$runtime" HOME="$home" "$@"; }
chmod 0777 "$out"

# The binaries where the user can read them (the host's build folder may be root's alone).
bindir=/opt/recd/bin
mkdir -p "$bindir"
cp "$recd" "$(dirname "$recd")/recd-media" "$recctl" "$bindir/"
# The transcriber where an installed recd looks for it (PREFIX/lib/recd/transcribe), bound rather than
# copied (600 MB); the bind makes it readable whatever the host's folders above it allow.
# Only when asked (OUTDIR/transcribe.flag): in the emulated guest the model's start takes two minutes.
if [ -e "$out/transcribe.flag" ] && [ -e "$repo/.build/transcribe/.installed" ]; then
  mkdir -p /opt/recd/lib/recd/transcribe
  mount --bind "$repo/.build/transcribe" /opt/recd/lib/recd/transcribe
fi

# What PID 1 and logind give a user manager on a booted system.
# PID 1 makes /run/systemd/system (what sd_booted() looks for) and /run/systemd/unit-root (where a
# manager builds a unit's namespace); logind mounts /run/user/UID.
mkdir -p /run/systemd/system && mkdir -p -m 0400 /run/systemd/unit-root
mkdir -p "$runtime" && mount -t tmpfs -o mode=0700,uid="$uid",gid="$uid" tmpfs "$runtime"
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 cgroup2 /sys/fs/cgroup
cg=/sys/fs/cgroup/user.slice/user-$uid.slice/user@$uid.service
mkdir -p "$cg"
chown "$user:" "$cg" "$cg/cgroup.procs" "$cg/cgroup.subtree_control" "$cg/cgroup.threads"
# snd-aloop's nodes are root's alone here (no udev, no logind ACLs): the user's, as a seat's would be.
chmod 0666 /dev/snd/*

# The units as `make install` writes them, in the user's unit folder.
units=$home/.config/systemd/user
mkdir -p "$units"
sed -e "s|@BINDIR@|$bindir|g" -e "s|@DATADIR@|/usr/local/share|g" "$repo/systemd/recd.service" > "$units/recd.service"
cp "$repo/systemd/recd.socket" "$units/recd.socket"
# Only for the test: recd's log into OUTDIR (there is no journald here), and the loopback as its microphone.
mkdir -p "$units/recd.service.d"
printf '[Service]\nStandardOutput=append:%s/recd.log\nStandardError=inherit\nExecStart=\nExecStart=%s/recd --data-dir %%h/.local/share/recd --capture-device hw:Loopback,1,0 --log-level debug\n' \
  "$out" "$bindir" > "$units/recd.service.d/test.conf"
chown -R "$user:" "$home/.config"

manager_log=$out/user-manager.log
# Into its cgroup as root (moving a process needs the source cgroup's rights), then the user's manager.
sh -c "echo \$\$ > $cg/cgroup.procs; exec runuser -u $user -- env XDG_RUNTIME_DIR=$runtime HOME=$home SYSTEMD_LOG_TARGET=console /lib/systemd/systemd --user --log-target=console --log-level=${VM_MANAGER_LOG_LEVEL:-info}" \
  > "$manager_log" 2>&1 &
manager=$!
# On a failure, what the manager knows of the units (there is no journal to read afterwards).
trap 'as_user systemctl --user --no-pager status recd.service recd.socket > "$out/units-status.txt" 2>&1 || true' ERR
trap 'kill "$manager" 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -S "$runtime/systemd/private" ] && break; sleep 0.1; done
[ -S "$runtime/systemd/private" ] || { echo "vm: the user manager did not start" >&2; cat "$manager_log" >&2; exit 1; }

as_user systemctl --user enable --now recd.socket
sock=$runtime/recd/recd.sock
ctl() { as_user "$bindir/recctl" --socket "$sock" "$@"; }
# The first connection starts recd (socket activation); the reply comes once it is READY.
ctl status > "$out/status-reply.txt"
as_user systemctl --user is-active recd.service
pid=$(as_user systemctl --user show -p MainPID --value recd.service)
grep -E '^(Uid|Gid|NoNewPrivs|Seccomp|CapBnd|CapEff):' "/proc/$pid/status" > "$out/status.txt"
cat "/proc/$pid/uid_map" > "$out/uid_map.txt"
as_user systemd-analyze security --user recd.service > "$out/security.txt" 2>&1 || true
# Root's client: inside the unit's user namespace root is unmapped ("nobody"), so it is refused.
"$bindir/recctl" --socket "$sock" status > "$out/root-status.txt" 2>&1 && echo 0 > "$out/root-status.code" \
  || echo $? > "$out/root-status.code"

# take NAME PLAYER...: a 2 s take while PLAYER plays the tone into the microphone; recctl's replies
# in OUTDIR/NAME-start.json and NAME.json.
take() {
  local name=$1; shift
  "$@" 2>/dev/null &
  local player=$!
  sleep 0.5
  ctl --json record start > "$out/$name-start.json"
  sleep 2
  ctl --json record stop > "$out/$name.json"
  kill "$player" 2>/dev/null || true
}

# A take from the loopback (a tone played into its other end), and an import: both through a media
# worker started inside the unit's sandbox.
take take aplay -q -D hw:Loopback,0,0 "$tone"
install -m 0644 -o "$user" -g "$user" "$out/import-me.m4a" "$home/import-me.m4a"
ctl --json import "$home/import-me.m4a" > "$out/import.json"
ctl --json list > "$out/list.json"
# The import's transcript, made by the transcriber (.build/transcribe, found beside recd) inside the unit's
# sandbox: seccomp, the user namespace, the read-only system and home, Landlock. (Its sound is a tone:
# the voice filter finds no speech, so the work is the model's start.)
if [ -e "$out/transcribe.flag" ] && [ -e "$repo/.build/transcribe/.installed" ]; then
  id=$(jq -er .id "$out/import.json")
  start=$(date +%s)
  for _ in $(seq 600); do
    ctl --json transcript "$id" > "$out/transcript.json" 2>&1 || true
    grep -q '"state":"pending"' "$out/transcript.json" || break
    sleep 0.5
  done
  echo $(( $(date +%s) - start )) > "$out/transcript.seconds"
fi

# A desktop's way in: the user's PulseAudio (as PipeWire's pulse server would be) through ALSA's pulse
# plugin: its socket in the runtime directory, its cookie in the home recd may only read.
as_user systemctl --user stop recd.service
# Debian's pulseaudio package enables pulseaudio.socket for every user manager: the server starts at
# the first client, as on a desktop. A null sink is the microphone; what is played into it is heard.
as_user pactl load-module module-null-sink sink_name=mic rate=48000 channels=1 > /dev/null
sed -i 's|--capture-device hw:Loopback,1,0|--capture-device pulse:mic.monitor|' "$units/recd.service.d/test.conf"
as_user systemctl --user daemon-reload
take pulse as_user paplay --latency-msec=10 -d mic "$tone"
cp "$home/.local/share/recd/$(jq -er .recording.file "$out/pulse.json")" "$out/pulse.m4a"
as_user systemctl --user stop recd.service

# Hostile code in the unit's media workers (WorkerEscapeTests' hook, built by the host in OUTDIR/hook):
# an import's, a trim's and a take's job process
# on Debian 12's kernel (Landlock ABI 2: no TCP rules, no signal or abstract-socket scopes) and inside
# the unit, the worker's own Landlock and seccomp must stop it. Its line of results goes to recd.log.
if [ -e "$out/hook/escape-hook.so" ]; then
  mkdir -p /opt/recd/lib && install -m 0644 "$out/hook/escape-hook.so" /opt/recd/lib/escape-hook.so
  install -d -m 0700 -o "$user" -g "$user" "$home/private"
  install -m 0600 -o "$user" -g "$user" /dev/null "$home/private/id_ed25519"
  echo "PRIVATE KEY" > "$home/private/id_ed25519"
  python3 -c 'import socket,time
a=socket.socket(socket.AF_UNIX); a.bind("\0recd-vm-hostile"); a.listen()
t=socket.socket(); t.bind(("127.0.0.1",47123)); t.listen(); time.sleep(300)' &
  listeners=$!
  data=$home/.local/share/recd
  printf '[Service]\nEnvironment=LD_PRELOAD=/opt/recd/lib/escape-hook.so HOSTILE_SECRET=%s HOSTILE_CATALOG=%s HOSTILE_RECORDINGS=%s HOSTILE_RECORDING=%s HOSTILE_RECD_SOCKET=%s HOSTILE_PULSE_SOCKET=%s HOSTILE_ABSTRACT=recd-vm-hostile HOSTILE_TCP_PORT=47123 HOSTILE_OTHER_PID=%s\n' \
    "$home/private/id_ed25519" "$data/catalog.sqlite" "$data/Recordings" \
    "$data/$(jq -er .recording.file "$out/pulse.json")" \
    "$sock" "$runtime/pulse/native" \
    "$(pgrep -u "$user" -x pulseaudio | head -n 1)" > "$units/recd.service.d/hostile.conf"
  as_user systemctl --user daemon-reload
  install -m 0644 -o "$user" -g "$user" "$out/hostile.wav" "$home/hostile.wav"
  ctl --json import "$home/hostile.wav" > "$out/hostile-import.json"
  # The imported file's packets parsed again by a library job (its trim), and a take finalized by the
  # process its take's worker forks for the job: each walled in to its own files on this kernel too.
  ctl --json trim "$(jq -er .id "$out/hostile-import.json")" \
    --start 0.2 --end 0.8 > "$out/hostile-trim.json"
  # (The user's PulseAudio may have exited idle since the pulse take, and its null sink with it.)
  as_user pactl list short sinks | grep -q '[[:space:]]mic[[:space:]]' \
    || as_user pactl load-module module-null-sink sink_name=mic rate=48000 channels=1 > /dev/null
  take hostile-take as_user paplay --latency-msec=10 -d mic "$tone"
  cp "$home/private/id_ed25519" "$out/hostile-secret-after.txt"
  ls "$data/Recordings" > "$out/hostile-recordings.txt"
  uname -r > "$out/kernel.txt"
  kill "$listeners" 2>/dev/null || true
  as_user systemctl --user stop recd.service
  rm "$units/recd.service.d/hostile.conf"
  as_user systemctl --user daemon-reload
fi
as_user systemctl --user stop recd.socket
# A data folder outside the one the unit may write (ProtectHome=read-only), without a drop-in that names
# it: recd refuses to start, saying which folder, why, and the drop-in that would let it.
sed -i -e 's|--data-dir %h/.local/share/recd|--data-dir %h/Recordings-elsewhere|' -e "s|append:$out/recd.log|append:$out/elsewhere.log|" \
  "$units/recd.service.d/test.conf"
as_user systemctl --user daemon-reload
if as_user systemctl --user start recd.service 2>/dev/null; then echo 0 > "$out/elsewhere.code"; else echo $? > "$out/elsewhere.code"; fi
[ -e "$home/Recordings-elsewhere" ] && echo yes > "$out/elsewhere.created"
echo "vm: done"
