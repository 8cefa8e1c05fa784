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


def build_kind(binary):
    """What build `binary` is, for a section's header: debug, release, or packaged (the .deb's, under
    usr/bin: unpacked with dpkg-deb -x, or installed)."""
    real = os.path.realpath(binary)
    return ("release" if "/release/" in real else "debug" if "/debug/" in real
            else "packaged" if "/usr/bin/" in real else "unknown")


def recd_cpu_seconds(pid):
    """CPU seconds (user+sys) recd has used so far, its media workers included: recd encodes, decodes and
    muxes in worker processes (`recd-media`), and a kept worker forks a process per job or take
    (docs/decisions/0025), a grandchild of recd. So every process of the tree under recd counts its
    utime+stime + cutime+cstime (the children it has ended and reaped). Take the difference of two
    readings. (Before 2026-11-30 only recd's direct children were counted: a forked job's CPU was missed.)"""
    tick = os.sysconf("SC_CLK_TCK")

    def tree(p):
        try:   # the fields after the ")" that ends the command name (which may hold spaces)
            f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            return 0   # ended and reaped meanwhile: its time is in its parent's cutime/cstime
        total = int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])
        children = set()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            tasks = []
        for task in tasks:
            try:
                children.update(open(f"/proc/{p}/task/{task}/children").read().split())
            except OSError:
                pass   # the thread ended meanwhile
        return total + sum(tree(c) for c in children)

    return tree(pid) / tick


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
