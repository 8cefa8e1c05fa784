#!/usr/bin/env python3
"""Meters and waveforms: what they cost, beside the work they ride on.

  share of capture   recd-bench (a non-installed executable of the package) runs recd's LevelMeter
                     (1920-frame periods, as the capture thread) and WaveformBuilder (16384-frame
                     blocks, as the encoder thread) over 60 s of 48 kHz stereo, on the thread CPU
                     clock; beside it, the CPU recd itself spends recording 10 s of 48 kHz stereo from
                     a paced ALSA device (utime+stime of the recd process and its media workers from
                     /proc, start to stop, meters published to a listening `recctl events`). Share = metering per 10 s /
                     recd per 10 s. Goal: <= 3%.
  1-hour waveform    recd computing the waveform of a 1-hour AAC file it has no waveform for (first
                     GET /v1/recordings/{id}/waveform: decode + build + store, and the loudness from the
                     same decode; Server-Timing), beside `ffmpeg -i FILE -f null -` (decode only) and
                     `ffmpeg -i FILE -af ebur128=peak=true -f null -` (decode + loudness) on the same
                     file. Median of 3 each.

Writes its section of BENCHMARKS.md. Env: RECD_BIN, RECCTL_BIN, BENCH_BIN (default .build/release/...;
built with `swift build -c release` first, which is quick when they are up to date), RUNS (3),
HOUR_SECONDS (3600), KEEP_WORK.
"""
import datetime, json, os, resource, shutil, statistics, subprocess, sys, tempfile, time, uuid
from benchmarks_md import build_kind, PrivatePulse, launch_recd, recd_cpu_seconds, write_section

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(REPO)
RECD = os.environ.get("RECD_BIN", ".build/release/recd")
RECCTL = os.environ.get("RECCTL_BIN", ".build/release/recctl")
BENCH = os.environ.get("BENCH_BIN", ".build/release/recd-bench")
RUNS = int(os.environ.get("RUNS", "3"))
HOUR = int(os.environ.get("HOUR_SECONDS", "3600"))
TITLE = "## Meters and waveforms"


def log(*a):
    print("[metering]", *a, file=sys.stderr, flush=True)


if not any(k in os.environ for k in ("RECD_BIN", "RECCTL_BIN", "BENCH_BIN")):
    subprocess.run(["swift", "build", "-c", "release"], check=True)
missing = [pkg for tool, pkg in (("curl", "curl"), ("ffmpeg", "ffmpeg"), ("sox", "sox"), ("pulseaudio", "pulseaudio"),
                                 ("pactl", "pulseaudio-utils"), ("paplay", "pulseaudio-utils")) if not shutil.which(tool)]
if missing:
    sys.exit(f"missing tools: apt-get install {' '.join(sorted(set(missing)))}")

WORK = tempfile.mkdtemp(prefix="recd-metering-")
pulse = PrivatePulse(WORK, "mic")
procs = []


def start_recd(data, sock, *extra):
    return launch_recd(RECD, data, sock, os.path.join(WORK, "recd.log"), *extra, procs=procs)[0]


def curl(sock, method, path):
    r = subprocess.run(["curl", "-s", "-D", "-", "-o", os.path.join(WORK, "body"), "-w", "\n%{http_code}",
                        "--unix-socket", sock, "-X", method, "http://recd" + path], capture_output=True, text=True)
    head, code = r.stdout.rsplit("\n", 1)
    if code.strip() not in ("200", "201"):
        sys.exit(f"{method} {path}: HTTP {code}: {open(os.path.join(WORK, 'body')).read()[:300]}")
    server = None
    for line in head.splitlines():
        if line.lower().startswith("server-timing:") and "dur=" in line:
            server = float(line.split("dur=", 1)[1].split(";")[0])
    return open(os.path.join(WORK, "body")).read(), server


try:
    # 1. Metering alone, in recd's code, on the thread CPU clock.
    bench = []
    for _ in range(RUNS):
        out = subprocess.run([BENCH, "metering", "60", "2"], capture_output=True, text=True, check=True).stdout
        bench.append(json.loads(out))
    meter10 = statistics.median(b["meterCPU"] for b in bench) / 6
    wave10 = statistics.median(b["waveformCPU"] for b in bench) / 6
    encode10 = statistics.median(b["encodeCPU"] for b in bench) / 6
    log(f"per 10 s of stereo: meter {meter10 * 1000:.2f} ms, waveform {wave10 * 1000:.2f} ms, encode+mux {encode10 * 1000:.1f} ms")

    # 2. recd recording 10 s of stereo from a paced device, meters going to a listener.
    pulse.start()
    tone = os.path.join(WORK, "tone.wav")
    subprocess.run(["sox", "-n", "-r", "48000", "-c", "2", "-b", "16", tone, "synth", "600", "sine", "440", "vol", "0.5"], check=True)
    player = subprocess.Popen(["paplay", "-d", "mic", tone])
    procs.append(player)
    data, sock = os.path.join(WORK, "data"), os.path.join(WORK, "run/recd.sock")
    recd = start_recd(data, sock, "--capture-device", "pulse:mic.monitor", "--channels", "2")
    listener = subprocess.Popen([RECCTL, "--socket", sock, "events", "--type", "meter"], stdout=open(os.path.join(WORK, "events"), "w"))
    procs.append(listener)
    time.sleep(0.5)
    recd_cpu = []
    for i in range(RUNS):
        before = recd_cpu_seconds(recd.pid)
        subprocess.run([RECCTL, "--socket", sock, "record", "start"], check=True, capture_output=True)
        time.sleep(10)
        subprocess.run([RECCTL, "--socket", sock, "record", "stop", "--discard"], check=True, capture_output=True)
        recd_cpu.append(recd_cpu_seconds(recd.pid) - before)
        log(f"recd recording 10 s: {recd_cpu[-1]:.2f} s CPU")
    listener.terminate()
    meters_seen = sum(1 for _ in open(os.path.join(WORK, "events")))
    recd.terminate(); recd.wait(timeout=30)
    player.terminate()
    pulse.stop()
    recd10 = statistics.median(recd_cpu)

    # 3. A 1-hour file's waveform by decoding, beside ffmpeg decoding it.
    hour = os.path.join(WORK, "hour.m4a")
    log(f"encoding a {HOUR} s AAC file for the waveform test (takes a while)")
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", f"sine=frequency=440:duration={HOUR}:sample_rate=48000",
                    "-ac", "1", "-c:a", "aac", "-b:a", "128k", "-y", hour], check=True)
    data2, sock2 = os.path.join(WORK, "data2"), os.path.join(WORK, "run2/recd.sock")
    os.makedirs(os.path.join(data2, "Recordings"))
    os.link(hour, os.path.join(data2, "Recordings", f"audio_{str(uuid.uuid4()).upper()}.m4a"))
    recd2 = start_recd(data2, sock2, "--capture-device", "null")
    rid = json.loads(curl(sock2, "GET", "/v1/recordings")[0])["recordings"][0]["id"]
    recd_wave, ff_wall, ff_cpu, loud_wall, loud_cpu = [], [], [], [], []
    for i in range(RUNS):
        # Forget the stored waveform, so the next request computes it again.
        subprocess.run(["sqlite3", os.path.join(data2, "catalog.sqlite"), f"DELETE FROM waveform WHERE recordingID = '{rid}';"], check=True)
        cpu0 = recd_cpu_seconds(recd2.pid)
        t0 = time.perf_counter()
        body, server = curl(sock2, "GET", f"/v1/recordings/{rid}/waveform?pixels=1000")
        wall = time.perf_counter() - t0
        recd_wave.append((server / 1000 if server else wall, recd_cpu_seconds(recd2.pid) - cpu0))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", hour, "-f", "null", "-"], check=True)
        ff_wall.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        ff_cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        # The same decode with what recd also measures on it: EBU R128 loudness with true peak.
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", hour, "-af", "ebur128=peak=true", "-f", "null", "-"], check=True)
        loud_wall.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        loud_cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        log(f"1 h waveform: recd {recd_wave[-1][0]:.2f} s ({recd_wave[-1][1]:.2f} s CPU), ffmpeg decode {ff_wall[-1]:.2f} s "
            f"({ff_cpu[-1]:.2f} s CPU), with ebur128 {loud_wall[-1]:.2f} s ({loud_cpu[-1]:.2f} s CPU)")
    stored = curl(sock2, "GET", f"/v1/recordings/{rid}/waveform?pixels=1000")[1]
    recd2.terminate(); recd2.wait(timeout=30)
finally:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    pulse.stop()
    if not os.environ.get("KEEP_WORK"):
        shutil.rmtree(WORK, ignore_errors=True)

med = statistics.median
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), os.uname().machine)
kind = build_kind(RECD)
share = (meter10 + wave10) / recd10
rw = med(w for w, _ in recd_wave); rc = med(c for _, c in recd_wave)
lines = [
    TITLE, "",
    f"Written by `bench/metering.py` on {datetime.date.today()} — {os.cpu_count()} CPUs, {cpu}; {kind} build.", "",
    f"**Cost of meters and waveforms**, per 10 s of 48 kHz stereo (medians of {RUNS}). Metering is recd's own "
    "LevelMeter and WaveformBuilder run by `recd-bench` on the thread CPU clock, in the block sizes recd uses; "
    "recd is the whole daemon (its media worker, which encodes and writes the file, included) recording 10 s from "
    "`pulse:mic.monitor` (paced), AAC 128 kbit/s, with a "
    f"`recctl events --type meter` listening ({meters_seen} meter events received).", "",
    "| Per 10 s of stereo | CPU | share of recd recording |", "|---|---:|---:|",
    f"| LevelMeter (20 readings/s) | {meter10 * 1000:.2f} ms | {meter10 / recd10 * 100:.2f}% |",
    f"| WaveformBuilder (256 samples/pixel) | {wave10 * 1000:.2f} ms | {wave10 / recd10 * 100:.2f}% |",
    f"| both | {(meter10 + wave10) * 1000:.2f} ms | **{share * 100:.2f}%** (goal ≤ 3%) |",
    f"| for scale: AAC encode + fragmented MP4 alone (`recd-bench`) | {encode10 * 1000:.1f} ms | {encode10 / recd10 * 100:.1f}% |",
    f"| recd recording (capture, ring, encode, write, meters, events) | {recd10 * 1000:.0f} ms | 100% |", "",
    f"**Waveform of a {HOUR // 60}-minute file by decoding** (mono AAC 128 kbit/s, no stored waveform: the first "
    f"`GET /v1/recordings/{{id}}/waveform` decodes the file in a media worker, builds and stores the waveform and "
    f"measures the file's EBU R128 loudness with its true peak from the same decode; medians of {RUNS}), beside ffmpeg "
    "decoding the same file to nothing, and decoding it through its `ebur128` filter with `peak=true`:", "",
    "| | wall | CPU (recd's with its media worker's) | recd / ffmpeg decoding (wall) | recd / ffmpeg decoding and measuring loudness (wall) |",
    "|---|---:|---:|---:|---:|",
    f"| recd, first request (Server-Timing) | {rw:.2f} s | {rc:.2f} s | {rw / med(ff_wall):.2f}× | {rw / med(loud_wall):.2f}× |",
    f"| `ffmpeg -i FILE -f null -` | {med(ff_wall):.2f} s | {med(ff_cpu):.2f} s | 1.00× | |",
    f"| `ffmpeg -i FILE -af ebur128=peak=true -f null -` | {med(loud_wall):.2f} s | {med(loud_cpu):.2f} s | | 1.00× |",
    f"| recd, stored waveform afterwards (Server-Timing) | {stored:.1f} ms | | | |",
]
section = "\n".join(lines) + "\n"
print(section)
path = write_section(REPO, TITLE, section)
log("wrote", path)
