#!/usr/bin/env python3
"""Editing: a lossless trim of a 1-hour recording, beside the ffmpeg CLI run in the same script.

  trim    a 1-hour 48 kHz mono AAC (128 kbit/s) .m4a made by the ffmpeg CLI and adopted by recd at
          start-up (as a file someone put in Recordings/); POST /v1/recordings/{id}/trim
          {start: 600, end: 3000, asNew: true} (40 minutes kept; as new, so every run cuts the same
          source), timed by curl (time_total: request to reply, which comes once the cut is written,
          fsynced, committed and renamed into place). Peer: `ffmpeg -v error -ss 600 -to 3000 -i SRC
          -c copy -y OUT.m4a` (spawn to exit), and the same followed by an fsync of OUT (recd makes its
          cut durable before it replies; ffmpeg does not).
          RUNS runs of each, interleaved; medians. Goal (issue 14): recd ≤ 1.2× ffmpeg.
  import  a 1-hour 48 kHz mono 16-bit WAV (ffmpeg CLI); `recctl import hour.wav` from spawn to exit
          (the bytes sent over the socket, hashed, decoded, encoded to AAC 128 kbit/s, the waveform
          built, finalized, fsynced, committed). Peer: `ffmpeg -i hour.wav -c:a aac -b:a 128k OUT.m4a`
          (spawn to exit). IMPORT_RUNS runs of each, interleaved (the import deleted after each run:
          the same bytes twice are a duplicate); medians. Goal (issue 14): recd ≤ 1.2× ffmpeg.

Writes its section of BENCHMARKS.md. Env: RECD_BIN, RECCTL_BIN (default .build/release/..., built if
missing), RUNS (5), KEEP_WORK=1.
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, time
from benchmarks_md import write_section

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(REPO)
RECD = os.environ.get("RECD_BIN", ".build/release/recd")
RUNS = int(os.environ.get("RUNS", "5"))
IMPORT_RUNS = int(os.environ.get("IMPORT_RUNS", "3"))
RECCTL = os.environ.get("RECCTL_BIN", ".build/release/recctl")
TITLE = "## Editing"


def log(*a):
    print("[editing]", *a, file=sys.stderr, flush=True)


for b in (RECD, RECCTL):
    if not os.access(b, os.X_OK):
        subprocess.run(["swift", "build", "-c", "release"], check=True)
missing = [pkg for tool, pkg in (("curl", "curl"), ("ffmpeg", "ffmpeg")) if not shutil.which(tool)]
if missing:
    sys.exit(f"missing tools: apt-get install {' '.join(missing)}")

WORK = tempfile.mkdtemp(prefix="recd-editing-")
DATA = os.path.join(WORK, "data")
SOCK = os.path.join(WORK, "recd.sock")
os.makedirs(os.path.join(DATA, "Recordings"), mode=0o700)
SOURCE = os.path.join(DATA, "Recordings", "hour.m4a")
log("encoding 1 hour of a tone (ffmpeg)")
subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=3600",
                "-ac", "1", "-c:a", "aac", "-b:a", "128k", "-movflags", "+faststart", "-y", SOURCE], check=True)

recd = subprocess.Popen([RECD, "--data-dir", DATA, "--socket", SOCK, "--capture-device", "null",
                         "--playback-device", "null", "--log-level", "error"],
                        stdout=subprocess.DEVNULL, stderr=open(os.path.join(WORK, "recd.log"), "a"))


def curl(method, path, body=None):
    args = ["curl", "-s", "-o", os.path.join(WORK, "body"), "-w", "%{http_code} %{time_total}",
            "--unix-socket", SOCK, "-X", method, "http://recd" + path]
    if body is not None:
        args += ["-d", json.dumps(body)]
    r = subprocess.run(args, capture_output=True, text=True)
    code, total = (r.stdout.split() + ["000", "0"])[:2]
    return int(code), float(total), open(os.path.join(WORK, "body")).read() if os.path.exists(os.path.join(WORK, "body")) else ""


try:
    for _ in range(3000):
        if curl("GET", "/v1/status")[0] == 200:
            break
        if recd.poll() is not None:
            sys.exit(f"recd exited: see {WORK}/recd.log")
        time.sleep(0.01)
    code, _, body = curl("GET", "/v1/recordings")
    rows = json.loads(body)["recordings"]
    if len(rows) != 1:
        sys.exit(f"the hour was not adopted: {body[:300]}")
    hour = rows[0]
    log(f"adopted {hour['id']} ({hour['duration']:.1f} s)")
    recd_times, ffmpeg_times, ffmpeg_sync_times = [], [], []
    out = os.path.join(WORK, "cut.m4a")
    made = []
    for run in range(RUNS):
        code, total, body = curl("POST", f"/v1/recordings/{hour['id']}/trim", {"start": 600, "end": 3000, "asNew": True})
        if code != 201:
            sys.exit(f"trim: HTTP {code}: {body[:300]}")
        cut = json.loads(body)
        made.append(cut["id"])
        if abs(cut["duration"] - 2400) > 0.05:
            sys.exit(f"trim: the cut lasts {cut['duration']} s, not 2400")
        recd_times.append(total)
        for with_sync, into in ((False, ffmpeg_times), (True, ffmpeg_sync_times)):
            t0 = time.perf_counter()
            subprocess.run(["ffmpeg", "-v", "error", "-ss", "600", "-to", "3000", "-i", SOURCE, "-c", "copy", "-y", out], check=True)
            if with_sync:
                fd = os.open(out, os.O_RDONLY)
                os.fsync(fd)
                os.close(fd)
            into.append(time.perf_counter() - t0)
            os.unlink(out)
        # Keep the library to the source: the copies go (a delete, not timed).
        curl("DELETE", f"/v1/recordings/{cut['id']}")
        log(f"run {run + 1}: recd {total * 1000:.0f} ms, ffmpeg {ffmpeg_times[-1] * 1000:.0f} ms, "
            f"ffmpeg+fsync {ffmpeg_sync_times[-1] * 1000:.0f} ms")
    wav = os.path.join(WORK, "hour.wav")
    log("writing 1 hour of WAV (ffmpeg)")
    subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=330:sample_rate=48000:duration=3600",
                    "-ac", "1", "-c:a", "pcm_s16le", "-y", wav], check=True)
    import_times, encode_times = [], []
    for run in range(IMPORT_RUNS):
        t0 = time.perf_counter()
        r = subprocess.run([RECCTL, "--socket", SOCK, "--json", "import", wav], capture_output=True, text=True)
        import_times.append(time.perf_counter() - t0)
        if r.returncode != 0:
            sys.exit(f"import: {r.stdout} {r.stderr}")
        imported = json.loads(r.stdout)
        if abs(imported["duration"] - 3600) > 0.1:
            sys.exit(f"import: {imported['duration']} s, not 3600")
        curl("DELETE", f"/v1/recordings/{imported['id']}")
        t0 = time.perf_counter()
        subprocess.run(["ffmpeg", "-v", "error", "-i", wav, "-c:a", "aac", "-b:a", "128k", "-y", out], check=True)
        encode_times.append(time.perf_counter() - t0)
        os.unlink(out)
        log(f"import run {run + 1}: recd {import_times[-1]:.2f} s, ffmpeg {encode_times[-1]:.2f} s")
    imp, enc = statistics.median(import_times), statistics.median(encode_times)
    wav_mb = os.path.getsize(wav) / 1e6
    r, f, fs = (statistics.median(x) for x in (recd_times, ffmpeg_times, ffmpeg_sync_times))
    size_mb = os.path.getsize(SOURCE) / 1e6
    section = f"""{TITLE}

`bench/editing.py` ({time.strftime('%Y-%m-%d')}, release build). Trim: {RUNS} runs each, interleaved, medians. A
1-hour 48 kHz mono AAC .m4a ({size_mb:.1f} MB, made by the ffmpeg CLI, adopted by recd), cut to
600–3000 s (40 minutes) without re-encoding.

| | median | vs ffmpeg |
|---|---:|---:|
| recd `POST /v1/recordings/{{id}}/trim` (as new; written, fsynced, committed, renamed; curl's time) | {r * 1000:.0f} ms | {r / f:.2f}× |
| `ffmpeg -ss 600 -to 3000 -i SRC -c copy OUT` (spawn to exit) | {f * 1000:.0f} ms | 1.00× |
| the same, then an fsync of OUT | {fs * 1000:.0f} ms | {fs / f:.2f}× |

Goal (issue 14): recd ≤ 1.2× ffmpeg's time — {"met" if r <= 1.2 * f else "NOT met"} ({r / f:.2f}×; {r / fs:.2f}× of ffmpeg with the fsync recd does).
recd's cut is exact at both ends (edit list) and replaces the recording crash-safely; ffmpeg's
`-ss` with `-c copy` starts at a packet boundary.

Import of a 1-hour 48 kHz mono 16-bit WAV ({wav_mb:.0f} MB), {IMPORT_RUNS} runs each, interleaved, medians:

| | median | vs ffmpeg |
|---|---:|---:|
| `recctl import hour.wav` (sent over the socket, hashed, encoded to AAC 128 kbit/s with its waveform, finalized, fsynced, committed) | {imp:.2f} s | {imp / enc:.2f}× |
| `ffmpeg -i hour.wav -c:a aac -b:a 128k OUT.m4a` | {enc:.2f} s | 1.00× |

Goal (issue 14): recd ≤ 1.2× ffmpeg's time — {"met" if imp <= 1.2 * enc else "NOT met"} ({imp / enc:.2f}×).
"""
    path = write_section(REPO, TITLE, section)
    print(section)
    log(f"wrote {path}")
finally:
    recd.terminate()
    recd.wait(timeout=30)
    if os.environ.get("KEEP_WORK") != "1":
        shutil.rmtree(WORK, ignore_errors=True)
