#!/usr/bin/env python3
"""An idle recd: how often it wakes and how much memory it holds, beside peers run in the same script.

  wake-ups   context switches (voluntary + involuntary) of all of recd's threads over IDLE_SECONDS
             (60) with no recording, no playback and no client, from /proc/PID/task/*/status; per
             thread name, so a periodic one shows whose it is. One window from start-up (the issue's
             measure: nothing done yet), two after the work: the first
             holds the end of the idle media worker (30 s after its last use), the second not.
  worker     the media worker (the process that runs FFmpeg for recd: docs/design.md, "FFmpeg in a
             worker"): its memory while the playback runs, and that none is left after the windows.
  memory     VmRSS, and the resident memory per mapping from /proc/PID/smaps, grouped: the Swift
             runtime, Foundation (with ICU's data), FFmpeg, SQLite, the rest of the libraries, recd's
             own binary, and anonymous memory (heaps, stacks).
  peers      a Swift program that does nothing but await in Swift concurrency (built here with swiftc),
             the same counts: what any Swift-concurrency process on Linux pays; and `sleep` (a C
             process that never wakes).

Writes its section of BENCHMARKS.md. Env: RECD_BIN (default .build/release/recd), IDLE_SECONDS (60).
"""
import collections, datetime, json, os, re, shutil, subprocess, sys, tempfile, time
from benchmarks_md import build_kind, write_section

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(REPO)
RECD = os.environ.get("RECD_BIN", ".build/release/recd")
SECONDS = int(os.environ.get("IDLE_SECONDS", "60"))
TITLE = "## Idle"
if not os.access(RECD, os.X_OK):
    subprocess.run(["swift", "build", "-c", "release"], check=True)
WORK = tempfile.mkdtemp(prefix="recd-idle-")


def log(*a):
    print("[idle]", *a, file=sys.stderr, flush=True)


def switches(pid):
    """{thread id: (name, context switches)}."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
            n = sum(int(l.split()[1]) for l in open(f"/proc/{pid}/task/{tid}/status")
                    if l.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")))
            out[tid] = (name, n)
        except FileNotFoundError:
            pass
    return out


def wakeups(pid, seconds):
    a = switches(pid)
    time.sleep(seconds)
    b = switches(pid)
    per_name = collections.Counter()
    for tid, (name, n) in b.items():
        per_name[name] += n - a.get(tid, (name, 0))[1]
    return sum(per_name.values()) / seconds, per_name


FFMPEG_DEPS = set()


def note_ffmpeg_deps(pid):
    """The libraries FFmpeg's own pull in (ldd of libavformat, libavcodec, libswscale, libswresample as
    installed: recd's media workers load them, recd never should), minus what recd needs itself."""
    libdir = subprocess.run(["pkg-config", "--variable=libdir", "libavformat"], capture_output=True, text=True).stdout.strip() or "/usr/lib/x86_64-linux-gnu"
    libs = [os.path.join(libdir, f"lib{n}.so") for n in ("avformat", "avcodec", "swscale", "swresample", "avutil")]
    own = {"libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libasound.so.2", "libsqlite3.so.0"}
    for lib in libs:
        for line in subprocess.run(["ldd", lib], capture_output=True, text=True).stdout.splitlines():
            name = line.split()[0] if line.split() else ""
            if name and name not in own:
                FFMPEG_DEPS.add(name)


def group(path):
    base = os.path.basename(path)
    if any(base.startswith(d.split(".so")[0] + ".so") for d in FFMPEG_DEPS) and not base.startswith(("libav", "libsw")):
        return "libraries FFmpeg loads (codecs, TLS, XML, SVG, …)"
    if base.startswith(("libswiftCore", "libswift_", "libswiftGlibc", "libswiftDispatch", "libdispatch", "libBlocksRuntime",
                        "libswiftSynchronization")):
        return "Swift runtime, Concurrency, Dispatch"
    if base.startswith(("libFoundation", "lib_FoundationICU")):
        return "Foundation (Essentials, Internationalization, ICU data)"
    if base.startswith(("libav", "libsw")) and not base.startswith("libswift"):
        return "FFmpeg (libavcodec, libavformat, …)"
    if base.startswith("libsqlite3"):
        return "SQLite"
    if path == os.path.realpath(RECD):
        return "recd's own code"
    if path.startswith("/") and ".so" in base:
        return "other libraries (libc, libstdc++, ALSA, …)"
    return "anonymous (heaps, stacks, caches)"


def workers(pid):
    """recd's media workers: its children named recd-media."""
    out = subprocess.run(["ps", "-o", "pid=,comm=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(l.split()[0]) for l in out.splitlines() if l.split()[1:] == ["recd-media"]]


def memory(pid):
    """VmRSS (kB); per group resident, private (Private_Clean + Private_Dirty: this process's alone,
    relocated library data included) and shared-clean kB (file pages also in the page cache, which
    the kernel can drop and read again); resident kB per mapped file; and the whole process's PSS."""
    groups, files = collections.defaultdict(collections.Counter), collections.Counter()
    current, path, pss = None, "", 0
    for line in open(f"/proc/{pid}/smaps"):
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(":"):
            path = fields[5] if len(fields) > 5 else ""
            current = group(path)
        elif fields[0] == "Rss:":
            groups[current]["rss"] += int(fields[1])
            if path.startswith("/"):
                files[os.path.basename(path)] += int(fields[1])
        elif fields[0] in ("Private_Clean:", "Private_Dirty:"):
            groups[current]["private"] += int(fields[1])
            if fields[0] == "Private_Dirty:":
                groups[current]["dirty"] += int(fields[1])
        elif fields[0] == "Shared_Clean:":
            groups[current]["shared"] += int(fields[1])
        elif fields[0] == "Pss:":
            pss += int(fields[1])
    rss = next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS"))
    groups["libraries"]["count"] = len({l.split()[-1] for l in open(f"/proc/{pid}/maps") if ".so" in l.split()[-1]})
    return rss, groups, files, pss


procs = []
try:
    # The peer: a Swift program that only awaits (Swift concurrency, as recd's services do).
    peer_src = os.path.join(WORK, "idle.swift")
    open(peer_src, "w").write("try await Task.sleep(for: .seconds(100_000))\n")
    peer_bin = os.path.join(WORK, "idle-swift")
    subprocess.run(["swiftc", "-O", peer_src, "-o", peer_bin], check=True, capture_output=True)

    data, sock = os.path.join(WORK, "data"), os.path.join(WORK, "recd.sock")
    p = subprocess.Popen([RECD, "--data-dir", data, "--socket", sock, "--capture-device", "null", "--playback-device", "null",
                          "--log-level", "error"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(p)
    for _ in range(200):
        if subprocess.run(["curl", "-s", "-o", "/dev/null", "--unix-socket", sock, "http://recd/v1/status"]).returncode == 0:
            break
        time.sleep(0.05)
    time.sleep(2)
    note_ffmpeg_deps(p.pid)
    start_rss, start_groups, start_files, start_pss = memory(p.pid)
    # The issue's own measure: the daemon as started, with no recording, playback or client yet,
    # over a whole window (its resident memory at the window's end).
    log(f"recd idle for {SECONDS} s from start-up")
    fresh_rate, fresh_threads = wakeups(p.pid, SECONDS)
    fresh_rss = memory(p.pid)[0]
    # Some work first, as a daemon that runs all day has done: a recording (from ALSA's null
    # device), saved, listed, played and deleted; whatever it started must be quiet again after.
    def api(method, path, body=None, check=True):
        args = ["curl", "-s", "-f", "--unix-socket", sock, "-X", method, "http://recd" + path]
        if body is not None:
            args += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
        return json.loads(subprocess.run(args, capture_output=True, text=True, check=check).stdout or "null")
    api("POST", "/v1/record/start", {})
    time.sleep(0.5)
    rid = api("POST", "/v1/record/stop", {"then": "save"})["recording"]["id"]
    api("GET", "/v1/recordings?limit=50")
    api("POST", f"/v1/recordings/{rid}/play", {})
    time.sleep(0.5)
    working = [memory(w) for w in workers(p.pid)]
    working_recd = memory(p.pid)
    api("POST", "/v1/playback/stop", {}, check=False)   # (ALSA's null device may have played it all)
    api("DELETE", f"/v1/recordings/{rid}")
    time.sleep(3)   # settles (recovery, the loudness pass, the trash)
    log(f"recd idle for {SECONDS} s")
    # Two windows: the first holds the end of the idle media worker (30 s after its last use,
    # --ffmpeg-idle-unload); the second is the daemon left alone for good.
    after_rate, after_threads = wakeups(p.pid, SECONDS)
    log(f"recd idle for another {SECONDS} s")
    recd_rate, recd_threads = wakeups(p.pid, SECONDS)
    recd_rss, recd_groups, recd_files, recd_pss = memory(p.pid)
    workers_left = workers(p.pid)
    left = [memory(w) for w in workers_left]

    peers = []
    for label, cmd in (("Swift program awaiting in Swift concurrency (`Task.sleep`)", [peer_bin]), ("`sleep` (C)", ["sleep", "100000"])):
        q = subprocess.Popen(cmd)
        procs.append(q)
        time.sleep(2)
        log(f"{label} for {SECONDS} s")
        rate, threads = wakeups(q.pid, SECONDS)
        rss, _, _, _ = memory(q.pid)
        peers.append((label, rate, threads, rss))
        q.kill()
finally:
    for q in procs:
        if q.poll() is None:
            q.kill()
    shutil.rmtree(WORK, ignore_errors=True)


def threads_text(counter):
    busy = [f"{name} {n}" for name, n in counter.most_common() if n > 0]
    return ", ".join(busy) if busy else "none"


kind = build_kind(RECD)
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), os.uname().machine)
lines = [TITLE, "",
         f"Written by `bench/idle.py` on {datetime.date.today()} — {os.cpu_count()} CPUs, {cpu}; recd: {kind} build, no",
         f"watchdog (not under systemd), no recording, playback or client during the windows: one of {SECONDS} s from start-up, "
         f"then two after a recording was made, listed, played and deleted.", "",
         "| Process | wake-ups per second | context switches per thread name | RSS |", "|---|---:|---|---:|",
         f"| recd, the first {SECONDS} s after start-up (nothing done yet: the issue's measure) | {fresh_rate:.2f} "
         f"| {threads_text(fresh_threads)} | {fresh_rss / 1024:.1f} MB |",
         f"| recd, the first {SECONDS} s after the work (its idle media worker is ended in it, once) | {after_rate:.2f} "
         f"| {threads_text(after_threads)} | |",
         f"| recd, the next {SECONDS} s | {recd_rate:.2f} | {threads_text(recd_threads)} | {recd_rss / 1024:.1f} MB |"]
for label, rate, threads, rss in peers:
    lines.append(f"| {label} | {rate:.2f} | {threads_text(threads)} | {rss / 1024:.1f} MB |")
def private(groups):
    return sum(g["private"] for g in groups.values())


def dirty(groups):
    return sum(g["dirty"] for g in groups.values())


def shared(groups):
    return sum(g["shared"] for g in groups.values())


def verdict(ok):
    return "met" if ok else "NOT met"


lines += ["", "Goals (issue 17), held to the idle daemon as the issue measured it (no recording, playback or client; "
          "docs/design.md, \"Choices\"): ≤ 0.1 wake-ups per second beyond the watchdog's — "
          f"{verdict(fresh_rate <= 0.1 and recd_rate <= 0.1)} ({fresh_rate:.2f} from start-up, {recd_rate:.2f} after the work); "
          f"RSS {fresh_rss / 1024:.1f} MB. After the work recd holds "
          f"{recd_rss / 1024:.1f} MB: the libraries ALSA's configuration loads, the code the work ran and the heaps "
          "(below). The first after-work window's switches are the one end of the idle media worker (`media-workers`: a timed wait ending, the socket closed, "
          "the worker reaped), not a periodic wake-up: the second window is the daemon left alone.", "",
          "The media worker (`recd-media`: FFmpeg runs there, never in recd) during the "
          "playback: " + ("; ".join(f"RSS {rss / 1024:.1f} MB, PSS {pss / 1024:.1f} MB, {g['libraries']['count']} libraries mapped"
                                     for rss, g, _, pss in working) or "none found")
          + f". Media workers left after the windows: {len(workers_left)}.", "",
          "recd's memory (`/proc/PID/smaps`): *private* is this process's alone (heaps, stacks, library data the "
          "loader relocated); *shared clean* is file pages of code and read-only data, also in the page cache "
          "(the kernel maps up to 16 neighbouring pages per fault, and can drop them and read them again). "
          "RSS is both.", "",
          "| recd | RSS | private | private dirty | shared clean | PSS | libraries mapped |", "|---|---:|---:|---:|---:|---:|---:|",
          f"| idle, 2 s after start-up | {start_rss / 1024:.1f} MB | {private(start_groups) / 1024:.1f} MB "
          f"| {dirty(start_groups) / 1024:.1f} MB | {shared(start_groups) / 1024:.1f} MB | {start_pss / 1024:.1f} MB | {start_groups['libraries']['count']} |",
          f"| idle, after the work above | {recd_rss / 1024:.1f} MB | {private(recd_groups) / 1024:.1f} MB "
          f"| {dirty(recd_groups) / 1024:.1f} MB | {shared(recd_groups) / 1024:.1f} MB | {recd_pss / 1024:.1f} MB | {recd_groups['libraries']['count']} |", "",
          "**Private dirty memory** (smaps' Private_Dirty: heaps, stacks, relocated library data — what the system "
          "must keep or swap; clean file pages are the page cache's to drop), recd with its media workers: "
          f"{dirty(start_groups) / 1024:.1f} MB after start-up (no worker yet); "
          f"{(dirty(working_recd[1]) + sum(dirty(g) for _, g, _, _ in working)) / 1024:.1f} MB during the playback "
          f"(recd {dirty(working_recd[1]) / 1024:.1f} MB + {len(working)} worker(s) "
          f"{sum(dirty(g) for _, g, _, _ in working) / 1024:.1f} MB); "
          f"{(dirty(recd_groups) + sum(dirty(g) for _, g, _, _ in left)) / 1024:.1f} MB after the work "
          f"({len(left)} worker(s) left). Goal (issue 36): ≤ 10 MB after work — "
          f"{verdict(dirty(recd_groups) + sum(dirty(g) for _, g, _, _ in left) <= 10 * 1024)}.", "",
          "By what it maps (FFmpeg and the libraries it loads would be here if recd had loaded them; "
          "docs/design.md, \"FFmpeg in a worker\"):", "", "| Part | RSS at start-up | RSS after the work | private after | shared clean after |",
          "|---|---:|---:|---:|---:|"]
for name, g in sorted(((n, g) for n, g in recd_groups.items() if n != "libraries"), key=lambda kv: -kv[1]["rss"]):
    lines.append(f"| {name} | {start_groups[name]['rss'] / 1024:.1f} MB | {g['rss'] / 1024:.1f} MB | {g['private'] / 1024:.1f} MB "
                 f"| {g['shared'] / 1024:.1f} MB |")


added = {name: kb for name, kb in recd_files.items() if name not in start_files and ".so" in name}
lines += ["", f"Libraries the work left mapped in recd: {len(added)}, {sum(added.values()) / 1024:.1f} MB resident"
          + (" (" + ", ".join(f"{n} {kb / 1024:.1f} MB" for n, kb in sorted(added.items(), key=lambda kv: -kv[1])[:6]) + " …)" if added else "")
          + ". libpulse and what it needs come from the system's ALSA configuration, not from recd: libasound2-plugins' "
          "/etc/alsa/conf.d/99-pulse.conf runs a hook at the first open of any ALSA device that loads libpulse to ask whether "
          "a PulseAudio server runs, and libpulse is NODELETE (it and its libraries stay); a machine without that file "
          "loads none of them."]
lines += ["", "The largest mapped files: " + ", ".join(f"{name} {kb / 1024:.1f} MB" for name, kb in recd_files.most_common(12)) + "."]
section = "\n".join(lines) + "\n"
print(section)
write_section(REPO, TITLE, section)
