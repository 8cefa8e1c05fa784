#!/usr/bin/env python3
"""Playback start, Quick Play and play counting at scale, beside peers run in the same script.

  play start      recd: POST /v1/recordings/{id}/play of a 3 s 48 kHz stereo AAC file on a private
                  PulseAudio null sink (ALSA `pulse:speaker`); its reply's startLatencyMs (request
                  arrival → first successful snd_pcm_writei, measured inside recd) and curl's
                  time_total; PLAYS plays, each stopped (POST /v1/playback/stop) before the next.
                  Peer: this script itself, in-process through libasound (ctypes): open the same audio
                  as WAV, read the first 1024 frames, snd_pcm_open the same device with the same
                  parameters as recd (S16, 40 ms periods, 400 ms buffer, start at one period) and
                  write them; timed from before the WAV is opened to the write returning.
  top 50          on ROWS catalog rows (about 95% ready): GET /v1/top?limit=50 — recd's own time
                  (Server-Timing app;dur) and curl's time_total; `recctl --json top 50` from spawn to
                  exit; floors: the same SQL in the sqlite3 CLI (whole process, spawn to exit), in
                  one warm sqlite3 process (`.timer on`, whose real time has 1 ms resolution), and
                  in this script's sqlite3 module (one warm connection, perf_counter).
  play counts     CLIENTS curl processes, each sending PER_CLIENT POST /v1/recordings/{id}/played for
                  one recording over one keep-alive connection; increments per second from the wall
                  time of all of them; the final playCount must be start + CLIENTS × PER_CLIENT.
                  Peer (recd stopped): one sqlite3-module connection, WAL and synchronous=FULL as recd,
                  running the same UPDATE CLIENTS × PER_CLIENT times, each in its own transaction.

Writes its section of BENCHMARKS.md. Env: RECD_BIN, RECCTL_BIN (default .build/release/..., built if
missing), ROWS (100000), PLAYS (20), TOP_RUNS (50), CLIENTS (32), PER_CLIENT (500), COUNT_ROUNDS (3), KEEP_WORK=1.
"""
import ctypes, ctypes.util, datetime, json, math, os, random, resource, shutil, sqlite3, statistics, subprocess, sys, tempfile
from benchmarks_md import build_kind, PrivatePulse, launch_recd, write_section
import time, uuid, wave

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(REPO)
RECD = os.environ.get("RECD_BIN", ".build/release/recd")
RECCTL = os.environ.get("RECCTL_BIN", ".build/release/recctl")
ROWS = int(os.environ.get("ROWS", "100000"))
PLAYS = int(os.environ.get("PLAYS", "20"))
TOP_RUNS = int(os.environ.get("TOP_RUNS", "50"))
CLIENTS = int(os.environ.get("CLIENTS", "32"))
PER_CLIENT = int(os.environ.get("PER_CLIENT", "500"))
COUNT_ROUNDS = int(os.environ.get("COUNT_ROUNDS", "3"))
TITLE = "## Playback and play counts"
DEVICE = "pulse:speaker"
TOP_SQL = ("SELECT * FROM recording WHERE state = 'ready' "
           "ORDER BY playCount DESC, createdAt DESC, id LIMIT 50")
LIST_SQL = "SELECT * FROM recording ORDER BY createdAt DESC, id LIMIT 50 OFFSET 0"
UPDATE_SQL = "UPDATE recording SET playCount = playCount + 1, lastPlayedAt = ? WHERE id = ? AND state = 'ready'"


def log(*a):
    print("[playback]", *a, file=sys.stderr, flush=True)


for b in (RECD, RECCTL):
    if not os.access(b, os.X_OK):
        subprocess.run(["swift", "build", "-c", "release"], check=True)
missing = [pkg for tool, pkg in (("sqlite3", "sqlite3"), ("curl", "curl"), ("ffmpeg", "ffmpeg"),
                                 ("pulseaudio", "pulseaudio"), ("pactl", "pulseaudio-utils"))
           if not shutil.which(tool)]
ASOUND = ctypes.util.find_library("asound")
if not ASOUND:
    missing.append("libasound2")
if not any(os.path.exists(os.path.join(d, "libasound_module_pcm_pulse.so"))
           for d in ["/usr/lib/alsa-lib"] + [os.path.join("/usr/lib", m, "alsa-lib") for m in os.listdir("/usr/lib")]):
    missing.append("libasound2-plugins")
if missing:
    sys.exit(f"missing tools: apt-get install {' '.join(sorted(set(missing)))}")

WORK = tempfile.mkdtemp(prefix="recd-playback-")
procs = []
pulse = PrivatePulse(WORK, "speaker")


def start_recd(data, sock):
    return launch_recd(RECD, data, sock, os.path.join(WORK, "recd.log"), "--playback-device", DEVICE, "--transcribe", "off", procs=procs)[0]


def stop_recd(p):
    p.terminate()
    p.wait(timeout=60)


def curl(sock, method, path, want):
    """(body, time_total s, Server-Timing ms or None) of one request over the unix socket."""
    r = subprocess.run(["curl", "-s", "-D", "-", "-o", os.path.join(WORK, "body"), "-w", "\n%{http_code} %{time_total}",
                        "--unix-socket", sock, "-X", method, "http://recd" + path], capture_output=True, text=True, check=True)
    head, last = r.stdout.rsplit("\n", 1)
    code, total = last.split()
    body = open(os.path.join(WORK, "body")).read()
    if code != str(want):
        sys.exit(f"{method} {path}: HTTP {code} (wanted {want}): {body[:300]}"
                 + ("\nIs the recd binary older than the playback routes? Rebuild it." if code == "404" else ""))
    server = None
    for line in head.splitlines():
        if line.lower().startswith("server-timing:") and "dur=" in line:
            server = float(line.split("dur=", 1)[1].split(";")[0].split(",")[0])
    return body, float(total), server


def keepalive(sock, requests):
    """Server-Timing ms of each (method, path) in `requests`, sent one after another on one kept-alive
    connection (a warm client, as the sqlite3 peers are warm processes); every reply must be 200."""
    import socket as socketlib
    c = socketlib.socket(socketlib.AF_UNIX)
    c.connect(sock)
    out = []
    try:
        for method, path in requests:
            c.sendall(f"{method} {path} HTTP/1.1\r\nHost: recd\r\nContent-Length: 0\r\n\r\n".encode())
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = c.recv(65536)
                if not chunk:
                    sys.exit(f"{method} {path}: recd closed the connection")
                buf += chunk
            head, body = buf.split(b"\r\n\r\n", 1)
            lines = head.decode().split("\r\n")
            fields = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:]}
            while len(body) < int(fields["content-length"]):
                body += c.recv(65536)
            if lines[0].split()[1] != "200":
                sys.exit(f"{method} {path}: {lines[0]}: {body[:300]}")
            out.append(float(fields["server-timing"].split("dur=", 1)[1]))
    finally:
        c.close()
    return out


def cli_query_times(db_path, sql, runs):
    """The query alone, warm: one sqlite3 process running it `runs` times (rows to /dev/null; the timer
    still prints). "Run Time: real 0.000 user 0.000139 sys 0.000000": real is printed to the
    millisecond only, so the figure kept is user+sys (µs; a warm query is CPU-bound, so it is the
    query's time). The first, cold run is dropped."""
    script = ".timer on\n.output /dev/null\n" + (sql + ";\n") * (runs + 1)
    out = subprocess.run(["sqlite3", db_path], input=script, capture_output=True, text=True, check=True).stdout
    times = [(float(l.split()[5]) + float(l.split()[7])) * 1000 for l in out.splitlines() if l.startswith("Run Time:")][1:]
    if len(times) != runs:
        sys.exit(f"expected {runs} 'Run Time:' lines from sqlite3, got: {out[:300]}")
    return times


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# --- the peer of play start: libasound in this process --------------------------------------------
class Alsa:
    """Just enough of libasound to open a playback PCM the way recd's AlsaPlaybackSink does."""
    STREAM_PLAYBACK, NONBLOCK, ACCESS_RW_INTERLEAVED, FORMAT_S16_LE = 0, 1, 3, 2

    def __init__(self):
        a = self.lib = ctypes.CDLL(ASOUND)
        P, U, L = ctypes.c_void_p, ctypes.c_ulong, ctypes.c_long
        pp = ctypes.POINTER(ctypes.c_void_p)
        sig = {"snd_pcm_open": [pp, ctypes.c_char_p, ctypes.c_int, ctypes.c_int],
               "snd_pcm_hw_params_malloc": [pp], "snd_pcm_hw_params_free": [P], "snd_pcm_hw_params_any": [P, P],
               "snd_pcm_hw_params_set_access": [P, P, ctypes.c_int], "snd_pcm_hw_params_set_format": [P, P, ctypes.c_int],
               "snd_pcm_hw_params_set_channels_near": [P, P, ctypes.POINTER(ctypes.c_uint)],
               "snd_pcm_hw_params_set_rate_near": [P, P, ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_int)],
               "snd_pcm_hw_params_set_period_size_near": [P, P, ctypes.POINTER(U), ctypes.POINTER(ctypes.c_int)],
               "snd_pcm_hw_params_set_buffer_size_near": [P, P, ctypes.POINTER(U)], "snd_pcm_hw_params": [P, P],
               "snd_pcm_hw_params_can_pause": [P],
               "snd_pcm_sw_params_malloc": [pp], "snd_pcm_sw_params_free": [P], "snd_pcm_sw_params_current": [P, P],
               "snd_pcm_sw_params_set_avail_min": [P, P, U], "snd_pcm_sw_params_set_start_threshold": [P, P, U],
               "snd_pcm_sw_params": [P, P], "snd_pcm_prepare": [P], "snd_pcm_drop": [P], "snd_pcm_close": [P],
               "snd_pcm_poll_descriptors_count": [P],
               "snd_pcm_writei": [P, ctypes.c_char_p, U]}
        for name, args in sig.items():
            f = getattr(a, name)
            f.argtypes = args
            f.restype = L if name == "snd_pcm_writei" else ctypes.c_int

    def check(self, rc, call):
        if rc < 0:
            raise RuntimeError(f"{call} on {DEVICE}: error {rc}")

    def start(self, wav_path, first_frames=1024):
        """Opens the WAV and the device, writes the first block; returns (pcm, seconds it took)."""
        a, c = self.lib, self.check
        t0 = time.perf_counter()
        w = wave.open(wav_path, "rb")
        frames = w.readframes(first_frames)
        rate0, ch0 = w.getframerate(), w.getnchannels()
        w.close()
        pcm = ctypes.c_void_p()
        c(a.snd_pcm_open(ctypes.byref(pcm), DEVICE.encode(), self.STREAM_PLAYBACK, self.NONBLOCK), "snd_pcm_open")
        hw = ctypes.c_void_p()
        c(a.snd_pcm_hw_params_malloc(ctypes.byref(hw)), "snd_pcm_hw_params_malloc")
        c(a.snd_pcm_hw_params_any(pcm, hw), "snd_pcm_hw_params_any")
        c(a.snd_pcm_hw_params_set_access(pcm, hw, self.ACCESS_RW_INTERLEAVED), "set_access")
        c(a.snd_pcm_hw_params_set_format(pcm, hw, self.FORMAT_S16_LE), "set_format")
        ch = ctypes.c_uint(ch0)
        c(a.snd_pcm_hw_params_set_channels_near(pcm, hw, ctypes.byref(ch)), "set_channels_near")
        rate = ctypes.c_uint(rate0)
        c(a.snd_pcm_hw_params_set_rate_near(pcm, hw, ctypes.byref(rate), None), "set_rate_near")
        period = ctypes.c_ulong(rate.value * 40 // 1000)
        c(a.snd_pcm_hw_params_set_period_size_near(pcm, hw, ctypes.byref(period), None), "set_period_size_near")
        buf = ctypes.c_ulong(rate.value * 400 // 1000)
        c(a.snd_pcm_hw_params_set_buffer_size_near(pcm, hw, ctypes.byref(buf)), "set_buffer_size_near")
        c(a.snd_pcm_hw_params(pcm, hw), "snd_pcm_hw_params")
        a.snd_pcm_hw_params_can_pause(hw)
        a.snd_pcm_hw_params_free(hw)
        sw = ctypes.c_void_p()
        c(a.snd_pcm_sw_params_malloc(ctypes.byref(sw)), "snd_pcm_sw_params_malloc")
        c(a.snd_pcm_sw_params_current(pcm, sw), "sw_params_current")
        c(a.snd_pcm_sw_params_set_avail_min(pcm, sw, period.value), "set_avail_min")
        c(a.snd_pcm_sw_params_set_start_threshold(pcm, sw, period.value), "set_start_threshold")
        c(a.snd_pcm_sw_params(pcm, sw), "snd_pcm_sw_params")
        a.snd_pcm_sw_params_free(sw)
        c(a.snd_pcm_prepare(pcm), "snd_pcm_prepare")
        c(a.snd_pcm_poll_descriptors_count(pcm), "snd_pcm_poll_descriptors_count")
        if (rate.value, ch.value) != (rate0, ch0):
            raise RuntimeError(f"{DEVICE} answered {rate.value} Hz × {ch.value}, not {rate0} × {ch0}")
        n = len(frames) // (2 * ch0)
        while True:
            got = a.snd_pcm_writei(pcm, frames, n)
            if got > 0:
                break
            if got not in (0, -11):   # -EAGAIN: the device has no room yet (it has, on an empty buffer)
                raise RuntimeError(f"snd_pcm_writei on {DEVICE}: error {got}")
            time.sleep(0.0005)
        return pcm, time.perf_counter() - t0

    def stop(self, pcm):
        self.lib.snd_pcm_drop(pcm)
        self.lib.snd_pcm_close(pcm)


def pct(xs, p):
    """Nearest-rank percentile."""
    s = sorted(xs)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


results = {}
try:
    pulse.start()
    template = os.path.join(WORK, "template.m4a")
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=1000:duration=0.5",
                    "-c:a", "aac", "-b:a", "64k", "-y", template], check=True)
    song = os.path.join(WORK, "song.m4a")
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=3",
                    "-ac", "2", "-ar", "48000", "-c:a", "aac", "-b:a", "128k", "-y", song], check=True)
    song_wav = os.path.join(WORK, "song.wav")   # the same audio, decoded once, for the peer
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", song, "-c:a", "pcm_s16le", "-y", song_wav], check=True)

    # --- the library: recd makes the schema, then ROWS rows and files go in directly ---------------
    data, sock = os.path.join(WORK, "data"), os.path.join(WORK, "recd.sock")
    log(f"recd: {RECD}; building a {ROWS:,}-row library")
    stop_recd(start_recd(data, sock))
    db_path = os.path.join(data, "catalog.sqlite")
    db = sqlite3.connect(db_path)
    rnd = random.Random(4)
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    src, batch, ready_ids = template, [], []
    size = os.path.getsize(template)
    for i in range(ROWS):
        if i % 60000 == 0:   # at most 60,000 links per inode
            src = os.path.join(WORK, f"template-{i}.m4a")
            shutil.copyfile(template, src)
        rid = str(uuid.uuid4()).upper()
        f = f"Recordings/audio_{rid}.m4a"
        os.link(src, os.path.join(data, f))
        state = "pending" if rnd.random() < 0.05 else "ready"
        if state == "ready":
            ready_ids.append(rid)
        created = (now - datetime.timedelta(seconds=ROWS - i)).strftime("%Y-%m-%d %H:%M:%S.000")
        # Measured as recd measures every take it stops (loudness, format): an unmeasured library
        # would run recd's background loudness pass, whose writes and CPU would be timed too.
        loud = json.dumps({"integrated": round(rnd.uniform(-40, -10), 2), "range": round(rnd.uniform(0, 15), 2),
                           "truePeak": round(rnd.uniform(-20, 0), 2)}, separators=(",", ":"))
        batch.append((rid, "audio", state, f"Recording {i}", "", created, 0.5, size, f, rnd.randint(0, 1000), 0, 0,
                      loud, "aac"))
    song_id = str(uuid.uuid4()).upper()
    song_file = f"Recordings/audio_{song_id}.m4a"
    shutil.copyfile(song, os.path.join(data, song_file))
    batch.append((song_id, "audio", "ready", "Song", "", now.strftime("%Y-%m-%d %H:%M:%S.000"), 3.0,
                  os.path.getsize(song), song_file, 0, 0, 0, None, "aac"))
    db.executemany("INSERT INTO recording (id, type, state, title, notes, createdAt, duration, sizeBytes, file,"
                   " playCount, recovered, droppedFrames, loudness, format) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", batch)
    db.commit()
    db.close()
    del batch
    ready = len(ready_ids) + 1   # with the song
    p = start_recd(data, sock)

    # --- 1. play start ------------------------------------------------------------------------------
    alsa = Alsa()

    def recd_play():
        body, total, _ = curl(sock, "POST", f"/v1/recordings/{song_id}/play", 201)
        reply = json.loads(body)
        if reply.get("replaced"):
            sys.exit("a play replaced another playback: the previous stop did not take")
        time.sleep(0.3)
        curl(sock, "POST", "/v1/playback/stop", 200)
        return reply["startLatencyMs"], total * 1000

    def peer_play():
        pcm, t = alsa.start(song_wav)
        time.sleep(0.3)
        alsa.stop(pcm)
        return t * 1000

    log(f"play start: {PLAYS} plays each (after one warm-up each), interleaved")
    # Warm-up: the first open loads the pulse plugin in each process, and recd's first play starts
    # its library worker (recd-media loading FFmpeg), kept for the plays after it: its figure is the
    # cold start a person meets after recd started or the worker's idle time (--ffmpeg-idle-unload).
    cold = recd_play()[0]; peer_play()
    lat, lat_curl, lat_peer = [], [], []

    def one_recd():
        a, b = recd_play()
        lat.append(a); lat_curl.append(b)

    def one_peer():
        lat_peer.append(peer_play())

    for i in range(PLAYS):   # alternating who goes first, so drift in load touches both alike
        for fn in ((one_recd, one_peer) if i % 2 == 0 else (one_peer, one_recd)):
            fn()
            time.sleep(0.1)
    plays_counted = json.loads(curl(sock, "GET", f"/v1/recordings/{song_id}", 200)[0])["playCount"]
    if plays_counted != PLAYS + 1:
        log(f"odd: the song's playCount is {plays_counted}, not {PLAYS + 1} (every stopped play counts)")
    results["play"] = (lat, lat_curl, lat_peer, cold)
    log(f"play start: recd {statistics.median(lat):.1f} ms (curl {statistics.median(lat_curl):.1f} ms), "
        f"peer {statistics.median(lat_peer):.1f} ms")

    # --- 2. top 50 ----------------------------------------------------------------------------------
    log(f"top 50: {TOP_RUNS} runs each, interleaved")
    want = [r[0] for r in sqlite3.connect(db_path).execute(TOP_SQL)]
    got = [r["id"] for r in json.loads(curl(sock, "GET", "/v1/top?limit=50", 200)[0])["recordings"]]
    if got != want:
        sys.exit(f"recd's top 50 differs from the SQL's: {got[:3]}… vs {want[:3]}…")
    server, via_curl, recctl, cli_proc = [], [], [], []
    for _ in range(TOP_RUNS):
        _, total, st = curl(sock, "GET", "/v1/top?limit=50", 200)
        if st is None:
            sys.exit("no Server-Timing header: is the recd binary older than it? Rebuild it.")
        server.append(st); via_curl.append(total * 1000)
        recctl.append(timed(lambda: subprocess.run([RECCTL, "--socket", sock, "--json", "top", "50"],
                                                   stdout=subprocess.DEVNULL, check=True)) * 1000)
        cli_proc.append(timed(lambda: subprocess.run(["sqlite3", db_path, TOP_SQL + ";"],
                                                     stdout=subprocess.DEVNULL, check=True)) * 1000)
    cli_query = cli_query_times(db_path, TOP_SQL, TOP_RUNS)
    # Warm: one kept-alive connection, after as many warm-up requests. Top 50 and a page of the
    # library; and top 50 right after a play of one of its rows (a write: the rows' kept JSON of
    # that row is dropped, so that reply renders it anew).
    keepalive(sock, [("GET", "/v1/top?limit=50")] * TOP_RUNS)
    warm_top = keepalive(sock, [("GET", "/v1/top?limit=50")] * TOP_RUNS)
    keepalive(sock, [("GET", "/v1/recordings?limit=50")] * TOP_RUNS)
    warm_list = keepalive(sock, [("GET", "/v1/recordings?limit=50")] * TOP_RUNS)
    cli_list = cli_query_times(db_path, LIST_SQL, TOP_RUNS)
    after_play = keepalive(sock, [("POST", f"/v1/recordings/{want[-1]}/played"), ("GET", "/v1/top?limit=50")] * TOP_RUNS)[1::2]
    conn = sqlite3.connect(db_path)
    conn.execute(TOP_SQL).fetchall()
    py_query = [timed(lambda: conn.execute(TOP_SQL).fetchall()) * 1000 for _ in range(TOP_RUNS)]
    conn.close()
    results["top"] = (server, via_curl, recctl, cli_proc, cli_query, py_query)
    results["warm"] = (warm_top, warm_list, cli_list, after_play)
    log(f"top 50: recd {statistics.median(server):.3f} ms in-server, {statistics.median(via_curl):.2f} ms curl, "
        f"{statistics.median(recctl):.1f} ms recctl; sqlite3 process {statistics.median(cli_proc):.1f} ms, "
        f"query {statistics.median(py_query):.3f} ms")

    # --- 3. play counts -----------------------------------------------------------------------------
    target = ready_ids[len(ready_ids) // 2]
    cfg = os.path.join(WORK, "played.curlrc")
    open(cfg, "w").write(f'url = "http://recd/v1/recordings/{target}/played"\noutput = "/dev/null"\n' * PER_CLIENT)
    log(f"play counts: {CLIENTS} clients × {PER_CLIENT} played")
    outs = [os.path.join(WORK, f"codes-{i}") for i in range(CLIENTS)]
    def cpu_of(pid):   # utime+stime in seconds, counted after the ")" that ends the command name
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    total_n = CLIENTS * PER_CLIENT

    def recd_round(p):
        """The clients against recd `p`, which is stopped after. (wall s, recd CPU s, curl CPU s)."""
        before = json.loads(curl(sock, "GET", f"/v1/recordings/{target}", 200)[0])["playCount"]
        recd_cpu0, kids0 = cpu_of(p.pid), resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        clients = [subprocess.Popen(["curl", "-s", "--unix-socket", sock, "-X", "POST", "-K", cfg, "-w", "%{http_code}\n"],
                                    stdout=open(o, "w"), stderr=subprocess.DEVNULL) for o in outs]
        procs.extend(clients)
        for c in clients:
            c.wait()
        wall = time.perf_counter() - t0
        recd_cpu, kids1 = cpu_of(p.pid) - recd_cpu0, resource.getrusage(resource.RUSAGE_CHILDREN)
        curl_cpu = (kids1.ru_utime + kids1.ru_stime) - (kids0.ru_utime + kids0.ru_stime)
        codes = {}
        for o in outs:
            for line in open(o).read().split():
                codes[line] = codes.get(line, 0) + 1
        after = json.loads(curl(sock, "GET", f"/v1/recordings/{target}", 200)[0])["playCount"]
        stop_recd(p)
        if codes != {"200": total_n} or after != before + total_n:
            log(f"error: replies {codes}; playCount {before} → {after}, expected {before + total_n}")
            sys.exit(1)
        return wall, recd_cpu, curl_cpu

    def peer_round():
        """Peer: recd is stopped; the same file, the same statement and durability, one writer.
        (wall s, CPU s)."""
        conn = sqlite3.connect(db_path, isolation_level=None)
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        conn.execute("PRAGMA synchronous = FULL")
        p0 = conn.execute("SELECT playCount FROM recording WHERE id = ?", (target,)).fetchone()[0]
        t0, peer_cpu0 = time.perf_counter(), time.process_time()
        for _ in range(total_n):
            stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
            conn.execute(UPDATE_SQL, (stamp, target))
        peer_wall = time.perf_counter() - t0
        peer_cpu = time.process_time() - peer_cpu0
        p1 = conn.execute("SELECT playCount FROM recording WHERE id = ?", (target,)).fetchone()[0]
        conn.close()
        if mode != "wal" or p1 != p0 + total_n:
            sys.exit(f"peer: journal_mode {mode}, playCount {p0} → {p1}")
        return peer_wall, peer_cpu

    # Rounds alternate (recd, then the peer, COUNT_ROUNDS times), so a change in the machine's
    # speed between them (seen here: the same clients took 1.6 s of CPU in one run, 2.6 s in the
    # next) touches both sides; the medians are compared.
    recd_rounds, peer_rounds = [], []
    for round_ in range(COUNT_ROUNDS):
        if round_ > 0:
            p = start_recd(data, sock)
        recd_rounds.append(recd_round(p))
        peer_rounds.append(peer_round())
        log(f"play counts, round {round_ + 1}: recd {total_n / recd_rounds[-1][0]:,.0f}/s, "
            f"peer {total_n / peer_rounds[-1][0]:,.0f}/s")
    wall, recd_cpu, curl_cpu = (statistics.median(r[i] for r in recd_rounds) for i in range(3))
    peer_wall, peer_cpu = (statistics.median(r[i] for r in peer_rounds) for i in range(2))
    results["count"] = (wall, peer_wall, total_n, recd_cpu, curl_cpu, peer_cpu)
    results["count_rounds"] = [pr[0] / rr[0] for rr, pr in zip(recd_rounds, peer_rounds)]
    log(f"play counts: recd {total_n / wall:,.0f}/s (recd {recd_cpu:.2f} s CPU, curl clients {curl_cpu:.2f} s), "
        f"peer {total_n / peer_wall:,.0f}/s ({peer_cpu:.2f} s CPU)")
finally:
    for pr in procs:
        if pr.poll() is None:
            pr.kill()
    pulse.stop()
    if os.environ.get("KEEP_WORK") == "1":
        log("work files kept in", WORK)
    else:
        shutil.rmtree(WORK, ignore_errors=True)

# --- BENCHMARKS.md ----------------------------------------------------------------------------------
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), os.uname().machine)
kind = build_kind(RECD)
med = statistics.median


def ms(x):
    return f"{x:.3f} ms" if x < 1 else f"{x:.2f} ms" if x < 10 else f"{x:.1f} ms"


def spread(xs):
    return f"{ms(med(xs))} | {ms(pct(xs, 90))} | {ms(min(xs))} | {ms(max(xs))}"


lat, lat_curl, lat_peer, cold = results["play"]
server, via_curl, recctl, cli_proc, cli_query, py_query = results["top"]
warm_top, warm_list, cli_list, after_play = results["warm"]
wall, peer_wall, total_n, recd_cpu, curl_cpu, peer_cpu = results["count"]
rate, peer_rate = total_n / wall, total_n / peer_wall
cli_q = med(cli_query)
lines = [
    TITLE, "",
    f"Written by `bench/playback.py` on {datetime.date.today()} — {os.cpu_count()} CPUs, {cpu}; recd: {kind} build "
    f"(`{os.path.relpath(os.path.abspath(RECD), REPO)}`).", "",
    f"**Play start** ({PLAYS} plays of a 3 s 48 kHz stereo AAC file, each stopped before the next, after one warm-up; "
    f"device `{DEVICE}`: ALSA's pulse plugin on a private PulseAudio null sink). recd's figure is its reply's "
    "`startLatencyMs`: request arrival → first successful `snd_pcm_writei`. The peer is the benchmark script "
    "itself calling libasound: open the same audio as WAV, read 1,024 frames, open and set up the device as recd "
    "does (S16, 40 ms periods, 400 ms buffer, start at one period), write them. It neither decodes AAC nor serves "
    "HTTP, so it is a floor, not a competitor. Every play after the first is forked by the library worker the "
    "first one started (recd-media with FFmpeg loaded, kept until its idle time); the first play's own figure "
    "is the cold start, with a worker started for it (and the pulse plugin loaded).", "",
    "| Play start | median | p90 | min | max | recd / peer (medians) |", "|---|---:|---:|---:|---:|---:|",
    f"| recd `startLatencyMs` | {spread(lat)} | {med(lat) / med(lat_peer):.2f}× |",
    f"| recd, curl `time_total` of the same requests | {spread(lat_curl)} | {med(lat_curl) / med(lat_peer):.2f}× |",
    f"| peer: WAV + libasound open, set-up, first write | {spread(lat_peer)} | 1.00× |",
    f"| recd, the first play (cold: a worker started for it), one sample | {ms(cold)} | | | | {cold / med(lat_peer):.2f}× |", "",
    f"**Quick Play, top 50** of {ROWS + 1:,} rows ({ready:,} ready), median of {TOP_RUNS}. SQL of the floors: "
    f"`{TOP_SQL}`.", "",
    "| Top 50 | median | p90 | min | max |", "|---|---:|---:|---:|---:|",
    f"| recd, in-server (`Server-Timing: app;dur`) | {spread(server)} |",
    f"| recd, curl `time_total` over the socket | {spread(via_curl)} |",
    f"| `recctl --json top 50`, spawn to exit | {spread(recctl)} |",
    f"| sqlite3 CLI, spawn to exit | {spread(cli_proc)} |",
    f"| sqlite3 CLI `.timer on`, query alone (user+sys CPU; one warm process) | {spread(cli_query)} |",
    f"| Python sqlite3 module, query + fetchall alone (wall; one warm connection) | {spread(py_query)} |", "",
    f"- recd in-server / sqlite3 CLI query alone: {med(server) / cli_q:.2f}× "
    f"(/ Python sqlite3 module: {med(server) / med(py_query):.2f}×)",
    f"- recctl end to end / sqlite3 CLI process: {med(recctl) / med(cli_proc):.2f}×", "",
    f"**Warm**: in-server time of {TOP_RUNS} requests on one kept-alive connection (after {TOP_RUNS} warm-up "
    "requests), beside the query alone in one warm sqlite3 process. The curl figures above pay a new "
    "connection and a cold cache per request (the process starts between them); these compare like with like. "
    f"The page of the library is `GET /v1/recordings?limit=50` (its floor: `{LIST_SQL}`; its `total` "
    "counted once and kept until a write). \"After a play\": each top 50 follows a counted play of one of "
    "its rows, so recd renders that row anew.", "",
    "| Warm, in-server | median | p90 | min | max | / query alone (medians) |", "|---|---:|---:|---:|---:|---:|",
    f"| top 50 | {spread(warm_top)} | {med(warm_top) / cli_q:.2f}× |",
    f"| top 50 right after a play of one of its rows | {spread(after_play)} | {med(after_play) / cli_q:.2f}× |",
    f"| library page of 50 (`list`) | {spread(warm_list)} | {med(warm_list) / med(cli_list):.2f}× |",
    f"| sqlite3 CLI, top 50 query alone | {spread(cli_query)} | 1.00× |",
    f"| sqlite3 CLI, library page query alone | {spread(cli_list)} | 1.00× |", "",
    f"**Play counts**: {CLIENTS} curl processes, each sending {PER_CLIENT} `POST /v1/recordings/{{id}}/played` "
    f"for one recording on one keep-alive connection. Each round's final play count was checked: +{total_n:,}. "
    "The peer runs with recd stopped: one Python sqlite3-module connection on the same file, WAL, "
    "`synchronous=FULL` as recd, the same `UPDATE`, each in its own transaction. "
    f"{COUNT_ROUNDS} rounds, recd and the peer alternating; medians.", "",
    "| Play counts | increments | wall time | increments/s | recd / peer | CPU s used meanwhile |",
    "|---|---:|---:|---:|---:|---|",
    f"| recd, {CLIENTS} clients | {total_n:,} | {wall:.2f} s | {rate:,.0f} | {rate / peer_rate:.2f}× "
    f"| recd {recd_cpu:.2f}, curl clients {curl_cpu:.2f} |",
    f"| peer: one SQLite writer, autocommit `UPDATE`s | {total_n:,} | {peer_wall:.2f} s | {peer_rate:,.0f} | 1.00× "
    f"| {peer_cpu:.2f} |", "",
    "- recd / peer in each round: " + ", ".join(f"{x:.2f}×" for x in results["count_rounds"]),
]
section = "\n".join(lines) + "\n"
print(section)
path = write_section(REPO, TITLE, section)
log("wrote", path)
