#!/usr/bin/python3
"""Transcripts (issue 38): word error rate and CPU per second of audio of recd's transcription, beside
the same model run by faster-whisper alone in the same script; and search over 10,000 transcripts.
Writes the "Transcripts and search" section of BENCHMARKS.md. Uses the release build (built if
missing) and the transcriber in .build/transcribe (scripts/install-deps.sh --transcribe).

Audio: the LibriVox clips of Debian's pocketsphinx-testdata (human read speech, with their reference
transcripts), each imported into recd as a recording.

recd's CPU: recd is started with --transcribe off and the clips imported (import's own work not
counted), then stopped and started again with transcription on: it transcribes the library at start.
Counted from that start until every transcript is stored: utime + stime of recd and of every child it
reaped (the transcriber and the media workers that decode for it; --ffmpeg-idle-unload 0 so each
worker ends, and is counted, after its job), minus the same daemon's start-up alone (measured with
transcription off). The peer: one Python process of the transcriber's own venv loading the same model
with the same settings (int8, beam 5, word times, the voice filter) and transcribing the same sound,
decoded beforehand; its whole CPU (imports and model load included, as recd's transcriber's are).
"""
import datetime, json, os, re, resource, signal, sqlite3, statistics, subprocess, sys, tempfile, time, urllib.parse, uuid

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Tests", "browser"))
from benchmarks_md import launch_recd, write_section
from harness import Harness

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIPS = "/usr/share/pocketsphinx/test/data/librivox"
TRANSCRIBER = os.path.join(REPO, ".build", "transcribe")
SEARCH_ROWS, SEARCHES = 10_000, 50
for need, how in [(CLIPS, "apt-get install pocketsphinx-testdata"), (TRANSCRIBER + "/.installed", "scripts/install-deps.sh --transcribe")]:
    if not os.path.exists(need):
        sys.exit(f"bench/transcribe.py: {need} is missing ({how})")
bin_dir = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=REPO, capture_output=True, text=True).stdout.strip()
if not os.path.exists(os.path.join(bin_dir, "recd")):
    subprocess.run(["swift", "build", "-c", "release"], cwd=REPO, check=True)
RECD, RECCTL = os.path.join(bin_dir, "recd"), os.path.join(bin_dir, "recctl")
work = tempfile.mkdtemp(prefix="recd-bench-transcribe-")
h = Harness(None, None if os.environ.get("KEEP_WORK") else work)
procs = h.procs


def words(text):
    return re.sub(r"[^a-z0-9' ]", " ", text.lower().replace("-", " ")).split()


def wer(reference, hypothesis):
    """Word error rate: (substitutions + deletions + insertions) / reference words."""
    r, h = words(reference), words(hypothesis)
    d = list(range(len(h) + 1))
    for i in range(1, len(r) + 1):
        prev, d[0] = d[0], i
        for j in range(1, len(h) + 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (r[i - 1] != h[j - 1]))
    return d[len(h)], len(r)


def cpu_of(pid):
    """utime + stime of the process and of its reaped children, seconds."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def get(sock, path):
    out = subprocess.run(["curl", "-s", "-D", "-", "--unix-socket", sock, "http://recd" + path], capture_output=True, text=True, check=True).stdout
    head, _, body = out.partition("\n\n")   # (text mode made every CRLF a newline)
    timing = re.search(r"dur=([0-9.]+)", head)
    return json.loads(body), float(timing.group(1)) if timing else None


try:
    references = {}
    for line in open(os.path.join(CLIPS, "transcription")):
        m = re.match(r"<s> (.*) </s> \((.*)\)", line.strip())
        if m:
            references[m.group(2)] = m.group(1)
    clips = sorted(f for f in os.listdir(CLIPS) if f.endswith(".wav") and f[:-4] in references)
    audio_seconds = sum(float(subprocess.run(["soxi", "-D", os.path.join(CLIPS, c)], capture_output=True, text=True).stdout) for c in clips)

    # recd: the clips imported with transcription off, then transcribed at the next start.
    data, sock = os.path.join(work, "data"), os.path.join(work, "recd.sock")
    log = os.path.join(work, "recd.log")
    p, _ = launch_recd(RECD, data, sock, log, "--transcribe", "off", procs=procs)
    ids = {}
    for c in clips:
        r = subprocess.run([RECCTL, "--socket", sock, "--json", "import", os.path.join(CLIPS, c), "--title", c[:-4][-20:]],
                           capture_output=True, text=True, check=True)
        ids[c] = json.loads(r.stdout)["id"]
    p.send_signal(signal.SIGTERM); p.wait()
    startups = []
    for _ in range(3):   # the daemon's start-up with nothing to transcribe: subtracted
        p, _ = launch_recd(RECD, data, sock, log, "--transcribe", "off", "--ffmpeg-idle-unload", "0", procs=procs)
        time.sleep(2)
        startups.append(cpu_of(p.pid))
        p.send_signal(signal.SIGTERM); p.wait()
    startup = statistics.median(startups)
    t0 = time.perf_counter()
    p, _ = launch_recd(RECD, data, sock, log, "--transcriber", TRANSCRIBER, "--ffmpeg-idle-unload", "0", procs=procs)
    while True:
        status, _ = get(sock, "/v1/status")
        t = status["transcription"]
        if t["done"] >= len(clips) and t["pending"] == 0 and t["current"] is None:
            break
        if time.perf_counter() - t0 > 600:
            sys.exit("bench/transcribe.py: the transcripts took more than 10 minutes: " + json.dumps(t))
        time.sleep(0.2)
    time.sleep(0.5)   # the transcriber reaped
    recd_wall = time.perf_counter() - t0
    recd_cpu = cpu_of(p.pid) - startup
    errors = total = 0
    for c in clips:
        transcript, _ = get(sock, f"/v1/recordings/{ids[c]}/transcript")
        e, n = wer(references[c[:-4]], transcript["text"])
        errors += e; total += n
    recd_wer = errors / total

    # The peer: faster-whisper alone, same model and settings, on the same sound.
    peer_script = os.path.join(work, "peer.py")
    open(peer_script, "w").write(f"""
import json, os, resource, subprocess, sys, time
os.environ["HF_HUB_OFFLINE"] = "1"
pcm = []
for c in {clips!r}:
    pcm.append(subprocess.run(["ffmpeg", "-v", "error", "-i", os.path.join({CLIPS!r}, c), "-f", "s16le", "-ac", "1", "-ar", "16000", "-"],
                              capture_output=True, check=True).stdout)
import numpy
before = resource.getrusage(resource.RUSAGE_SELF)
from faster_whisper import WhisperModel
model = WhisperModel({TRANSCRIBER + "/models/base"!r}, device="cpu", compute_type="int8", cpu_threads=os.cpu_count() or 1)
texts = []
for raw in pcm:
    audio = numpy.frombuffer(raw, dtype="<i2").astype(numpy.float32) / 32768.0
    segments, info = model.transcribe(audio, word_timestamps=True, vad_filter=True, beam_size=5, condition_on_previous_text=False)
    texts.append(" ".join(s.text.strip() for s in segments))
after = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({{"cpu": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, "texts": texts}}))
""")
    peer_runs = []
    for _ in range(3):
        t1 = time.perf_counter()
        out = subprocess.run([TRANSCRIBER + "/venv/bin/python3", "-I", "-B", peer_script], capture_output=True, text=True, check=True)
        peer_runs.append((json.loads(out.stdout.strip().splitlines()[-1]), time.perf_counter() - t1))
    peer_cpu = statistics.median(r["cpu"] for r, _ in peer_runs)
    peer_texts = peer_runs[0][0]["texts"]
    pe = sum(wer(references[c[:-4]], t)[0] for c, t in zip(clips, peer_texts))
    peer_wer = pe / total

    # Search over 10,000 transcripts: rows and transcripts written by recd's own schema (its triggers
    # fill the index), then GET /v1/search timed in-server (Server-Timing).
    p.send_signal(signal.SIGTERM); p.wait()
    sdata, ssock = os.path.join(work, "search"), os.path.join(work, "search.sock")
    p, _ = launch_recd(RECD, sdata, ssock, log, "--transcribe", "off", procs=procs)
    p.send_signal(signal.SIGTERM); p.wait()
    # Words as speech has them: a vocabulary of 20,000 (the clips' words first, then made-up ones)
    # drawn with Zipf's law (s = 1.1: "the" in most minutes, most words in a few). Queries are 1–3
    # words of ranks 50–5,000, the words a person searches by; the commonest words are timed apart.
    base_words = sorted(set(words(" ".join(references.values()))))
    vocabulary = base_words + [f"w{i}x" for i in range(20_000 - len(base_words))]
    weights = [1 / (rank + 1) ** 1.1 for rank in range(len(vocabulary))]
    db = sqlite3.connect(os.path.join(sdata, "catalog.sqlite"))
    now = datetime.datetime.utcnow()
    rows, transcripts = [], []
    import random
    rng = random.Random(38)
    for i in range(SEARCH_ROWS):
        rid = str(uuid.UUID(int=rng.getrandbits(128))).upper()
        created = (now - datetime.timedelta(seconds=SEARCH_ROWS - i)).strftime("%Y-%m-%d %H:%M:%S.000")
        rows.append((rid, "audio", "missing", f"Memo {i}", "", created, 60.0, 1000, f"Recordings/audio_{rid}.m4a", 0, 0, 0))
        text = " ".join(rng.choices(vocabulary, weights, k=150))   # about a minute of speech
        transcripts.append((rid, "done", "en", "base", text, json.dumps([{"start": 0, "end": 60, "text": text, "words": []}])))
    db.executemany("INSERT INTO recording (id, type, state, title, notes, createdAt, duration, sizeBytes, file, playCount,"
                   " recovered, droppedFrames) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    db.executemany("INSERT INTO transcript (recordingID, state, language, model, text, segments) VALUES (?,?,?,?,?,?)", transcripts)
    db.commit(); db.close()
    p, _ = launch_recd(RECD, sdata, ssock, log, "--transcribe", "off", procs=procs)
    # A person searches by words they remember saying: 1–3 words of one transcript, none of the 50 commonest.
    rank_of = {w: i for i, w in enumerate(vocabulary)}
    queries = []
    for i in range(SEARCHES):
        said = [w for w in set(transcripts[rng.randrange(SEARCH_ROWS)][4].split()) if rank_of[w] >= 50]
        queries.append(" ".join(rng.sample(sorted(said), min(len(said), 1 + i % 3))))
    in_server, hits = [], []
    for q in queries:
        found, ms = get(ssock, "/v1/search?q=" + urllib.parse.quote(q))
        in_server.append(ms); hits.append(len(found["results"]))
    search_ms = statistics.median(in_server)
    search_max = max(in_server)
    common = [get(ssock, "/v1/search?q=" + urllib.parse.quote(w))[1] for w in vocabulary[:5]]
    peer_sql = []
    for q in queries[:10]:
        match = " AND ".join(f'"{w}"*' for w in q.split())
        out = subprocess.run(["sqlite3", os.path.join(sdata, "catalog.sqlite")],
                             input=f".timer on\nSELECT rowid, snippet(search, 2, '«', '»', '…', 12) FROM search WHERE search MATCH '{match}' ORDER BY rank LIMIT 20;\n",
                             capture_output=True, text=True).stdout
        real = re.findall(r"Run Time: real ([0-9.]+)", out)
        if real:
            peer_sql.append(float(real[-1]) * 1000)
    p.send_signal(signal.SIGTERM); p.wait()

    today = datetime.date.today().isoformat()
    ratio = recd_cpu / peer_cpu
    section = f"""## Transcripts and search

Written by `bench/transcribe.py` on {today} — {os.cpu_count()} CPUs; recd: release build; Whisper base (faster-whisper 1.2.1, int8) from `.build/transcribe`.

**Transcription**: the {len(clips)} LibriVox clips of Debian's `pocketsphinx-testdata` ({audio_seconds:.1f} s of human read speech, with reference transcripts), imported into recd and transcribed by it, beside the same model run by faster-whisper alone in one Python process on the same sound (3 runs, median). recd's CPU is its own, its transcriber's and its media workers' (which decode the files for it) from the start that transcribes them until the last is stored, minus the daemon's start-up alone ({startup:.2f} s); the peer's is its whole process after decoding (imports and model load included, as the transcriber's are).

| | CPU s | CPU s per audio s | word error rate | wall |
| --- | --- | --- | --- | --- |
| recd (transcriber, decoding, storing) | {recd_cpu:.2f} | {recd_cpu / audio_seconds:.3f} | {100 * recd_wer:.1f} % ({errors} of {total} words) | {recd_wall:.1f} s |
| faster-whisper alone | {peer_cpu:.2f} | {peer_cpu / audio_seconds:.3f} | {100 * peer_wer:.1f} % | {statistics.median(w for _, w in peer_runs):.1f} s |
| recd / faster-whisper | **{ratio:.2f}×** (goal ≤ 1.1×) | | | |

**Search** over {SEARCH_ROWS:,} transcripts of about a minute each (150 words drawn by Zipf's law from a vocabulary of 20,000), titles and notes: {SEARCHES} queries of 1–3 words said in one of them (none of the 50 commonest words), `GET /v1/search` (20 results, snippets, each hit's row and transcript), timed in-server (Server-Timing): median **{search_ms:.2f} ms**, slowest {search_max:.2f} ms (goal ≤ 10 ms); {statistics.median(hits):.0f} hits per query (median). The sqlite3 CLI running the index query alone (ranking and snippets, no rows): median {statistics.median(peer_sql) if peer_sql else float('nan'):.2f} ms. The five commonest words alone (each in most transcripts: every match is ranked): {", ".join(f"{ms:.1f}" for ms in common)} ms.
"""
    print(section)
    write_section(REPO, "## Transcripts and search", section)
finally:
    h.close()
