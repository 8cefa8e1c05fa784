"""Shared by the bench/ scripts: replace one section of BENCHMARKS.md, leave the others alone."""
import os


def write_section(repo, title, section):
    """Puts `section` (which starts with the `title` line) in place of the old one, or appends it."""
    path = os.path.join(repo, "BENCHMARKS.md")
    text = open(path).read() if os.path.exists(path) else "# recd benchmarks\n"
    if title in text:
        head, rest = text.split(title, 1)
        nxt = rest.find("\n## ")
        text = head + section + (rest[nxt:] if nxt >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    open(path, "w").write(text)
    return path


def launch_recd(recd, data, sock, log_path, *extra, procs=None, timeout=60):
    """Starts `recd` with its data directory and socket (no capture device unless `extra` names one),
    and waits until `GET /v1/status` answers 200. Returns (process, seconds from spawn to that answer).
    The process is appended to `procs` (the script's list to kill at exit); a recd that exits or does
    not answer within `timeout` seconds ends the script, pointing at its log."""
    import subprocess, sys, time
    args = [recd, "--data-dir", data, "--socket", sock, "--log-level", "error"]
    if "--capture-device" not in extra:
        args += ["--capture-device", "null"]
    t0 = time.perf_counter()
    p = subprocess.Popen(args + list(extra), stdout=subprocess.DEVNULL, stderr=open(log_path, "a"))
    if procs is not None:
        procs.append(p)
    while time.perf_counter() - t0 < timeout:
        r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", sock,
                            "http://recd/v1/status"], capture_output=True, text=True)
        if r.stdout == "200":
            return p, time.perf_counter() - t0
        if p.poll() is not None:
            break
        time.sleep(0.005)
    sys.exit(f"recd did not start: see {log_path} (KEEP_WORK=1 keeps it)")
