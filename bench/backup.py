#!/usr/bin/env python3
"""Backups through restic (issue 48): recd beside restic alone, on a library of MEMOS memos.

  library   MEMOS (1000) memos of 2 minutes, mono AAC-LC 128 kbit/s in .m4a (about 1.9 MB each,
            1.9 GB in all), each imported with `recctl import FILE --title … --notes …` (AAC in MP4
            is kept as it is: remuxed, not encoded); every fifth one counted as played 1–3 times.
            Each memo is distinct and does not compress: 12 segments of 10 s of pink noise drawn in
            a memo's own order from a pool of 90 (one ffmpeg encode of 15 minutes, cut without
            re-encoding), joined by ffmpeg's concat demuxer with `-c copy` (0.1 s a memo).
  first     recd: `recctl backup now --wait` into a fresh repository (made by `restic init`, not
            timed: `recctl backup init` would start a backup of its own), spawn to exit; also the
            run's own time (its status: startedAt → finishedAt: the stage, restic, no polling).
            Peer: the restic command recd runs (`restic backup --json --host H --tag recd
            --ignore-ctime .`, the same cache option, nice 19 and the idle I/O class) run alone in a
            folder holding the same files (hard links of the data directory's Recordings/ and a
            `VACUUM INTO` copy of catalog.sqlite), into a fresh repository of its own.
  new memo  one more memo imported (recd) and linked into the peer's folder with a fresh catalog
            copy (peer), then each side's next backup, timed the same way. Once at the full
            library and once at GROWTH memos (MEMOS/10) on the way there: how it grows.
  restore   `recctl restore --into DIR` (no daemon: recctl runs restic) vs `restic restore latest
            --tag recd --target DIR --no-cache` (the command recctl runs), both from recd's
            repository, spawn to exit.
  CPU       during recd's backups: recd's own utime+stime (/proc/PID/stat; its restic excluded) and
            its restic's (recd's cutime+cstime: recd reaps restic; no other child of recd lives or
            ends meanwhile, which the script checks); the peer's restic by getrusage(RUSAGE_CHILDREN).
  first word  (needs PulseAudio: skipped with --no-first-word or without it) a take started while a
            first backup runs, beside takes with no backup: sound lost at the start = wall time from
            before the start request to before the stop request minus the file's duration (ffprobe),
            as in bench/first-word.py (warm media worker).
ROUNDS (3) rounds; in each, recd and the peer alternate which goes first; medians. recd and its
repository are made anew each round. Whole run at nice 19 / idle I/O (recd starts restic so anyway).

Writes its section of BENCHMARKS.md (not with --no-write or BENCH_NO_WRITE=1). Options: --memos N,
--rounds R, --growth-at M (0: no), --no-first-word; --make-library DIR [--memos N] only builds a data
directory of N memos (scripts/backup-long.sh uses it) and exits. Env: RECD_BIN_DIR (a directory with
recd, recd-media and recctl), or RECD_BIN, RECCTL_BIN (default .build/release/..., built if missing);
MEMOS, ROUNDS; KEEP_WORK=1. Disk: the library, plus two repositories and two restores of it at a time
(about 5× the library: 10 GB for 1,000 memos).
"""
import argparse, ctypes, datetime, json, os, random, resource, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchmarks_md import build_kind, PrivatePulse, launch_recd, write_section   # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TITLE = "## Backups (restic)"
SEGMENT_SECONDS, SEGMENTS_PER_MEMO, POOL_SEGMENTS = 10, 12, 90
PASSWORD = "bench password of recd's backups\n"


def log(*a):
    print("[backup]", *a, file=sys.stderr, flush=True)


def binaries():
    bin_dir = os.environ.get("RECD_BIN_DIR")
    recd = os.environ.get("RECD_BIN", os.path.join(bin_dir, "recd") if bin_dir else os.path.join(REPO, ".build/release/recd"))
    recctl = os.environ.get("RECCTL_BIN", os.path.join(bin_dir, "recctl") if bin_dir else os.path.join(REPO, ".build/release/recctl"))
    if not any(k in os.environ for k in ("RECD_BIN_DIR", "RECD_BIN", "RECCTL_BIN")):
        if not (os.access(recd, os.X_OK) and os.access(recctl, os.X_OK)):
            subprocess.run(["swift", "build", "-c", "release"], cwd=REPO, check=True)
    for b in (recd, recctl):
        if not os.access(b, os.X_OK):
            sys.exit(f"{b} is not an executable")
    return os.path.abspath(recd), os.path.abspath(recctl)


def need(*tools):
    pkgs = {"restic": "restic", "ffmpeg": "ffmpeg", "ffprobe": "ffmpeg", "curl": "curl", "sqlite3": "sqlite3",
            "pulseaudio": "pulseaudio", "paplay": "pulseaudio-utils", "pactl": "pulseaudio-utils", "sox": "sox"}
    missing = sorted({pkgs.get(t, t) for t in tools if not shutil.which(t)})
    if missing:
        sys.exit(f"missing tools: apt-get install {' '.join(missing)}")


# --- the library ----------------------------------------------------------------------------------

class MemoMaker:
    """Distinct 2-minute AAC memos, cheaply: a pool of 10 s pink-noise segments encoded once, each memo
    12 of them in its own order (seeded by its index), joined without re-encoding."""

    def __init__(self, work):
        self.dir = os.path.join(work, "pool")
        os.makedirs(self.dir)
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i",
                        f"anoisesrc=color=pink:seed=4242:sample_rate=48000:amplitude=0.3:duration={POOL_SEGMENTS * SEGMENT_SECONDS}",
                        "-ac", "1", "-c:a", "aac", "-b:a", "128k", "-f", "segment", "-segment_time", str(SEGMENT_SECONDS),
                        "-reset_timestamps", "1", "-segment_format", "mp4", os.path.join(self.dir, "pool%03d.m4a")], check=True)
        # The last piece may be a few packets long: only whole segments.
        self.pool = sorted(os.path.join(self.dir, f) for f in os.listdir(self.dir)
                           if f.startswith("pool") and os.path.getsize(os.path.join(self.dir, f)) > 100_000)
        if len(self.pool) < SEGMENTS_PER_MEMO:
            sys.exit(f"the segment pool holds {len(self.pool)} segments")

    def make(self, index, out):
        listing = out + ".txt"
        with open(listing, "w") as f:
            for seg in random.Random(index).sample(self.pool, SEGMENTS_PER_MEMO):
                f.write(f"file '{seg}'\n")
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "concat", "-safe", "0", "-i", listing, "-c", "copy",
                        "-movflags", "+faststart", "-y", out], check=True)
        os.unlink(listing)
        return out


def recctl_json(recctl, sock, *args):
    r = subprocess.run([recctl, "--socket", sock, "--json", *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"recctl {' '.join(args)}: exit {r.returncode}: {r.stdout[-500:]} {r.stderr[-500:]}")
    return json.loads(r.stdout) if r.stdout.strip() else None


def import_memos(recctl, sock, maker, work, first, count, plays=True):
    """Imports memos `first` ..< `first + count` (title "Memo N", notes of their own; every fifth
    counted as played 1–3 times). Returns their ids."""
    ids = []
    t0 = time.perf_counter()
    for i in range(first, first + count):
        path = maker.make(i, os.path.join(work, f"memo-{i:05d}.m4a"))
        rec = recctl_json(recctl, sock, "import", path, "--title", f"Memo {i:05d}",
                          "--notes", f"memo {i} of the backup bench, pool order {random.Random(i).randrange(10**6)}")
        os.unlink(path)
        ids.append(rec["id"])
        if plays and i % 5 == 0:
            for _ in range(i % 3 + 1):
                recctl_json(recctl, sock, "played", rec["id"])
        done = i - first + 1
        if done % 100 == 0 or done == count:
            log(f"  imported {done}/{count} ({time.perf_counter() - t0:.0f} s)")
    return ids


def make_library(recd, recctl, data, memos):
    """A data directory of `memos` memos made through recd (started and stopped here)."""
    need("ffmpeg", "curl")
    if os.path.exists(data) and os.listdir(data):
        sys.exit(f"{data} exists and is not empty")
    work = tempfile.mkdtemp(prefix="recd-backup-lib-")
    procs = []
    try:
        maker = MemoMaker(work)
        p, _ = launch_recd(recd, data, os.path.join(work, "recd.sock"), os.path.join(work, "recd.log"),
                           "--playback-device", "null", "--transcribe", "off", procs=procs)
        import_memos(recctl, os.path.join(work, "recd.sock"), maker, work, 0, memos)
        p.terminate()
        p.wait(timeout=60)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


# --- measuring ------------------------------------------------------------------------------------

def stat_fields(pid):
    return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()


def own_and_children_cpu(pid):
    """(recd's own utime+stime, its reaped children's cutime+cstime), in seconds."""
    f = stat_fields(pid)
    tick = os.sysconf("SC_CLK_TCK")
    return (int(f[11]) + int(f[12])) / tick, (int(f[13]) + int(f[14])) / tick


def live_children(pid):
    kids = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            kids.update(open(f"/proc/{pid}/task/{task}/children").read().split())
        except OSError:
            pass
    return kids


def media_worker_cpu(pid):
    """CPU seconds of recd's media workers now: every recd-media child of `pid` (its utime+stime and
    its reaped children's, the take's job processes), and each live job process it forked (a zombie's
    times still read). restic, recd's other child, is left out."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for kid in live_children(pid):
        try:
            if open(f"/proc/{kid}/comm").read().strip() != "recd-media":
                continue
            f = stat_fields(kid)
            total += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])
            for job in live_children(kid):
                j = stat_fields(job)
                total += int(j[11]) + int(j[12])
        except OSError:
            pass   # ended meanwhile: a worker at its idle time (the takes keep theirs warm)
    return total / tick


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def idle_priority():
    """What recd does for its restic (CProcessShim: nice 19, the idle I/O class)."""
    os.setpriority(os.PRIO_PROCESS, 0, 19)
    ctypes.CDLL(None, use_errno=True).syscall(251, 1, 0, 3 << 13)   # SYS_ioprio_set (x86_64), IOPRIO_WHO_PROCESS, IDLE


def parse_time(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--memos", type=int, default=int(os.environ.get("MEMOS", "1000")))
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("ROUNDS", "3")))
    ap.add_argument("--growth-at", type=int, default=None, help="also a backup after one new memo at this many memos (default MEMOS/10; 0: no)")
    ap.add_argument("--no-first-word", action="store_true", help="skip the take started mid-backup (needs PulseAudio)")
    ap.add_argument("--no-write", action="store_true", help="print the section, leave BENCHMARKS.md alone")
    ap.add_argument("--make-library", metavar="DIR", help="only build a data directory of --memos memos in DIR, then exit")
    args = ap.parse_args()
    recd, recctl = binaries()
    if args.make_library:
        make_library(recd, recctl, os.path.abspath(args.make_library), args.memos)
        return
    no_write = args.no_write or os.environ.get("BENCH_NO_WRITE") == "1"
    memos, rounds = args.memos, args.rounds
    growth_at = args.growth_at if args.growth_at is not None else memos // 10
    if not 0 < growth_at < memos:
        growth_at = 0
    need("restic", "ffmpeg", "ffprobe", "curl", "sqlite3")
    first_word = not args.no_first_word and all(shutil.which(t) for t in ("pulseaudio", "paplay", "pactl", "sox"))
    if not args.no_first_word and not first_word:
        log("no PulseAudio (apt-get install pulseaudio pulseaudio-utils sox libasound2-plugins): the first word is skipped")
    restic = shutil.which("restic")
    restic_version = subprocess.run([restic, "version"], capture_output=True, text=True).stdout.split(" compiled")[0].strip()
    load = os.getloadavg()[0]
    host = socket.gethostname()

    work = tempfile.mkdtemp(prefix="recd-backup-")
    data, sock = os.path.join(work, "data"), os.path.join(work, "recd.sock")
    peer = os.path.join(work, "peer")          # the peer's folder: the same files
    os.makedirs(os.path.join(peer, "Recordings"))
    password = os.path.join(work, "password")
    with open(os.open(password, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(PASSWORD)
    procs = []
    state = {"recd": None, "player": None, "pulse": None}

    def stop_recd():
        p = state["recd"]
        if p is not None and p.poll() is None:
            p.terminate()
            p.wait(timeout=120)
        state["recd"] = None

    def start_recd(repository=None, *extra):
        """recd anew (its .backup state and restic cache gone), backing up to `repository`."""
        stop_recd()
        shutil.rmtree(os.path.join(data, ".backup"), ignore_errors=True)
        flags = ["--playback-device", "null", "--transcribe", "off"]
        if repository:
            flags += ["--backup", repository, "--backup-password-file", password, "--backup-delay", "86400",
                      "--backup-check-interval", "never"]
        p, _ = launch_recd(recd, data, sock, os.path.join(work, "recd.log"), *flags, *extra, procs=procs)
        state["recd"] = p
        return p

    def restic_cmd(repository, *rest, cache=None):
        return [restic, "--repo", repository, "--password-file", password] + (["--cache-dir", cache] if cache else ["--no-cache"]) + list(rest)

    def new_repository(name):
        path = os.path.join(work, name)
        r = subprocess.run(restic_cmd(path, "init"), capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            sys.exit(f"restic init {path}: {r.stderr}")
        return path

    def drop(*paths):
        for p in paths:
            shutil.rmtree(p, ignore_errors=True)

    def sync_peer():
        """The peer's folder holds what recd's stage holds: a link to each recording's file and a fresh
        copy of the catalog (a new file, as recd's stage has each run)."""
        src, dst = os.path.join(data, "Recordings"), os.path.join(peer, "Recordings")
        have = {f for f in os.listdir(src) if not f.startswith(".") and os.path.isfile(os.path.join(src, f))}
        got = set(os.listdir(dst))
        for f in have - got:
            os.link(os.path.join(src, f), os.path.join(dst, f))
        for f in got - have:
            os.unlink(os.path.join(dst, f))
        tmp = os.path.join(work, "catalog-copy.sqlite")
        if os.path.exists(tmp):
            os.unlink(tmp)
        subprocess.run(["sqlite3", os.path.join(data, "catalog.sqlite"), f"VACUUM INTO '{tmp}'"], check=True)
        os.replace(tmp, os.path.join(peer, "catalog.sqlite"))
        return len(have)

    def quiet_children(pid, timeout=60):
        t0 = time.perf_counter()
        while live_children(pid):
            if time.perf_counter() - t0 > timeout:
                sys.exit(f"recd still has children {live_children(pid)} after {timeout} s")
            time.sleep(0.1)

    def recd_backup():
        pid = state["recd"].pid
        quiet_children(pid)
        own0, kids0 = own_and_children_cpu(pid)
        t0 = time.perf_counter()
        r = subprocess.run([recctl, "--socket", sock, "--json", "backup", "now", "--wait"], capture_output=True, text=True)
        wall = time.perf_counter() - t0
        own1, kids1 = own_and_children_cpu(pid)
        if r.returncode != 0:
            sys.exit(f"recctl backup now --wait: exit {r.returncode}: {r.stdout[-800:]} {r.stderr[-400:]}")
        if live_children(pid):
            log(f"  note: recd has children after its backup: {live_children(pid)}")
        last = json.loads(r.stdout)["lastSuccess"]
        return dict(wall=wall, run=parse_time(last["finishedAt"]) - parse_time(last["startedAt"]), own=own1 - own0,
                    restic=kids1 - kids0, added=last["addedBytes"], total=last["totalBytes"], recordings=last["recordings"])

    def peer_backup(repository, cache):
        c0 = children_cpu()
        t0 = time.perf_counter()
        p = subprocess.Popen(restic_cmd(repository, "backup", "--json", "--host", host, "--tag", "recd", "--ignore-ctime", ".", cache=cache),
                             cwd=peer, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, preexec_fn=idle_priority)
        out, err = p.communicate()
        wall = time.perf_counter() - t0
        cpu = children_cpu() - c0
        summary = next((json.loads(l) for l in out.splitlines() if '"message_type":"summary"' in l), None)
        if p.returncode != 0 or summary is None:
            sys.exit(f"restic backup (peer): exit {p.returncode}: {err[-800:]}")
        return dict(wall=wall, restic=cpu, added=summary.get("data_added", 0), total=summary.get("total_bytes_processed", 0))

    def timed_child(cmd, **kw):
        c0 = children_cpu()
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, **kw)
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd[:3])} …: exit {r.returncode}: {r.stdout[-500:]} {r.stderr[-800:]}")
        return dict(wall=wall, cpu=children_cpu() - c0)

    def restored_count(d):
        rec = os.path.join(d, "Recordings")
        if not os.path.exists(os.path.join(d, "catalog.sqlite")):
            sys.exit(f"no catalog.sqlite in the restore {d}")
        return len([f for f in os.listdir(rec) if not f.startswith(".")])

    def pair(first_recd, recd_fn, peer_fn):
        """Both sides, in the order given; returns (recd's, peer's)."""
        if first_recd:
            a = recd_fn()
            return a, peer_fn()
        b = peer_fn()
        return recd_fn(), b

    def fmt_b(d):
        return f"{d['wall']:.2f} s (run {d['run']:.2f} s, recd CPU {d['own']:.2f} s, its restic {d['restic']:.2f} s)"

    results = {"first": [], "first_peer": [], "inc": [], "inc_peer": [], "growth": [], "growth_peer": [],
               "restore": [], "restore_peer": [], "mid": [], "idle": [], "mid_running": 0}
    next_memo = [0]

    def add_memos(n, plays=True):
        ids = import_memos(recctl, sock, maker, work, next_memo[0], n, plays=plays)
        next_memo[0] += n
        return ids

    try:
        log(f"{memos} memos, {rounds} round(s); recd {recd}; {restic_version}; work in {work}")
        maker = MemoMaker(work)
        start_recd()
        t_build = time.perf_counter()

        # How a backup after one new memo grows with the library: first at growth_at memos.
        if growth_at:
            log(f"building the library: {growth_at} memos")
            add_memos(growth_at)
            repo_g, peer_g = new_repository("repo-growth"), new_repository("peer-repo-growth")
            cache_g = os.path.join(work, "peer-cache-growth")
            start_recd(repo_g)
            sync_peer()
            log(f"first backups at {growth_at} memos (not timed for the figures)")
            pair(True, recd_backup, lambda: peer_backup(peer_g, cache_g))
            for r in range(rounds):
                add_memos(1, plays=False)
                sync_peer()
                a, b = pair(r % 2 == 0, recd_backup, lambda: peer_backup(peer_g, cache_g))
                results["growth"].append(a)
                results["growth_peer"].append(b)
                log(f"  +1 memo at {growth_at + r + 1} memos: recd {fmt_b(a)}; restic alone {b['wall']:.2f} s (CPU {b['restic']:.2f} s)")
            stop_recd()
            drop(repo_g, peer_g, cache_g)
            start_recd()
        log(f"building the library: {memos - next_memo[0]} more memos")
        add_memos(memos - next_memo[0])
        build_s = time.perf_counter() - t_build
        library_bytes = sum(os.path.getsize(os.path.join(data, "Recordings", f)) for f in os.listdir(os.path.join(data, "Recordings"))
                            if not f.startswith("."))
        log(f"library: {memos} memos, {library_bytes / 1e9:.2f} GB, built in {build_s:.0f} s")

        for r in range(rounds):
            recd_first = r % 2 == 0
            log(f"round {r + 1}/{rounds} ({'recd' if recd_first else 'restic alone'} first)")
            repo, peer_repo = new_repository(f"repo-{r}"), new_repository(f"peer-repo-{r}")
            peer_cache = os.path.join(work, f"peer-cache-{r}")
            start_recd(repo)
            files = sync_peer()
            a, b = pair(recd_first, recd_backup, lambda: peer_backup(peer_repo, peer_cache))
            if a["recordings"] != files:
                log(f"  note: recd's snapshot holds {a['recordings']} recordings, the peer's folder {files} files")
            results["first"].append(a)
            results["first_peer"].append(b)
            log(f"  first backup: recd {fmt_b(a)}; restic alone {b['wall']:.2f} s (CPU {b['restic']:.2f} s); "
                f"added {a['added'] / 1e9:.2f} GB (recd) / {b['added'] / 1e9:.2f} GB (restic alone) of {a['total'] / 1e9:.2f} GB")
            new_id = add_memos(1, plays=False)[0]
            sync_peer()
            a, b = pair(recd_first, recd_backup, lambda: peer_backup(peer_repo, peer_cache))
            results["inc"].append(a)
            results["inc_peer"].append(b)
            log(f"  +1 memo at {memos + 1} memos: recd {fmt_b(a)}; restic alone {b['wall']:.2f} s (CPU {b['restic']:.2f} s)")
            into, into_peer = os.path.join(work, f"restored-{r}"), os.path.join(work, f"restored-peer-{r}")
            a, b = pair(recd_first,
                        lambda: timed_child([recctl, "restore", "--into", into, "--repository", repo, "--password-file", password]),
                        lambda: timed_child(restic_cmd(repo, "restore", "latest", "--tag", "recd", "--target", into_peer),
                                            preexec_fn=idle_priority))
            n_recd, n_peer = restored_count(into), restored_count(into_peer)
            if n_recd != memos + 1 or n_peer != memos + 1:
                sys.exit(f"restored {n_recd} (recctl) and {n_peer} (restic) recordings, not {memos + 1}")
            results["restore"].append(a)
            results["restore_peer"].append(b)
            log(f"  restore: recctl {a['wall']:.2f} s (CPU {a['cpu']:.2f} s); restic alone {b['wall']:.2f} s (CPU {b['cpu']:.2f} s)")
            subprocess.run([recctl, "--socket", sock, "delete", new_id, "--yes"], check=True, capture_output=True)
            stop_recd()
            drop(repo, peer_repo, peer_cache, into, into_peer)
            os.sync()

        if first_word:
            log("first word: takes while a first backup runs, and with none")
            pulse = PrivatePulse(work, "mic")
            pulse.start()
            state["pulse"] = pulse
            tone = os.path.join(work, "tone.wav")
            subprocess.run(["sox", "-n", "-r", "48000", "-c", "1", "-b", "16", tone, "synth", "900", "sine", "440", "vol", "0.5"], check=True)

            def player():
                if state["player"] is None or state["player"].poll() is not None:
                    state["player"] = subprocess.Popen(["paplay", "--latency-msec=10", "-d", "mic", tone])
                    procs.append(state["player"])

            def post(path):
                r = subprocess.run(["curl", "-s", "-w", "\n%{http_code}", "--unix-socket", sock, "-X", "POST",
                                    "-H", "Content-Type: application/json", "-d", "{}", "http://recd" + path],
                                   capture_output=True, text=True, check=True)
                body, code = r.stdout.rsplit("\n", 1)
                if code not in ("200", "201", "202"):
                    sys.exit(f"POST {path}: HTTP {code}: {body[:300]}")
                return json.loads(body)

            def backup_state():
                r = subprocess.run(["curl", "-s", "--unix-socket", sock, "http://recd/v1/backup"], capture_output=True, text=True, check=True)
                return json.loads(r.stdout)

            def take():
                player()
                pid = state["recd"].pid
                own0, worker0 = own_and_children_cpu(pid)[0], media_worker_cpu(pid)
                t0 = time.perf_counter()
                started = post("/v1/record/start")
                time.sleep(max(0, 2 - (time.perf_counter() - t0)))
                t1 = time.perf_counter()
                stopped = post("/v1/record/stop")["recording"]
                # The take's CPU, start to finalized: the media worker's (encode, write, finalize) and
                # recd's own (capture, meters; mid-backup also the backup's own work in recd, which
                # its restic's is not).
                own1, worker1 = own_and_children_cpu(pid)[0], media_worker_cpu(pid)
                d = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0",
                                    os.path.join(data, stopped["file"])], capture_output=True, text=True, check=True)
                subprocess.run([recctl, "--socket", sock, "discard", stopped["id"], "--yes"], check=True, capture_output=True)
                return dict(lost=(t1 - t0) - float(d.stdout.strip()), latency=started.get("startLatencyMs"),
                            seconds=float(d.stdout.strip()), worker=worker1 - worker0, own=own1 - own0)

            repo_e = new_repository("repo-first-word")
            start_recd(repo_e, "--capture-device", "pulse:mic.monitor", "--channels", "2")
            player()
            take()   # starts the media worker (kept 30 s idle): every take below is warm
            post("/v1/backup")
            t0 = time.perf_counter()
            while backup_state()["state"] != "running":
                if time.perf_counter() - t0 > 30:
                    sys.exit("the backup did not start")
                time.sleep(0.01)
            while len(results["mid"]) < rounds and backup_state()["state"] == "running":
                results["mid"].append(take())
                log(f"  take started mid-backup: lost {results['mid'][-1]['lost'] * 1000:.0f} ms")
            while backup_state()["state"] == "running":
                time.sleep(0.2)
            if backup_state().get("lastError"):
                sys.exit(f"the backup under the takes failed: {backup_state()['lastError']}")
            take()   # the worker again (it ends 30 s after its last take; a long backup outlasts that)
            for _ in range(rounds):
                results["idle"].append(take())
                log(f"  take with no backup: lost {results['idle'][-1]['lost'] * 1000:.0f} ms")
            stop_recd()
            drop(repo_e)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()
        if state["pulse"]:
            state["pulse"].stop()
        if os.environ.get("KEEP_WORK") != "1":
            shutil.rmtree(work, ignore_errors=True)
        else:
            log(f"kept {work}")

    # --- the section ------------------------------------------------------------------------------
    def col(key, field):
        return median([d[field] for d in results[key]])

    def size(n):
        return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"

    growth_label = f"{growth_at + 1:,}" if rounds == 1 else f"{growth_at + 1:,}–{growth_at + rounds:,}"

    def ms_list(key):
        return " ".join(f"{d['lost'] * 1000:.0f}" for d in results[key])

    def cpu_per_s(key, field):
        return f"{median([d[field] / d['seconds'] for d in results[key]]) * 1000:.0f} ms"

    def all_of(key, field):
        return " ".join(f"{d[field]:.2f}" for d in results[key])

    cpu_model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), os.uname().machine)
    kind = build_kind(recd)
    first, first_p = col("first", "wall"), col("first_peer", "wall")
    first_run = col("first", "run")
    inc, inc_p, inc_run = col("inc", "wall"), col("inc_peer", "wall"), col("inc", "run")
    rest, rest_p = col("restore", "wall"), col("restore_peer", "wall")
    lines = [TITLE, "",
             f"Written by `bench/backup.py` on {datetime.date.today()} — {os.cpu_count()} CPUs, {cpu_model}; recd: {kind} build; "
             f"{restic_version}; load average {load:.2f} at the start. The whole run at nice 19 and the idle I/O class (recd starts "
             "its restic so; the peer is started so).", "",
             f"Library: {memos:,} memos of 2 minutes (mono AAC-LC 128 kbit/s, pink noise that does not compress; {size(library_bytes)}), "
             f"imported with `recctl import`, every fifth one played 1–3 times. {rounds} round(s), recd and restic alone taking turns to go "
             "first; medians (each round's figures after them). Peer: the restic command recd runs (`restic backup --json --host H --tag "
             "recd --ignore-ctime .` with a cache folder) run alone on a folder of the same files (hard links of `Recordings/` and a "
             "`VACUUM INTO` copy of `catalog.sqlite`), into a fresh repository of its own made the same way (`restic init`, not timed).", "",
             "| | recd | restic alone | recd / restic |", "|---|---:|---:|---:|",
             f"| first backup, fresh repository: `recctl backup now --wait`, spawn to exit | {first:.2f} s ({all_of('first', 'wall')}) | "
             f"{first_p:.2f} s ({all_of('first_peer', 'wall')}) | **{first / first_p:.2f}×** |",
             f"| the same, the run's own time (recd's status: stage made, restic run, no polling) | {first_run:.2f} s | | {first_run / first_p:.2f}× |",
             f"| backup after one new memo, at {memos + 1:,} memos (`--wait`) | {inc:.2f} s ({all_of('inc', 'wall')}) | "
             f"{inc_p:.2f} s ({all_of('inc_peer', 'wall')}) | {inc / inc_p:.2f}× |",
             f"| the same, the run's own time | {inc_run:.2f} s | | {inc_run / inc_p:.2f}× |"]
    if results["growth"]:
        g, g_p, g_run = col("growth", "wall"), col("growth_peer", "wall"), col("growth", "run")
        lines += [f"| backup after one new memo, at {growth_label} memos (`--wait`) | {g:.2f} s ({all_of('growth', 'wall')}) | "
                  f"{g_p:.2f} s ({all_of('growth_peer', 'wall')}) | {g / g_p:.2f}× |",
                  f"| the same, the run's own time | {g_run:.2f} s | | {g_run / g_p:.2f}× |"]
    lines += [f"| restore: `recctl restore --into DIR` vs `restic restore latest --tag recd --target DIR --no-cache`, same repository | "
              f"{rest:.2f} s ({all_of('restore', 'wall')}) | {rest_p:.2f} s ({all_of('restore_peer', 'wall')}) | {rest / rest_p:.2f}× |", "",
              "CPU seconds (user+sys) during the backups, medians: recd's own (`/proc/PID/stat` utime+stime, restic excluded; it answers "
              "`--wait`'s status request every 250 ms meanwhile), its restic's (recd's cutime+cstime: recd reaps it; the script waits "
              "for the import's media worker to end first, so no other child of recd runs meanwhile), and restic alone's (getrusage of the reaped child).", "",
              "| | recd itself | recd's restic | restic alone |", "|---|---:|---:|---:|",
              f"| first backup | {col('first', 'own'):.2f} s ({col('first', 'own') / first * 100:.1f} % of a CPU over the run) | "
              f"{col('first', 'restic'):.2f} s | {col('first_peer', 'restic'):.2f} s |",
              f"| after one new memo, at {memos + 1:,} memos | {col('inc', 'own'):.2f} s | {col('inc', 'restic'):.2f} s | {col('inc_peer', 'restic'):.2f} s |"]
    if results["growth"]:
        lines.append(f"| after one new memo, at {growth_label} memos | {col('growth', 'own'):.2f} s | "
                     f"{col('growth', 'restic'):.2f} s | {col('growth_peer', 'restic'):.2f} s |")
    added = median([d["added"] for d in results["first"]])
    lines += ["", f"The first snapshot added {size(added)} to the repository for {size(library_bytes)} of recordings "
              f"(restic's `data_added`, after its compression and deduplication: the memos neither compress nor share chunks).", "",
              f"Goal (issue 48): the first backup ≤ 1.1× restic's — {'met' if first <= 1.1 * first_p else 'NOT met'} ({first / first_p:.2f}×; "
              f"the run's own time {first_run / first_p:.2f}×)."]
    if first_word:
        if results["mid"]:
            mid_lost = median([d["lost"] for d in results["mid"]])
            lines += ["", f"**First word of a take started mid-backup** (a take of 2 s from a private PulseAudio null sink's monitor, "
                      "`pulse:mic.monitor`, a tone playing; the media worker warm; lost = wall time from before the start request to "
                      "before the stop request, minus the file's duration, as in `bench/first-word.py`). The backup: a first one into a "
                      "fresh repository, the take started once recd's status said `running`.", "",
                      "| take | sound lost | request → first buffer (`startLatencyMs`) | media worker CPU per s recorded | recd's own CPU per s recorded |",
                      "|---|---:|---:|---:|---:|",
                      f"| started while a first backup runs ({len(results['mid'])}) | {mid_lost * 1000:.0f} ms ({ms_list('mid')}) | "
                      f"{median([d['latency'] for d in results['mid']]):.1f} ms | {cpu_per_s('mid', 'worker')} | {cpu_per_s('mid', 'own')} |",
                      f"| no backup ({len(results['idle'])}) | {median([d['lost'] for d in results['idle']]) * 1000:.0f} ms ({ms_list('idle')}) | "
                      f"{median([d['latency'] for d in results['idle']]):.1f} ms | {cpu_per_s('idle', 'worker')} | {cpu_per_s('idle', 'own')} |",
                      "", "CPU per second recorded: from before the start request to the stop's reply (the file finalized), over the "
                      "file's duration; the media worker's counts its forked job processes, recd's own excludes restic (a child of "
                      "its own) but not the backup's work in recd (staging, reading restic's progress). A take's cost is the "
                      "worker's: the same with and without a backup means the backup takes nothing from the recording.",
                      "", f"Goal (issue 36, for every take): ≤ 0.1 s lost — {'met' if mid_lost <= 0.1 else 'NOT met'} mid-backup ({mid_lost * 1000:.0f} ms)."]
        else:
            lines += ["", "First word mid-backup: the backup ended before a take could start (the library is too small)."]
    else:
        lines += ["", "First word mid-backup: not measured in this run (no PulseAudio, or --no-first-word)."]
    section = "\n".join(lines) + "\n"
    print(section)
    if no_write:
        log("--no-write: BENCHMARKS.md left as it is")
    else:
        log("wrote", write_section(REPO, TITLE, section))


if __name__ == "__main__":
    main()
