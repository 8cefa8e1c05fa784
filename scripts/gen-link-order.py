#!/usr/bin/env python3
"""Writes scripts/link-order/recd-hot.ld: the functions recd runs, placed together at the front of
its code, so that the pages of code an idle daemon holds are the ones it uses.

Why: the kernel maps a program's code in 64 KB runs around each page first touched (fault-around),
and a release recd touches a little of nearly every run: 7.5 of its 9.5 MB of code were resident in
an idle daemon that runs ~1.5 MB of it (docs/design.md, "Hot code first"). Run this after a change
that moves much code (a new dependency, a big feature); a stale file only makes the layout less
tight (functions that no longer exist match nothing; new ones land in the cold part), never wrong.

How:
 1. a release build of recd with every function in its own section (-function-sections) and at
    the start of its own page (-align-all-functions=12), linked by lld with a link map
    (in .build-linkorder/, beside the normal build);
 2. that recd runs under scripts/link-order/pagetrace.c (LD_PRELOAD), which records the first
    touch of every page of code, so here of every function, through a workload through the real
    socket: start-up, status, list, top and a quiet while (tier 1: what an idle daemon needs), then
    the rest of the API a day brings (tier 2: record, save, play, pause, stop, rename, import, the
    web app, waveform, export, check, delete, shut down);
 3. the link map turns each address into its object file and input section, and the script lists
    them, tier by tier, object by object, in an lld linker script INSERTed before .text.

Package.swift hands the script to lld for release builds of recd; `make build` compiles with
-function-sections (Makefile: RELEASE_SWIFTFLAGS), without which Swift emits most local functions
into one .text per object and the script can only move whole objects' worth.

Usage: scripts/gen-link-order.py  (needs curl; ~4 minutes on 2 CPUs, most of it the build)
"""
import bisect, collections, datetime, json, math, os, re, shutil, signal, struct, subprocess, sys, tempfile, time, wave

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRATCH = os.environ.get("LINKORDER_SCRATCH", os.path.join(REPO, ".build-linkorder"))
OUT = os.path.join(REPO, "scripts", "link-order", "recd-hot.ld")
TRACER_SRC = os.path.join(REPO, "scripts", "link-order", "pagetrace.c")
PAGE = 4096


def log(*a):
    print("[gen-link-order]", *a, file=sys.stderr, flush=True)


def build():
    """The aligned build; returns (binary, link map)."""
    link_map = os.path.join(SCRATCH, "recd.map")
    subprocess.run(["swift", "build", "-c", "release", "--product", "recd", "--scratch-path", SCRATCH,
                    "-Xswiftc", "-Xfrontend", "-Xswiftc", "-function-sections",
                    "-Xswiftc", "-Xllvm", "-Xswiftc", "-align-all-functions=12",
                    "-Xcc", "-ffunction-sections", "-Xcc", "-mllvm", "-Xcc", "-align-all-functions=12",
                    "-Xswiftc", "-use-ld=lld", "-Xlinker", f"-Map={link_map}"], cwd=REPO, check=True)
    binary = subprocess.run(["swift", "build", "-c", "release", "--scratch-path", SCRATCH, "--show-bin-path"],
                            cwd=REPO, check=True, capture_output=True, text=True).stdout.strip()
    return os.path.join(binary, "recd"), link_map


def trace(binary, work):
    """Runs the workload; returns [(tier, address)] in first-touch order."""
    tracer = os.path.join(work, "pagetrace.so")
    compiler = os.environ.get("CC") or shutil.which("cc") or "clang"   # (the Swift toolchain has clang)
    subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", tracer, TRACER_SRC], check=True)
    trace_file = os.path.join(work, "trace.txt")
    sock = os.path.join(work, "recd.sock")
    env = dict(os.environ, LD_PRELOAD=tracer, PAGETRACE_OUT=trace_file, SWIFT_BACKTRACE="enable=no",
               RECD_FFMPEG_IDLE_UNLOAD="3")
    daemon = subprocess.Popen([binary, "--data-dir", os.path.join(work, "data"), "--socket", sock,
                               "--capture-device", "null", "--playback-device", "null", "--log-level", "error"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def curl(method, path, body=None, extra=(), check=True):
        args = ["curl", "-s", "-f", "--unix-socket", sock, "-X", method, "http://recd" + path, *extra]
        if body is not None:
            args += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
        out = subprocess.run(args, capture_output=True, text=True)
        if check and out.returncode != 0:
            raise SystemExit(f"{method} {path}: curl exit {out.returncode} {out.stdout}")
        return json.loads(out.stdout) if out.stdout.strip().startswith(("{", "[")) else None

    def phase(name):
        with open(trace_file, "a") as f:
            f.write(f"# phase {name}\n")

    try:
        for _ in range(600):
            if subprocess.run(["curl", "-s", "-o", "/dev/null", "--unix-socket", sock, "http://recd/v1/status"]).returncode == 0:
                break
            time.sleep(0.1)
        else:
            raise SystemExit("recd did not start under the tracer")
        # Tier 1: start-up, what a status bar or a shell polls, and a quiet while.
        curl("GET", "/v1/recordings?limit=50")
        curl("GET", "/v1/top?limit=3")
        time.sleep(3)
        phase("work")
        # Tier 2: the rest of the API a day brings.
        curl("GET", "/", extra=["-o", "/dev/null"])
        curl("GET", "/v1/devices", check=False)
        curl("GET", "/v1/events", extra=["--max-time", "1"], check=False)
        curl("POST", "/v1/record/start", {})
        time.sleep(0.6)
        curl("POST", "/v1/record/pause", {})
        curl("POST", "/v1/record/resume", {})
        time.sleep(0.4)
        rid = curl("POST", "/v1/record/stop", {"then": "save"})["recording"]["id"]
        curl("PATCH", f"/v1/recordings/{rid}", {"title": "Traced", "notes": "for the link order"})
        curl("GET", f"/v1/recordings/{rid}")
        curl("GET", f"/v1/recordings/{rid}/waveform?format=json")
        curl("GET", f"/v1/recordings/{rid}/media", extra=["-o", "/dev/null"])
        curl("POST", f"/v1/recordings/{rid}/play", {})
        time.sleep(0.3)
        curl("GET", "/v1/playback")
        curl("POST", "/v1/playback/pause", {}, check=False)   # (ALSA's null device may have played it all)
        curl("POST", "/v1/playback/resume", {}, check=False)
        curl("POST", "/v1/playback/stop", {}, check=False)
        wav = os.path.join(work, "tone.wav")
        with wave.open(wav, "wb") as w:
            w.setnchannels(1); w.setsampwidth(2); w.setframerate(48000)
            w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / 48000))) for i in range(48000)))
        curl("POST", "/v1/recordings/import?name=tone.wav", extra=["--data-binary", "@" + wav, "-H", "Content-Type: audio/wav"])
        curl("GET", "/v1/recordings?by=plays&limit=50")
        curl("GET", "/v1/export?format=csv", extra=["-o", "/dev/null"], check=False)
        curl("GET", "/v1/check")
        curl("DELETE", f"/v1/recordings/{rid}")
        time.sleep(5)   # the loudness pass, FFmpeg's unload after 3 idle seconds
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
    tiers, tier = [], 1
    for line in open(trace_file):
        if line.startswith("# phase"):
            tier = 2
        elif not line.startswith("#") and line.strip():
            tiers.append((tier, int(line, 16)))
    return tiers


MAP_LINE = re.compile(r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+\s+(\S.*):\((\.text[^)]*)\)\s*$")


def input_sections(link_map):
    """[(start, size, object file, section)] of the code, sorted by address."""
    out = []
    for line in open(link_map):
        m = MAP_LINE.match(line)
        if m:
            out.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3), m.group(4)))
    out.sort()
    return out


def object_pattern(path):
    """/…/release/Engine.build/Engine.swift.o -> */Engine.build/Engine.swift.o (the scratch path differs)."""
    parts = path.split("/")
    return "*/" + "/".join(parts[-2:])


def main():
    work = tempfile.mkdtemp(prefix="recd-linkorder-")
    try:
        binary, link_map = build()
        log("tracing", binary)
        touches = trace(binary, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sections = input_sections(link_map)
    starts = [s[0] for s in sections]
    seen, ordered, unplaced = set(), [], 0
    for tier, address in touches:
        i = bisect.bisect_right(starts, address) - 1
        if i < 0 or address >= sections[i][0] + max(sections[i][1], 1):
            unplaced += 1   # the PLT, .init: not movable
            continue
        start, size, obj, name = sections[i]
        if not obj.endswith(".o") or ".build/" not in obj:
            unplaced += 1   # start files and the toolchain's own objects
            continue
        key = (obj, name)
        if key not in seen:
            seen.add(key)
            ordered.append((tier, obj, name, size))
    lines = ["/* Generated by scripts/gen-link-order.py on " + datetime.date.today().isoformat() + ": do not edit by hand.",
             " * The functions a release recd ran, first tier 1 (start-up, status, list, top, idle), then tier 2",
             " * (the rest of the API a day brings), each tier object by object; Package.swift gives it to lld",
             " * for release builds of recd (docs/design.md, \"Hot code first\"). INSERT keeps lld's default layout",
             " * for everything else. */", "SECTIONS", "{", "  .text.recd_hot :", "  {"]
    for tier, label in ((1, "tier 1: start-up and idle"), (2, "tier 2: the rest of the API")):
        members = [o for o in ordered if o[0] == tier]
        lines.append(f"    /* {label}: {len(members)} functions, {sum(o[3] for o in members) // 1024} KB */")
        per_object = collections.OrderedDict()
        for _, obj, name, _ in members:
            per_object.setdefault(object_pattern(obj), []).append(name)
        for pattern, names in per_object.items():
            lines.append(f"    {pattern}(" + " ".join(names) + ")")
    lines += ["  }", "}", "INSERT BEFORE .text;", ""]
    with open(OUT, "w") as f:
        f.write("\n".join(lines))
    t1 = [o for o in ordered if o[0] == 1]
    t2 = [o for o in ordered if o[0] == 2]
    # SwiftPM does not know the script is an input of the link: make the next build link again.
    stale = os.path.join(REPO, ".build", "release", "recd")
    if os.path.exists(stale):
        os.remove(stale)
        log("removed .build/release/recd: the next build links it with the new script")
    log(f"wrote {os.path.relpath(OUT, REPO)}: tier 1 {len(t1)} functions ({sum(o[3] for o in t1) // 1024} KB), "
        f"tier 2 {len(t2)} ({sum(o[3] for o in t2) // 1024} KB); {unplaced} touches outside movable code")


if __name__ == "__main__":
    main()
