#!/usr/bin/env python3
"""Deletion and start-up recovery at scale, beside peers run in the same script.

  delete one      recd: DELETE /v1/recordings/{id} on a 10,000-recording library (curl's time_total),
                  median of 20; peer: the sqlite3 CLI deleting the row + unlinking the file.
  delete all      recd: DELETE /v1/recordings?confirm=all on 10,000 recordings (journal, moves, one
                  commit, unlinks); peer: sqlite3 CLI `DELETE FROM recording` + unlinking the files;
                  median of DELETE_ALL_RUNS, each on a fresh pair of libraries.
  status          the slowest `GET /v1/status` while a repair and a delete-all of 50,000 recordings run
                  (issue 13: blocking work off the actors; goal ≤ 100 ms); peer: the median status of
                  the same daemon idle.
  recovery        recd start-up (spawn → socket answers) with 100,000 rows and files, nothing to repair,
                  and again with 1,000 orphan media files to probe and adopt; peers: the sqlite3 CLI
                  listing every row's file + a directory listing and a stat per file (the floor of
                  comparing both sides), and ffprobe run on the 1,000 orphans.

Writes its section of BENCHMARKS.md. Env: RECD_BIN, RECCTL_BIN (default .build/release/...),
DELETE_ALL_RUNS (5).
"""
import os, shutil, sqlite3, statistics, subprocess, sys, tempfile, time, uuid, datetime
from benchmarks_md import build_kind, launch_recd, write_section

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(REPO)
RECD = os.environ.get("RECD_BIN", ".build/release/recd")
RECCTL = os.environ.get("RECCTL_BIN", ".build/release/recctl")
DELETE_ALL_RUNS = int(os.environ.get("DELETE_ALL_RUNS", "5"))
TITLE = "## Deletion and start-up recovery"
for b in (RECD, RECCTL):
    if not os.access(b, os.X_OK):
        subprocess.run(["swift", "build", "-c", "release"], check=True)
for tool in ("sqlite3", "curl", "ffmpeg", "ffprobe"):
    if not shutil.which(tool):
        sys.exit(f"missing {tool}: apt-get install sqlite3 curl ffmpeg")

WORK = tempfile.mkdtemp(prefix="recd-bench-")
TEMPLATE = os.path.join(WORK, "template.m4a")
subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=1000:duration=0.5",
                "-c:a", "aac", "-b:a", "64k", "-y", TEMPLATE], check=True)
procs = []


def log(*a):
    print("[catalog-ops]", *a, file=sys.stderr, flush=True)


def start_recd(data, sock):
    """Starts recd; returns (process, seconds until its socket answered)."""
    return launch_recd(RECD, data, sock, os.path.join(WORK, "recd.log"), procs=procs)


def stop_recd(p):
    p.terminate()
    p.wait(timeout=30)


def library(name, rows):
    """A data directory whose catalog (made by recd itself) holds `rows` ready recordings, each with
    its own file name (hard links of one small AAC file, 60,000 per inode at most)."""
    data = os.path.join(WORK, name)
    sock = os.path.join(WORK, name + ".sock")
    p, _ = start_recd(data, sock)   # creates the schema
    stop_recd(p)
    db = sqlite3.connect(os.path.join(data, "catalog.sqlite"))
    rec = os.path.join(data, "Recordings")
    src = TEMPLATE
    now = datetime.datetime.utcnow()
    batch = []
    ids = []
    for i in range(rows):
        if i % 60000 == 0:
            src = os.path.join(WORK, f"template-{name}-{i}.m4a")
            shutil.copyfile(TEMPLATE, src)
        rid = str(uuid.uuid4()).upper()
        f = f"Recordings/audio_{rid}.m4a"
        os.link(src, os.path.join(data, f))
        created = (now - datetime.timedelta(seconds=rows - i)).strftime("%Y-%m-%d %H:%M:%S.000")
        batch.append((rid, "audio", "ready", f"Recording {i}", "", created, 0.5, os.path.getsize(src), f, 0, 0, 0))
        ids.append(rid)
    db.executemany("INSERT INTO recording (id, type, state, title, notes, createdAt, duration, sizeBytes, file,"
                   " playCount, recovered, droppedFrames) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", batch)
    db.commit()
    db.close()
    return data, sock, ids


def curl_time(sock, method, path):
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", "--unix-socket", sock,
                        "-X", method, "http://recd" + path], capture_output=True, text=True, check=True)
    code, t = r.stdout.split()
    assert code == "200", r.stdout
    return float(t)


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def sqlite_cli(db, sql):
    subprocess.run(["sqlite3", db, sql], check=True, capture_output=True)


results = []
try:
    # 1. delete one, 2. delete all — on two identical 10,000-recording libraries (one per side).
    log("building two 10,000-recording libraries")
    data, sock, ids = library("lib10k", 10_000)
    peer, _, peer_ids = library("peer10k", 10_000)
    p, _ = start_recd(data, sock)
    one = [curl_time(sock, "DELETE", f"/v1/recordings/{rid}") for rid in ids[:20]]
    peer_db = os.path.join(peer, "catalog.sqlite")

    def peer_delete_one(rid):
        sqlite_cli(peer_db, f"DELETE FROM recording WHERE id = '{rid}'")
        os.unlink(os.path.join(peer, f"Recordings/audio_{rid}.m4a"))
    peer_one = [timed(lambda rid=rid: peer_delete_one(rid)) for rid in peer_ids[:20]]
    results.append(("delete one (10,000 in the library), median of 20", statistics.median(one), statistics.median(peer_one),
                    "sqlite3 CLI `DELETE … WHERE id` + unlink"))
    log(f"delete one: recd {statistics.median(one) * 1000:.1f} ms, peer {statistics.median(peer_one) * 1000:.1f} ms")

    # Delete all: one run is one number of a few tens of milliseconds, which moved 73–145 ms between
    # runs here; so DELETE_ALL_RUNS rounds, each on a fresh pair of libraries, medians compared.
    left = 10_000 - 20
    all_recd, all_peer = [], []
    for round_ in range(DELETE_ALL_RUNS):
        if round_ > 0:
            data, sock, _ = library(f"lib10k-{round_}", left)
            peer, _, _ = library(f"peer10k-{round_}", left)
            peer_db = os.path.join(peer, "catalog.sqlite")
            p, _ = start_recd(data, sock)
        all_recd.append(curl_time(sock, "DELETE", "/v1/recordings?confirm=all"))
        stop_recd(p)
        assert not [f for f in os.listdir(os.path.join(data, "Recordings")) if not f.startswith(".")]

        def peer_delete_all():
            sqlite_cli(peer_db, "DELETE FROM recording")
            rec = os.path.join(peer, "Recordings")
            for f in os.listdir(rec):
                os.unlink(os.path.join(rec, f))
        all_peer.append(timed(peer_delete_all))
        shutil.rmtree(data); shutil.rmtree(peer)
    t_all, t_peer_all = statistics.median(all_recd), statistics.median(all_peer)
    results.append((f"delete all ({left:,} recordings), median of {DELETE_ALL_RUNS}", t_all, t_peer_all,
                    "sqlite3 CLI `DELETE FROM recording` + unlink of every file"))
    log(f"delete all: recd {' '.join(f'{t * 1000:.0f}' for t in all_recd)} ms, "
        f"peer {' '.join(f'{t * 1000:.0f}' for t in all_peer)} ms")

    # 3. status while a repair and a delete-all of 50,000 run on recd's blocking pool.
    log("building a 50,000-recording library")
    data, sock, ids = library("lib50k", 50_000)
    p, _ = start_recd(data, sock)
    idle = [curl_time(sock, "GET", "/v1/status") for _ in range(50)]
    for rid in ids[::2]:
        os.unlink(os.path.join(data, f"Recordings/audio_{rid}.m4a"))

    def status_during(method, path):
        """Status asked again and again (one at a time) while the long request runs; its latencies."""
        long = subprocess.Popen(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", sock,
                                 "-X", method, "http://recd" + path], stdout=subprocess.PIPE, text=True)
        seen = []
        while long.poll() is None:
            t = curl_time(sock, "GET", "/v1/status")
            if long.poll() is None:
                seen.append(t)
        assert long.stdout.read() == "200"
        return seen
    for label, method, path in (("a repair of 50,000 (25,000 files gone)", "POST", "/v1/check/repair"),
                                ("a delete-all of 50,000", "DELETE", "/v1/recordings?confirm=all")):
        lat = status_during(method, path)
        assert lat, f"status was not asked during {label}"
        results.append((f"slowest `GET /v1/status` of {len(lat)} during {label} (goal ≤ 100 ms)", max(lat),
                        statistics.median(idle), "median `GET /v1/status` of the same daemon, idle"))
        log(f"status during {label}: worst {max(lat) * 1000:.1f} ms of {len(lat)}, idle median {statistics.median(idle) * 1000:.1f} ms")
    stop_recd(p)
    shutil.rmtree(data)

    # 4. start-up recovery with 100,000 rows and files.
    log("building a 100,000-recording library")
    data, sock, ids = library("lib100k", 100_000)
    p, t_clean = start_recd(data, sock)
    stop_recd(p)
    db = os.path.join(data, "catalog.sqlite")

    def peer_compare():
        out = subprocess.run(["sqlite3", db, "SELECT file FROM recording"], capture_output=True, text=True, check=True).stdout
        names = set(os.listdir(os.path.join(data, "Recordings")))
        for f in out.split():
            os.stat(os.path.join(data, f))
        return names
    t_peer_clean = timed(peer_compare)
    results.append(("start-up with 100,000 rows and files (nothing to repair)", t_clean, t_peer_clean,
                    "sqlite3 CLI listing every file + a directory listing + a stat per file"))
    log(f"start-up clean: recd {t_clean:.2f} s, peer {t_peer_clean:.2f} s")

    orphans = []
    for i in range(1000):
        f = os.path.join(data, "Recordings", f"orphan-{i:04d}.m4a")
        shutil.copyfile(TEMPLATE, f)
        orphans.append(f)
    t_peer_probe = timed(lambda: [subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", f],
                                                 capture_output=True, check=True) for f in orphans])
    p, t_adopt = start_recd(data, sock)
    r = subprocess.run([RECCTL, "--socket", sock, "--json", "status"], capture_output=True, text=True, check=True)
    assert '"adopted"' in r.stdout
    stop_recd(p)
    adopted = sqlite3.connect(db).execute("SELECT count(*) FROM recording WHERE recovered = 1").fetchone()[0]
    assert adopted == 1000, adopted
    results.append(("start-up with 100,000 rows and 1,000 orphan files to probe and adopt", t_adopt, t_peer_probe,
                    "ffprobe on the 1,000 orphans"))
    log(f"start-up adopting: recd {t_adopt:.2f} s, peer {t_peer_probe:.2f} s")
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
    shutil.rmtree(WORK, ignore_errors=True)

cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), os.uname().machine)
kind = build_kind(RECD)


def fmt(t):
    return f"{t * 1000:.1f} ms" if t < 1 else f"{t:.2f} s"


lines = [TITLE, "",
         f"Written by `bench/catalog-ops.py` on {datetime.date.today()} — {os.cpu_count()} CPUs, {cpu}; recd: {kind} build.",
         "", "Wall time. recd's requests are timed by curl (`time_total`); start-up is from spawning recd to its socket answering.",
         "", "| Operation | recd | peer | recd / peer | peer is |", "|---|---:|---:|---:|---|"]
for name, t, peer_t, peer_name in results:
    lines.append(f"| {name} | {fmt(t)} | {fmt(peer_t)} | {t / peer_t:.2f}× | {peer_name} |")
section = "\n".join(lines) + "\n"
print(section)
path = write_section(REPO, TITLE, section)
log("wrote", path)
