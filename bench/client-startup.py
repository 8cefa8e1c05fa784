#!/usr/bin/env python3
"""How fast recctl starts: spawn to exit, beside peers run in the same script (issue 17, "the client starts in a blink").

  recctl     `recctl --version` (no daemon: the binary's own start-up) and `recctl --json top 3` (one request to a
             running recd with a small library: RECORDINGS (12) saved recordings), from spawn to exit.
  peers      the sqlite3 CLI running top 3's query on the same catalog file (a C program that opens the
             database itself), a Swift hello world (`print`, built here with swiftc -O: what any Swift
             process pays), and `true` (what spawning costs).
  libraries  the shared libraries each recctl run maps (`ldd` of the binary, and /proc/PID/maps of a
             stopped `recctl --json top 3`): Foundation, FoundationInternationalization and ICU are the
             ones that cost.

Each case runs RUNS (200) times, interleaved, after WARMUP (20) runs each; medians, p90 and min are
reported, and ratios to the peers. Writes its section of BENCHMARKS.md.
Env: RECD_BIN, RECCTL_BIN (default .build/release/{recd,recctl}; built if missing), RUNS, WARMUP,
RECORDINGS, KEEP_WORK=1 (keep the temporary directory), RECCTL_BASELINE_BIN (an older recctl, e.g. a
release build of the commit before a change: its two cases are run beside the others and compared).
"""
import datetime, os, random, shutil, sqlite3, statistics, subprocess, sys, tempfile, time, uuid
from benchmarks_md import build_kind, launch_recd, write_section

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(REPO)
RECD = os.environ.get("RECD_BIN", ".build/release/recd")
RECCTL = os.environ.get("RECCTL_BIN", ".build/release/recctl")
RUNS = int(os.environ.get("RUNS", "200"))
WARMUP = int(os.environ.get("WARMUP", "20"))
RECORDINGS = int(os.environ.get("RECORDINGS", "12"))
BASELINE = os.environ.get("RECCTL_BASELINE_BIN")
TITLE = "## Client start-up"
TOP_SQL = ("SELECT * FROM recording WHERE state = 'ready' "
           "ORDER BY playCount DESC, createdAt DESC, id LIMIT 3")
for product, path in (("recd", RECD), ("recctl", RECCTL)):
    if not os.access(path, os.X_OK):
        subprocess.run(["swift", "build", "-c", "release"], check=True)
missing = [tool for tool in ("sqlite3", "curl", "ffmpeg", "swiftc") if shutil.which(tool) is None]
if missing:
    sys.exit(f"missing: {', '.join(missing)} (apt-get install sqlite3 curl ffmpeg; swiftc comes with Swift)")
WORK = tempfile.mkdtemp(prefix="recd-client-startup-")
LOAD = os.getloadavg()[0]
procs = []


def log(*a):
    print("[client-startup]", *a, file=sys.stderr, flush=True)


def start_recd(data, sock):
    return launch_recd(RECD, data, sock, os.path.join(WORK, "recd.log"), "--playback-device", "null", procs=procs)[0]



def spawn_to_exit(argv):
    """Wall seconds from spawn to exit (output to /dev/null); the exit status must be 0."""
    t0 = time.perf_counter()
    rc = subprocess.call(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t = time.perf_counter() - t0
    if rc != 0:
        sys.exit(f"{' '.join(argv)} exited {rc}")
    return t


def libraries_at_run_time(argv):
    """The shared objects a process maps, read from /proc/PID/maps just before it exits (it is traced
    by `strace -e trace=exit_group -e inject=exit_group:delay_enter=…`, which holds it there)."""
    p = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=exit_group", "-e", "inject=exit_group:delay_enter=300000",
                          "-o", "/dev/null"] + argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    libs = set()
    deadline = time.time() + 5
    while p.poll() is None and time.time() < deadline:
        try:
            for child in open(f"/proc/{p.pid}/task/{p.pid}/children").read().split():
                for line in open(f"/proc/{child}/maps"):
                    if ".so" in line:
                        libs.add(os.path.basename(line.split()[-1]))
        except (FileNotFoundError, ProcessLookupError):
            pass
        time.sleep(0.05)
    p.wait()
    return sorted(libs)


try:
    # --- a small library: recd makes the schema, then RECORDINGS rows and files go in directly -----
    template = os.path.join(WORK, "template.m4a")
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=1000:duration=0.5",
                    "-c:a", "aac", "-b:a", "64k", "-y", template], check=True)
    data, sock = os.path.join(WORK, "data"), os.path.join(WORK, "recd.sock")
    p = start_recd(data, sock)
    p.terminate()
    p.wait(timeout=60)
    db_path = os.path.join(data, "catalog.sqlite")
    db = sqlite3.connect(db_path)
    rnd = random.Random(17)
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    rows = []
    for i in range(RECORDINGS):
        rid = str(uuid.uuid4()).upper()
        f = f"Recordings/audio_{rid}.m4a"
        os.link(template, os.path.join(data, f))
        created = (now - datetime.timedelta(minutes=RECORDINGS - i)).strftime("%Y-%m-%d %H:%M:%S.000")
        rows.append((rid, "audio", "ready", f"Recording {i}", "", created, 0.5, os.path.getsize(template), f,
                     rnd.randint(0, 50), 0, 0))
    db.executemany("INSERT INTO recording (id, type, state, title, notes, createdAt, duration, sizeBytes, file,"
                   " playCount, recovered, droppedFrames) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    db.commit()
    db.close()
    start_recd(data, sock)

    # --- the peers ------------------------------------------------------------------------------------
    hello_src = os.path.join(WORK, "hello.swift")
    open(hello_src, "w").write('print("hello")\n')
    hello = os.path.join(WORK, "hello")
    subprocess.run(["swiftc", "-O", hello_src, "-o", hello], check=True, capture_output=True)

    top = subprocess.run([RECCTL, "--socket", sock, "--json", "top", "3"], capture_output=True, text=True, check=True)
    if top.stdout.count('"id"') != min(3, RECORDINGS):
        sys.exit(f"recctl --json top 3 did not list {min(3, RECORDINGS)} recordings: {top.stdout[:300]}")

    cases = [
        ("`recctl --version`", [RECCTL, "--version"]),
        ("`recctl --json top 3`", [RECCTL, "--socket", sock, "--json", "top", "3"]),
        ("sqlite3 CLI, top 3's query on the catalog", ["sqlite3", db_path, TOP_SQL + ";"]),
        ("Swift hello world (`swiftc -O`)", [hello]),
        ("`true` (spawn only)", [shutil.which("true")]),
    ]
    if BASELINE:
        cases += [("baseline `recctl --version`", [BASELINE, "--version"]),
                  ("baseline `recctl --json top 3`", [BASELINE, "--socket", sock, "--json", "top", "3"])]
    times = {label: [] for label, _ in cases}
    log(f"{RUNS} runs of each of {len(cases)} cases, interleaved")
    for _ in range(WARMUP):
        for label, argv in cases:
            spawn_to_exit(argv)
    for _ in range(RUNS):
        for label, argv in cases:
            times[label].append(spawn_to_exit(argv))

    libs_top = libraries_at_run_time([RECCTL, "--socket", sock, "--json", "top", "3"]) if shutil.which("strace") else []
    ldd = subprocess.run(["ldd", RECCTL], capture_output=True, text=True).stdout
    linked = sorted(line.split()[0] for line in ldd.splitlines() if line.strip() and "vdso" not in line)
finally:
    for q in procs:
        if q.poll() is None:
            q.terminate()
            q.wait(timeout=60)
    if os.environ.get("KEEP_WORK") != "1":
        shutil.rmtree(WORK, ignore_errors=True)
    else:
        log(f"kept {WORK}")


def ms(x):
    return f"{x * 1000:.2f}"


def med(label):
    return statistics.median(times[label])


def p90(xs):
    return sorted(xs)[int(0.9 * (len(xs) - 1))]


BASELINE_NOTE = os.environ.get("RECCTL_BASELINE_NOTE", "an older recctl")
if BASELINE:
    base_ldd = subprocess.run(["ldd", BASELINE], capture_output=True, text=True).stdout
    BASELINE_NOTE += f", {sum(1 for l in base_ldd.splitlines() if l.strip() and 'vdso' not in l)} libraries"
kind = build_kind(RECCTL)
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), os.uname().machine)
heavy = [lib for lib in linked if lib.startswith(("libFoundation.", "libFoundationInternationalization", "lib_FoundationICU"))]
lines = [TITLE, "",
         f"Written by `bench/client-startup.py` on {datetime.date.today()} — {os.cpu_count()} CPUs, {cpu}; recctl and recd:",
         f"{kind} builds; recd running on a library of {RECORDINGS} saved recordings. Spawn to exit (Python `subprocess.call`,",
         f"output to /dev/null), {RUNS} runs of each case, interleaved, after {WARMUP} warm-up runs each; load average",
         f"{LOAD:.2f} at the start (other work on the machine shows in p90 more than in the median).", "",
         "| Case | median ms | p90 ms | min ms |", "|---|---:|---:|---:|"]
for label, _ in cases:
    xs = times[label]
    lines.append(f"| {label} | {ms(statistics.median(xs))} | {ms(p90(xs))} | {ms(min(xs))} |")
top_label, version_label = cases[1][0], cases[0][0]
sqlite_label, hello_label, true_label = cases[2][0], cases[3][0], cases[4][0]
lines += ["",
          f"- `recctl --json top 3` / sqlite3 CLI on the same query: {med(top_label) / med(sqlite_label):.2f}×",
          f"- `recctl --json top 3` / Swift hello world: {med(top_label) / med(hello_label):.2f}×; "
          f"`recctl --version` / Swift hello world: {med(version_label) / med(hello_label):.2f}×",
          f"- the request itself (top 3 less --version): {ms(med(top_label) - med(version_label))} ms",
          ] + ([f"- baseline ({BASELINE_NOTE}) / now: `--version` {med(cases[5][0]) / med(version_label):.2f}×, "
                f"`--json top 3` {med(cases[6][0]) / med(top_label):.2f}×"] if BASELINE else []) + [
          "", "Goal (issue 17): `recctl --json top 3` ≤ 8 ms spawn to exit, release build.", "",
          f"Libraries recctl links (`ldd`, {len(linked)}): " + ", ".join(f"`{l}`" for l in linked) + ".",
          ("Foundation (full), FoundationInternationalization and ICU: " + (", ".join(heavy) if heavy else "none") + "."),
          ]
if libs_top:
    lines.append(f"Mapped by a running `recctl --json top 3` (/proc/PID/maps, {len(libs_top)}): "
                 + ", ".join(f"`{l}`" for l in libs_top) + ".")
section = "\n".join(lines) + "\n"
print(section)
if "--no-write" not in sys.argv:
    write_section(REPO, TITLE, section)
