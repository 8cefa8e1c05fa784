"""What the browser tests share: checks counted and printed, the child processes they start (stopped
at the end, newest first), waiting for a page to get somewhere, and the closing line that the Swift
side (WebAppTests, UIRelayTests) reads."""
import json, os, shutil, signal, subprocess, sys, tempfile, time


class Harness:
    def __init__(self, env, work=None, runtime=None):
        self.env = env
        self.work, self.runtime = work, runtime
        self.procs = []
        self.results = []

    def check(self, name, ok, detail=""):
        self.results.append((name, bool(ok)))
        print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"), flush=True)

    def start(self, args, **kw):
        p = subprocess.Popen(args, env=self.env, **kw)
        self.procs.append(p)
        return p

    def stop_all(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()

    def start_pulse(self):
        """The paced microphone (shared/TESTING-AUDIO.md): a private PulseAudio server with a null sink
        `mic` (48 kHz mono, whose monitor recd records) and `speaker` (stereo), and a 440 Hz tone
        played into `mic` for two minutes."""
        config = os.path.join(self.runtime, "pa.pa")
        with open(config, "w") as f:
            f.write("load-module module-null-sink sink_name=mic rate=48000 channels=1\n"
                    "load-module module-null-sink sink_name=speaker rate=48000 channels=2\n"
                    "load-module module-native-protocol-unix\n")
        subprocess.run(["pulseaudio", "-n", "-F", config, "--exit-idle-time=-1", "--daemonize=yes", "--use-pid-file=yes"],
                       env=self.env, check=True, capture_output=True)
        tone = os.path.join(self.work, "tone.wav")
        subprocess.run(["sox", "-n", "-r", "48000", "-c", "1", "-b", "16", tone, "synth", "120", "sine", "440", "vol", "0.5"], check=True)
        self.start(["paplay", "--latency-msec=10", "-d", "mic", tone])

    def start_recd(self, recd, recctl, data, sock, *extra):
        """recd on the paced microphone and speaker (`start_pulse`), its log appended to WORK/recd.log;
        returns once `recctl status` answers."""
        p = self.start([recd, "--data-dir", data, "--socket", sock, "--capture-device", "pulse:mic.monitor",
                        "--playback-device", "pulse:speaker", *extra],
                       stdout=open(os.path.join(self.work, "recd.log"), "a"), stderr=subprocess.STDOUT)
        wait_until("recd", lambda: subprocess.run([recctl, "--socket", sock, "status"], env=self.env,
                                                  capture_output=True).returncode == 0)
        return p

    def close(self):
        """The end of a run, whatever happened: the processes stopped, the PulseAudio server (which
        daemonized, so is not among them) too, and the work folder gone."""
        self.stop_all()
        pid = os.path.join(self.runtime or "", "pulse", "pid")
        if self.runtime and os.path.exists(pid):
            try:
                os.kill(int(open(pid).read().strip()), signal.SIGTERM)
            except (ValueError, ProcessLookupError):
                pass
        if self.work:
            shutil.rmtree(self.work, ignore_errors=True)

    def finish(self):
        """Prints "N passed, M failed" and exits: 0 only when something passed and nothing failed."""
        passed = sum(1 for _, ok in self.results if ok)
        failed = len(self.results) - passed
        print(f"{passed} passed, {failed} failed")
        sys.exit(0 if failed == 0 and passed > 0 else 1)


def wait_until(what, predicate, timeout=15.0):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except Exception as e:  # the page may be between states
            # selenium's exceptions keep their message in .msg (their repr is the bare class name)
            last = f"{type(e).__name__}: {(getattr(e, 'msg', None) or str(e))[:300]}"
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def setup(prefix):
    """A test's arguments (RECD RECCTL [SHOTS_DIR]) and a private world for it: a work folder, an
    XDG_RUNTIME_DIR of its own (0700, for its PulseAudio server and recctl ui), the environment that
    names it, the data folder and socket of its recd, and the Harness."""
    recd, recctl = sys.argv[1], sys.argv[2]
    shots = sys.argv[3] if len(sys.argv) > 3 else None
    work = tempfile.mkdtemp(prefix=prefix)
    runtime = os.path.join(work, "rt")
    os.makedirs(runtime, mode=0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=runtime)
    data, sock = os.path.join(work, "data"), os.path.join(work, "run", "recd.sock")
    return recd, recctl, shots, work, runtime, env, data, sock, Harness(env, work, runtime)


class RecdClient:
    """One recd, asked as a person or a program would: through recctl, or straight from its socket
    with curl (recd's own answer, not the page's)."""

    def __init__(self, recctl, sock, env):
        self.recctl_path, self.sock, self.env = recctl, sock, env

    def recctl(self, *args, check_rc=True, timeout=60):
        out = subprocess.run([self.recctl_path, "--socket", self.sock, *args], env=self.env,
                             capture_output=True, text=True, timeout=timeout)
        if check_rc and out.returncode != 0:
            raise RuntimeError(f"recctl {args}: {out.stderr}")
        return out

    def recctl_json(self, *args):
        return json.loads(self.recctl("--json", *args).stdout)

    def get(self, path):
        out = subprocess.run(["curl", "-s", "--unix-socket", self.sock, "http://recd" + path],
                             capture_output=True, text=True, timeout=10)
        return json.loads(out.stdout)


class Page:
    """What the tests do with the page: wait for something, run JavaScript, read its text, size the
    viewport, take phone and desktop screenshots into SHOTS (when given), click what is shown."""

    def __init__(self, browser, shots):
        self.browser, self.shots = browser, shots
        self.js = browser.execute_script

    def wait(self, what, predicate, timeout=15):
        return wait_until(what, lambda: predicate(self.browser), timeout)

    def text(self):
        from selenium.webdriver.common.by import By
        return self.browser.find_element(By.TAG_NAME, "body").text

    def size(self, width, height=844):
        """The viewport (not the window) at this width: innerWidth is what a phone of that width has."""
        self.browser.set_window_size(width, height)
        dw = width - self.js("return window.innerWidth")
        if dw:
            self.browser.set_window_size(width + dw, height)
        time.sleep(0.3)

    def shot(self, name):
        if not self.shots:
            return
        os.makedirs(self.shots, exist_ok=True)
        for width, height, tag in [(390, 844, "phone"), (1280, 860, "desktop")]:
            self.size(width, height)
            self.browser.save_screenshot(os.path.join(self.shots, f"{name}-{tag}.png"))
        self.size(390)

    def click(self, css):
        from selenium.webdriver.common.by import By

        def attempt(b):
            el = next((e for e in b.find_elements(By.CSS_SELECTOR, css) if e.is_displayed() and e.is_enabled()), None)
            if el is not None:
                el.click()
            return el
        return self.wait(css, attempt)


def chromium(work):
    """Debian's chromium, headless at phone size, downloads into WORK/downloads (returned too)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    downloads = os.path.join(work, "downloads")
    os.makedirs(downloads)
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--autoplay-policy=no-user-gesture-required",
              "--window-size=390,844", "--disable-dev-shm-usage"]:
        options.add_argument(a)
    options.add_experimental_option("prefs", {"download.default_directory": downloads, "download.prompt_for_download": False})
    browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    browser.set_script_timeout(30)
    return browser, downloads
