#!/usr/bin/env python3
"""Enhance (issue 47): recd's cleaned copy of a 10-minute spoken memo, beside the ffmpeg CLI run in the
same script with the same filters.

  memo    10 minutes of espeak-ng sentences (three voices) with pauses, under pink room noise at about
          5 dB SNR, 0.5 s of the noise alone first; encoded by the ffmpeg CLI as 48 kHz mono AAC
          128 kbit/s and adopted by recd at start-up (a file someone put in Recordings/).
  recd    POST /v1/recordings/{id}/enhanced, timed by curl (time_total: the request to the reply, which
          comes once the copy is decoded, filtered, encoded, finalized, fsynced, renamed and committed);
          recd's CPU (its media worker included) over all the runs.
  peer    `ffmpeg -v error -i MEMO -af FILTERS -c:a aac -b:a 128k -movflags +faststart -y OUT.m4a`
          with the filters of recd's reply (its noise sample is the memo's first 0.35 s, which is noise
          alone here: the same work), spawn to exit; and the same followed by an fsync of OUT.
          RUNS runs of each, interleaved; medians. Goal: recd <= 1.2x ffmpeg's time.

Writes its section of BENCHMARKS.md (not with --no-write). Env: RECD_BIN, RECCTL_BIN (default
.build/release/..., built if missing), RUNS (5), KEEP_WORK=1.
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, time
from benchmarks_md import launch_recd, recd_cpu_seconds, write_section

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(REPO)
RECD = os.environ.get("RECD_BIN", ".build/release/recd")
RUNS = int(os.environ.get("RUNS", "5"))
TITLE = "## Enhance (bench/enhance.py)"
SENTENCES = [
    ("en-us", 150, "The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background."),
    ("en-gb+f3", 140, "It's easy to tell the depth of a well. These days a chicken leg is a rare dish."),
    ("en-us+m3", 165, "Rice is often served in round bowls. The juice of lemons makes fine punch."),
]


def log(*a):
    print("[enhance]", *a, file=sys.stderr, flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


if not os.access(RECD, os.X_OK):
    subprocess.run(["swift", "build", "-c", "release"], check=True)
missing = [t for t in ("curl", "ffmpeg", "sox", "espeak-ng") if not shutil.which(t)]
if missing:
    sys.exit(f"missing tools: {' '.join(missing)}")

WORK = tempfile.mkdtemp(prefix="recd-enhance-")
DATA = os.path.join(WORK, "data")
SOCK = os.path.join(WORK, "recd.sock")
os.makedirs(os.path.join(DATA, "Recordings"), mode=0o700)
MEMO = os.path.join(DATA, "Recordings", "memo.m4a")

log("making 10 minutes of speech under pink noise")
parts = []
for i, (voice, wpm, text) in enumerate(SENTENCES):
    raw, wav = os.path.join(WORK, f"s{i}-raw.wav"), os.path.join(WORK, f"s{i}.wav")
    run(["espeak-ng", "-v", voice, "-s", str(wpm), "-w", raw, text])
    run(["sox", raw, "-r", "48000", "-c", "1", "-b", "16", wav, "norm", "-6", "pad", "0", "1.5"])
    parts.append(wav)
speech = os.path.join(WORK, "speech.wav")
one = float(run(["soxi", "-D"] + parts[:1]).stdout)
run(["sox"] + parts * int(600 / (one * 3) + 1) + [speech, "trim", "0", "599.5", "pad", "0.5", "0"])
noise = os.path.join(WORK, "noise.wav")
run(["sox", "-n", "-r", "48000", "-c", "1", "-b", "16", noise, "synth", "600", "pinknoise", "vol", "0.12"])
run(["ffmpeg", "-v", "error", "-i", speech, "-i", noise, "-filter_complex", "amix=inputs=2:normalize=0",
     "-ac", "1", "-c:a", "aac", "-b:a", "128k", "-movflags", "+faststart", "-y", MEMO])

procs = []
recd, _ = launch_recd(RECD, DATA, SOCK, os.path.join(WORK, "recd.log"), "--playback-device", "null", procs=procs)


def curl(method, path):
    out = os.path.join(WORK, "body")
    r = run(["curl", "-s", "-o", out, "-w", "%{http_code} %{time_total}", "--unix-socket", SOCK, "-X", method, "http://recd" + path])
    code, seconds = r.stdout.decode().split()
    return int(code), float(seconds), open(out).read()


try:
    code, _, body = curl("GET", "/v1/recordings?limit=1")
    memo = json.loads(body)["recordings"][0]
    log(f"adopted {memo['id']} ({memo['duration']:.1f} s)")
    # Its loudness measured first (the loudness pass runs at start-up), as for any memo recd keeps.
    for _ in range(600):
        code, _, body = curl("GET", f"/v1/recordings/{memo['id']}")
        if json.loads(body).get("loudness"):
            break
        time.sleep(0.1)
    out = os.path.join(WORK, "ffmpeg.m4a")
    ours, theirs, theirs_synced, copy = [], [], [], None
    cpu0 = recd_cpu_seconds(recd.pid)
    for i in range(RUNS):
        code, seconds, body = curl("POST", f"/v1/recordings/{memo['id']}/enhanced")
        if code != 201:
            sys.exit(f"recd answered {code}: {body}")
        copy = json.loads(body)["copy"]
        ours.append(seconds)
        t0 = time.perf_counter()
        run(["ffmpeg", "-v", "error", "-i", MEMO, "-af", copy["filters"], "-c:a", "aac", "-b:a", "128k",
             "-movflags", "+faststart", "-y", out])
        t1 = time.perf_counter()
        fd = os.open(out, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        theirs.append(t1 - t0)
        theirs_synced.append(time.perf_counter() - t0)
        log(f"run {i + 1}: recd {seconds:.2f} s, ffmpeg {t1 - t0:.2f} s")
    cpu = (recd_cpu_seconds(recd.pid) - cpu0) / RUNS
finally:
    for p in procs:
        p.terminate()
    if not os.environ.get("KEEP_WORK"):
        shutil.rmtree(WORK, ignore_errors=True)

m, f, fs = statistics.median(ours), statistics.median(theirs), statistics.median(theirs_synced)
head = run(["git", "rev-parse", "--short", "HEAD"]).stdout.decode().strip()
section = f"""{TITLE}

A 10-minute spoken memo under pink room noise (48 kHz mono AAC 128 kbit/s, adopted by recd), its enhanced
copy made {RUNS} times by `POST /v1/recordings/{{id}}/enhanced` (curl's time: the reply comes once the copy
is decoded, filtered, encoded, finalized, fsynced, renamed and committed), and by the ffmpeg CLI with the
same filters from its reply, interleaved; medians. Release build of {head}, {os.cpu_count()} CPUs.

| | time | ratio |
|---|---|---|
| recd `POST …/enhanced` | {m:.2f} s ({' '.join(f'{x:.2f}' for x in ours)}) | **{m / f:.2f}×** |
| `ffmpeg -i MEMO -af FILTERS -c:a aac -b:a 128k -movflags +faststart OUT` | {f:.2f} s ({' '.join(f'{x:.2f}' for x in theirs)}) | 1.00× |
| the same, then an fsync of OUT | {fs:.2f} s | {fs / f:.2f}× |

recd's CPU per copy, its media worker included: {cpu:.2f} s ({cpu / 10:.3f} s per minute of sound). The copy:
{copy['loudness']} LUFS, {copy['truePeak']} dBTP (the memo {copy['originalLoudness']} LUFS).
Goal: recd <= 1.2x ffmpeg's time — {"met" if m / f <= 1.2 else "not met"} ({m / f:.2f}x).
"""
print(section)
if "--no-write" not in sys.argv:
    log("wrote", write_section(REPO, TITLE, section))
