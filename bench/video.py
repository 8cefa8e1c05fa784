#!/usr/bin/env python3
"""Video recording CPU: H.264 + AAC from real kernel drivers in the test VM, recd beside the ffmpeg CLI.

  recd      the daemon recording SECONDS of camera + microphone (`recctl record start --video`, then
            `record stop --save`) from vivid's /dev/video0 (320x180 YU12, 15 fps) and snd-aloop's
            hw:Loopback,1,0 (48 kHz mono, a 1 kHz tone played into hw:Loopback,0,0): utime+stime of
            the recd process from /proc between just before start and just after stop returns,
            divided by the recording's duration from the stop reply.
  ffmpeg    the ffmpeg CLI recording the same devices with the same settings (libx264 ultrafast,
            zerolatency, crf 23, a keyframe a second; AAC-LC 128 kbit/s; fragmented QuickTime,
            flush_packets) for SECONDS: user+sys of the whole process (/usr/bin/time), less the CPU of
            `ffmpeg -version` (process start + library loading), divided by ffprobe's duration of
            its output. Also shown whole, and with the faststart remux recd does at stop added.
ROUNDS rounds of (recd, ffmpeg), alternating, in one VM boot (bench/vm-video.sh does the guest side).
The guest is emulated (qemu TCG, ~15x slower than the host), which slows both alike: the ratio is the
figure, not the absolute times.

Writes its section of BENCHMARKS.md (not with --no-write or BENCH_NO_WRITE=1). Env: RECD_BIN_DIR (a
directory with recd and recctl), or RECD_BIN, RECCTL_BIN (default .build/release/..., built if
missing); RECORD_SECONDS (10), ROUNDS (3), KEEP_WORK=1 (keeps the guest's logs and last files),
VIDEO_BENCH_JSON (the video-bench.json of an earlier run: no VM run, only figures and section). Without
scripts/vm/run-in-vm.sh it says why and exits 0.
"""
import datetime, json, os, shutil, statistics, subprocess, sys, tempfile
from benchmarks_md import build_kind, write_section

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(REPO)
BIN_DIR = os.environ.get("RECD_BIN_DIR")
RECD = os.environ.get("RECD_BIN", os.path.join(BIN_DIR, "recd") if BIN_DIR else ".build/release/recd")
RECCTL = os.environ.get("RECCTL_BIN", os.path.join(BIN_DIR, "recctl") if BIN_DIR else ".build/release/recctl")
SECS = int(os.environ.get("RECORD_SECONDS", "10"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
NO_WRITE = "--no-write" in sys.argv[1:] or os.environ.get("BENCH_NO_WRITE") == "1"
RUN_IN_VM = os.path.join(REPO, "scripts", "vm", "run-in-vm.sh")   # the repository's own harness
TITLE = "## Video recording CPU (H.264 + AAC, vivid + snd-aloop in the VM)"
SIZE, FPS = "320x180", 15
GOAL = 1.0


def log(*a):
    print("[video]", *a, file=sys.stderr, flush=True)


REUSE = os.environ.get("VIDEO_BENCH_JSON")   # an earlier run's video-bench.json: no VM run, only the figures
if not REUSE and not os.access(RUN_IN_VM, os.X_OK):
    print(f"[video] skipped: no {RUN_IN_VM} (the VM harness of scripts/vm is missing); "
          "BENCHMARKS.md left as it is")
    sys.exit(0)
if not REUSE and not any(k in os.environ for k in ("RECD_BIN_DIR", "RECD_BIN", "RECCTL_BIN")):
    for b in (RECD, RECCTL):
        if not os.access(b, os.X_OK):
            subprocess.run(["swift", "build", "-c", "release"], check=True)
for b in (RECD, RECCTL):
    if not REUSE and not os.access(b, os.X_OK):
        sys.exit(f"{b} is not an executable")
# The guest runs the host's programs (its filesystem is the host's).
missing = [pkg for tool, pkg in (("sox", "sox"), ("ffmpeg", "ffmpeg"), ("ffprobe", "ffmpeg"), ("aplay", "alsa-utils"),
                                 ("python3", "python3")) if not shutil.which(tool)]
if not os.access("/usr/bin/time", os.X_OK):
    missing.append("time")
if missing:
    sys.exit(f"missing tools: apt-get install {' '.join(sorted(set(missing)))}")


def run_vm():
    """Runs bench/vm-video.sh in the VM; returns its video-bench.json."""
    work = tempfile.mkdtemp(prefix="recd-video-", dir="/tmp")   # VM_RW: not under /run or /dev/shm, no comma
    keep = os.environ.get("KEEP_WORK") == "1"
    try:
        tone = os.path.join(work, "tone.wav")
        subprocess.run(["sox", "-n", "-r", "48000", "-c", "1", "-b", "16", "-e", "signed-integer", tone,
                        "synth", str(ROUNDS * (2 * SECS + 60) + 60), "sine", "1000", "vol", "0.5"], check=True)
        env = dict(os.environ, VM_RW=work, VM_MODULES="vivid;snd-aloop",
                   VM_TIMEOUT=str(max(600, 120 + ROUNDS * (2 * SECS + 90))))
        log(f"recd: {RECD}; {ROUNDS} rounds of {SECS} s in the VM (about {30 + ROUNDS * (2 * SECS + 25)} s)")
        rc = subprocess.run([RUN_IN_VM, os.path.join(REPO, "bench/vm-video.sh"), os.path.abspath(RECD),
                             os.path.abspath(RECCTL), work, str(SECS), str(ROUNDS)], env=env).returncode
        if rc != 0:
            keep = True
            why = {124: "the VM timed out", 125: "the VM could not run the command"}.get(rc, "the guest script failed")
            sys.exit(f"run-in-vm.sh exited {rc}: {why}; logs in {work} (kept)")
        return json.load(open(os.path.join(work, "video-bench.json")))
    except BaseException:
        keep = True
        raise
    finally:
        if keep:
            log("work files kept in", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


data = json.load(open(REUSE)) if REUSE else run_vm()

# --- figures --------------------------------------------------------------------------------------
med = statistics.median
runs = data["runs"]
startup = med(r["startup"]["cpu"] for r in runs)
recd_rate = [r["recd"]["cpu"] / r["recd"]["duration"] for r in runs]
ff_whole = [r["ffmpeg"]["cpu"] / r["ffmpeg"]["duration"] for r in runs]
ff_net = [(r["ffmpeg"]["cpu"] - startup) / r["ffmpeg"]["duration"] for r in runs]
ff_remux = [(r["ffmpeg"]["cpu"] + r["remux"]["cpu"] - 2 * startup) / r["ffmpeg"]["duration"] for r in runs]
ratio = med(recd_rate) / med(ff_net)
ratio_whole = med(recd_rate) / med(ff_whole)
ratio_remux = med(recd_rate) / med(ff_remux)
verdict = "met" if ratio <= GOAL else "not met"
for r in runs:
    rr, ff = r["recd"], r["ffmpeg"]
    log(f"round {r['round']}: recd {rr['cpu']:.2f} s CPU / {rr['duration']:.2f} s "
        f"({rr['videoFrames']} frames, {rr['videoDroppedFrames']} dropped, {rr['overruns']} overruns); "
        f"ffmpeg {ff['cpu']:.2f} s CPU / {ff['duration']:.2f} s ({ff['frames']} frames, dup {ff['dup']}, "
        f"drop {ff['drop']}); remux {r['remux']['cpu']:.2f} s; ffmpeg -version {r['startup']['cpu']:.2f} s")
print(f"CPU s per recorded s (median of {len(runs)}): recd {med(recd_rate):.3f}; ffmpeg {med(ff_net):.3f} "
      f"(start-up subtracted), {med(ff_whole):.3f} whole, {med(ff_remux):.3f} with the remux")
print(f"recd / ffmpeg: {ratio:.2f}× (goal ≤ {GOAL:.1f}×: {verdict}); whole process {ratio_whole:.2f}×; "
      f"with the remux {ratio_remux:.2f}×")

# Anything that makes the comparison doubtful, said in the section.
odd = []
for r in runs:
    rr, ff = r["recd"], r["ffmpeg"]
    if rr["duration"] < 0.9 * SECS or ff["duration"] < 0.9 * SECS:
        odd.append(f"round {r['round']}: recorded {rr['duration']:.2f} s (recd), {ff['duration']:.2f} s (ffmpeg) of {SECS} s")
    for who, frames, dur in (("recd", rr["file"]["videoPackets"], rr["duration"]), ("ffmpeg", ff["file"]["videoPackets"], ff["duration"])):
        if dur and frames / dur < 0.9 * FPS:
            odd.append(f"round {r['round']}: {who} wrote {frames} video frames in {dur:.2f} s ({frames / dur:.1f} fps of {FPS}): it did not keep up")
    if (rr.get("videoDroppedFrames") or 0) or (rr.get("overruns") or 0):
        odd.append(f"round {r['round']}: recd lost {rr['videoDroppedFrames']} camera frames, {rr['overruns']} audio overruns")
    if ff.get("drop") or ff.get("xruns"):
        odd.append(f"round {r['round']}: ffmpeg dropped {ff['drop']} frames, {ff['xruns']} ALSA xruns")
for who, db in data["peakDb"].items():
    if db is None or db < -12:
        odd.append(f"{who}'s last file peaks at {db} dB: the tone did not reach it")
for o in odd:
    log("odd:", o)

# --- BENCHMARKS.md --------------------------------------------------------------------------------
if NO_WRITE:
    log("--no-write: BENCHMARKS.md left as it is")
    sys.exit(0)
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), os.uname().machine)
kind = build_kind(RECD)


def cell(xs):
    return f"{med(xs):.3f} | {' '.join(f'{x:.3f}' for x in xs)}"


def frames(xs):
    return " ".join(str(x) for x in xs)


recd_frames = frames(r["recd"]["file"]["videoPackets"] for r in runs)
ff_frames = frames(r["ffmpeg"]["file"]["videoPackets"] for r in runs)
recd_dur = " ".join(f"{r['recd']['duration']:.2f}" for r in runs)
ff_dur = " ".join(f"{r['ffmpeg']['duration']:.2f}" for r in runs)
lines = [
    TITLE, "",
    f"Written by `bench/video.py` on {datetime.date.today()} — host {os.cpu_count()} CPUs, {cpu}; guest: qemu TCG "
    f"(emulated, no KVM), {data['cpus']} vCPUs, kernel {data['uname']}; recd: {kind} build "
    f"(`{os.path.relpath(os.path.abspath(RECD), REPO)}`).", "",
    f"CPU seconds (user+sys) per recorded second of H.264 + AAC from real kernel drivers inside the test VM "
    f"(`scripts/vm/run-in-vm.sh`): vivid's `/dev/video0` at {SIZE} YU12 (yuv420p), {FPS} fps, and snd-aloop's "
    f"`hw:Loopback,1,0` at 48 kHz mono, with a 1 kHz tone played into `hw:Loopback,0,0` throughout. {len(runs)} round{'s' if len(runs) != 1 else ''} of "
    f"{SECS} s, recd and ffmpeg alternating in one boot. The guest is emulated (about 15× slower than the host), "
    "which slows both alike: **the ratio is the figure**; the absolute times are not the host's.", "",
    "Same settings on both sides: libx264 preset ultrafast, tune zerolatency, crf 23, a keyframe every second "
    f"(`-g {FPS}`), no B-frames; AAC-LC 128 kbit/s mono 48 kHz; fragmented QuickTime (`frag_keyframe+empty_moov+"
    "default_base_moof`, 1 s fragments, `flush_packets`). ffmpeg: `ffmpeg -thread_queue_size 64 -f v4l2 "
    f"-input_format yuv420p -video_size {SIZE} -framerate {FPS} -i /dev/video0 -thread_queue_size 64 -f alsa "
    "-sample_rate 48000 -channels 1 -i hw:Loopback,1,0 "
    f"-c:v libx264 -preset ultrafast -tune zerolatency -crf 23 -g {FPS} -pix_fmt yuv420p -c:a aac -b:a 128k "
    f"-movflags frag_keyframe+empty_moov+default_base_moof -frag_duration 1000000 -flush_packets 1 -t {SECS} out.mov`.", "",
    "How it is counted. recd: started fresh each round (its start-up not counted), then a 2 s take, not counted, "
    "which starts the media worker (the child process, `recd --media-worker`, that encodes and muxes) kept for "
    "the measured take, as a running daemon's takes find it; utime+stime of the daemon and its media workers from "
    "`/proc/PID/stat` just before `recctl record start --video` and just after `recctl record stop --save` "
    "returns, over the recording's `duration` in the stop reply. recctl is another process and not counted; "
    "recd's own idle work during the take is. ffmpeg: `/usr/bin/time` of the whole process, over ffprobe's "
    "duration of its output. Its start-up (process start and loading its libraries, read over 9p in the guest) "
    f"would count against it while recd's is excluded, so the CPU of `ffmpeg -version` (median {startup:.2f} s, "
    "after a warm-up run) is subtracted for the ratio; the whole-process figure is shown too.", "",
    f"| Recorder (CPU s per recorded s) | median of {len(runs)} | runs | recorded s | video frames | recd / this |",
    "|---|---:|---|---|---|---:|",
    f"| recd ({kind}) | {cell(recd_rate)} | {recd_dur} | {recd_frames} | 1.00× |",
    f"| ffmpeg CLI, `ffmpeg -version` CPU subtracted | {cell(ff_net)} | {ff_dur} | {ff_frames} | **{ratio:.2f}×** |",
    f"| ffmpeg CLI, whole process | {cell(ff_whole)} | | | {ratio_whole:.2f}× |",
    f"| ffmpeg CLI + `-c copy -movflags +faststart` remux (as recd at stop), start-ups subtracted | {cell(ff_remux)} | | | {ratio_remux:.2f}× |",
    "",
    f"Goal: recd ≤ {GOAL:.1f}× ffmpeg — {verdict} ({ratio:.2f}×).", "",
    "What recd does that the ffmpeg command does not, all inside the measured CPU: at stop it remuxes the "
    "fragmented file into a faststart file (stream copy), fsyncs it and renames it over the original, and "
    "probes it; it runs a level meter (20 readings/s, published as events) and builds the waveform on the "
    "sound, encodes the first frame as a JPEG poster, and writes the catalog (SQLite) at start and stop; and "
    "it serves the control socket. The third ffmpeg row adds the same remux to ffmpeg.",
]
own = [r["recd"]["ownCPU"] / r["recd"]["duration"] for r in runs if "ownCPU" in r["recd"]]
if own:
    lines += ["", f"Of recd's {med(recd_rate):.3f} CPU s per recorded s, {med(own):.3f} are recd's own process "
              "(capture from the camera and the card, meters, waveform, sending each frame and block to the "
              "worker, the control socket) and the rest its media worker's (converting, encoding, muxing, the "
              "remux at stop)."]
if odd:
    lines += ["", "Seen in this run: " + "; ".join(odd) + "."]
section = "\n".join(lines) + "\n"
print(section)
path = write_section(REPO, TITLE, section)
log("wrote", path)
