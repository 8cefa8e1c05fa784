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


def recd_cpu_seconds(pid):
    """CPU seconds (user+sys) recd has used so far, its media workers included: recd encodes, decodes and
    muxes in child processes (`recd-media`), so its own /proc figure leaves that work out.
    = recd's utime+stime, + cutime+cstime (the workers it has already ended and reaped), + utime+stime of
    each child still running. Take the difference of two readings."""
    tick = os.sysconf("SC_CLK_TCK")

    def fields(p):   # the fields after the ")" that ends the command name (which may hold spaces)
        return open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()

    f = fields(pid)
    total = int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])
    children = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            children.update(open(f"/proc/{pid}/task/{task}/children").read().split())
        except OSError:
            pass   # the thread ended meanwhile
    for child in children:
        try:
            c = fields(child)
            total += int(c[11]) + int(c[12])
        except OSError:
            pass   # ended and reaped meanwhile: its time is in recd's cutime/cstime
    return total / tick


class PrivatePulse:
    """A private PulseAudio server for a bench: its own XDG_RUNTIME_DIR and HOME under `work` (cookie,
    state), reached by name, autospawn off, so nothing here reaches or starts any other PulseAudio.
    It sets this process's environment, so recd, pactl, paplay and arecord started after it use it.
    One null sink named `sink` (48 kHz stereo): ALSA's `pulse:<sink>` plays into it and
    `pulse:<sink>.monitor` captures what plays, paced in real time."""

    def __init__(self, work, sink):
        self.xdg = os.path.join(work, "xdg")
        self.sink = sink
        self.log = os.path.join(work, "pulseaudio.log")
        os.makedirs(self.xdg, mode=0o700)
        os.makedirs(os.path.join(work, "home/.config/pulse"))
        os.environ.update(XDG_RUNTIME_DIR=self.xdg, HOME=os.path.join(work, "home"), PULSE_SERVER=f"unix:{self.xdg}/pulse/native")
        open(os.path.join(work, "home/.config/pulse/client.conf"), "w").write("autospawn = no\n")

    def start(self):
        import subprocess, sys, time
        pa = os.path.join(self.xdg, "pa.pa")
        open(pa, "w").write(f"load-module module-null-sink sink_name={self.sink} rate=48000 channels=2\n"
                            "load-module module-native-protocol-unix\n")
        r = subprocess.run(["pulseaudio", "-n", "-F", pa, "--exit-idle-time=-1", "--daemonize=yes", "--use-pid-file=yes",
                            f"--log-target=file:{self.log}"], stderr=open(self.log, "a"))
        if r.returncode != 0:
            sys.exit(f"pulseaudio did not start; see {self.log}")
        for _ in range(50):
            if subprocess.run(["pactl", "info"], capture_output=True).returncode == 0:
                return
            time.sleep(0.1)
        sys.exit("pulseaudio is not answering")

    def stop(self):
        """Stops the server and waits for it to go (it daemonized: not our child)."""
        import time
        try:
            pid = int(open(os.path.join(self.xdg, "pulse/pid")).read().split()[0])
            os.kill(pid, 15)
        except (OSError, ValueError, IndexError):
            return
        for _ in range(100):
            if not os.path.exists(f"/proc/{pid}"):
                return
            time.sleep(0.05)
