"""What the browser tests share: checks counted and printed, the child processes they start (stopped
at the end, newest first), the run itself (`Harness.app`: recd, `recctl ui` and Chromium on the app),
waiting for a page to get somewhere, and the closing line that the Swift side (WebAppTests,
UIRelayTests) reads."""
import contextlib, glob, json, os, shutil, signal, subprocess, sys, tempfile, time, traceback

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# axe-core as scripts/install-deps.sh --test pins it (the axe-playwright-python wheel): empty when not installed.
AXE = sorted(glob.glob(os.path.join(REPO, ".build", "axe-venv", "lib", "python3*", "site-packages", "axe_playwright_python", "axe.min.js")))
TONE = ("synth", "120", "sine", "440", "vol", "0.5")


class Harness:
    def __init__(self, env, work=None, runtime=None):
        self.env = env
        self.work, self.runtime = work, runtime
        # What `setup` gives a test (its recd and recctl, its screenshots' folder, recd's data and
        # socket, a client of that recd), and the recd process `app` starts.
        self.recd_path = self.recctl_path = self.shots = self.data = self.sock = self.client = self.recd = None
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

    def start_pulse(self, sound=TONE):
        """The paced microphone (shared/TESTING-AUDIO.md): a private PulseAudio server with a null sink
        `mic` (48 kHz mono, whose monitor recd records) and `speaker` (stereo), and `sound` (sox's
        effects: a 440 Hz tone for two minutes unless said) played into `mic`."""
        config = os.path.join(self.runtime, "pa.pa")
        with open(config, "w") as f:
            f.write("load-module module-null-sink sink_name=mic rate=48000 channels=1\n"
                    "load-module module-null-sink sink_name=speaker rate=48000 channels=2\n"
                    "load-module module-native-protocol-unix\n")
        subprocess.run(["pulseaudio", "-n", "-F", config, "--exit-idle-time=-1", "--daemonize=yes", "--use-pid-file=yes"],
                       env=self.env, check=True, capture_output=True)
        tone = os.path.join(self.work, "tone.wav")
        subprocess.run(["sox", "-n", "-r", "48000", "-c", "1", "-b", "16", tone, *sound], check=True)
        self.start(["paplay", "--latency-msec=10", "-d", "mic", tone])

    def start_recd(self, *extra, data=None, devices=True):
        """recd (on DATA unless said) on the paced microphone and speaker (`start_pulse`) unless
        `devices` is false, its log appended to WORK/recd.log; returns once `recctl status` answers."""
        devices = ["--capture-device", "pulse:mic.monitor", "--playback-device", "pulse:speaker"] if devices else []
        p = self.start([self.recd_path, "--data-dir", data or self.data, "--socket", self.sock, *devices, *extra],
                       stdout=open(os.path.join(self.work, "recd.log"), "a"), stderr=subprocess.STDOUT)
        wait_until("recd", lambda: subprocess.run([self.recctl_path, "--socket", self.sock, "status"], env=self.env,
                                                  capture_output=True).returncode == 0)
        return p

    def ui(self, *extra):
        """A `recctl ui` started: the address it prints first, and the app's base (that address
        without its token)."""
        p = self.start([self.recctl_path, "--socket", self.sock, "ui", *extra], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        url = p.stdout.readline().strip()
        return url, url.split("/?")[0]

    @contextlib.contextmanager
    def app(self, *recd_args, microphone=TONE, load=True):
        """A test's run, yielding its Page: the paced microphone playing `microphone` (None: no
        PulseAudio server, and a recd without devices), recd with `recd_args` (the process: `self.recd`),
        `recctl ui`, and Chromium on its address, at 390 px on the empty library when `load`.
        Whatever the test does, an exception is one failed check (its traceback printed), the browser
        quits, everything stops (`close`) and the counts end the output (`finish`, which exits: nothing
        after the `with` runs)."""
        browser = None
        try:
            try:
                if microphone:
                    self.start_pulse(microphone)
                self.recd = self.start_recd(*recd_args, devices=bool(microphone))
                url, base = self.ui()
                browser, downloads = chromium(self.work)
                page = Page(browser, self.shots, self.check, url, base, downloads)
                if load:
                    page.size(390)
                    browser.get(url)
                    page.wait("the empty state", lambda b: "No recordings yet" in page.text())
                yield page
            finally:
                if browser:
                    browser.quit()
        except Exception:
            traceback.print_exc()
            self.results.append(("the run", False))
        finally:
            self.close()
        self.finish()

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
    """A test's Harness for its arguments (RECD RECCTL [SHOTS_DIR]) and a private world: a work folder,
    an XDG_RUNTIME_DIR of its own (0700, for its PulseAudio server and recctl ui), the environment
    that names it, the data folder and socket of its recd, and a RecdClient of that recd."""
    recd, recctl = sys.argv[1], sys.argv[2]
    work = tempfile.mkdtemp(prefix=prefix)
    runtime = os.path.join(work, "rt")
    os.makedirs(runtime, mode=0o700)
    h = Harness(dict(os.environ, XDG_RUNTIME_DIR=runtime), work, runtime)
    h.recd_path, h.recctl_path, h.shots = recd, recctl, sys.argv[3] if len(sys.argv) > 3 else None
    h.data, h.sock = os.path.join(work, "data"), os.path.join(work, "run", "recd.sock")
    h.client = RecdClient(h.recctl_path, h.sock, h.env)
    return h


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

    def imported(self, path, title):
        """`recctl import` of one file: the recording made of it."""
        out = self.recctl_json("import", path, "--title", title)
        rec = (out.get("imported") or out.get("recordings") or [out])[0]
        return rec.get("recording", rec)

    def get(self, path):
        out = subprocess.run(["curl", "-s", "--unix-socket", self.sock, "http://recd" + path],
                             capture_output=True, text=True, timeout=10)
        return json.loads(out.stdout)


class Page:
    """What the tests do with the page: wait for something, run JavaScript, read its text, size the
    viewport, take screenshots into SHOTS (when given), click what is shown, read the toast, check
    with axe-core. `url` is the address `recctl ui` printed, `base` the app's, `downloads` Chromium's."""

    def __init__(self, browser, shots, check, url, base, downloads):
        self.browser, self.shots_dir, self.check = browser, shots, check
        self.url, self.base, self.downloads = url, base, downloads
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
        if not self.shots_dir:
            return
        os.makedirs(self.shots_dir, exist_ok=True)
        for width, height, tag in [(390, 844, "phone"), (1280, 860, "desktop")]:
            self.size(width, height)
            self.browser.save_screenshot(os.path.join(self.shots_dir, f"{name}-{tag}.png"))
        self.size(390)

    def widths(self, sizes, shot=None, show=None):
        """The viewport at each of `sizes` (width, height) in turn, yielding the width; then, with SHOTS,
        the screenshot SHOT-WIDTH.png (`show` scrolled into view first); back at 390 px after."""
        for width, height in sizes:
            self.size(width, height)
            yield width
            if shot and self.shots_dir:
                if show:
                    self.js("document.querySelector(arguments[0]).scrollIntoView({block: 'center'})", show)
                os.makedirs(self.shots_dir, exist_ok=True)
                self.browser.save_screenshot(os.path.join(self.shots_dir, f"{shot}-{width}.png"))
        self.size(390)

    def shots(self, name, show=None):
        """Screenshots NAME-320.png and NAME-1280.png (`show` scrolled into view), when SHOTS is given."""
        if self.shots_dir:
            for _ in self.widths([(320, 640), (1280, 860)], name, show):
                pass

    def check_fits(self, what):
        """WHAT: nothing drawn past the viewport's right edge (the toasts aside), the page not scrolling sideways."""
        wide = self.js("""return [...document.querySelectorAll('body *')].filter((e) => e.getClientRects().length
            && e.getBoundingClientRect().right > innerWidth + 1 && !e.closest('.toasts')).map((e) => e.outerHTML.slice(0, 80))""")
        self.check(f"{what}: nothing wider than the page", not wide and self.js("return document.documentElement.scrollWidth <= innerWidth"), wide)

    def check_player_fits(self, what):
        """WHAT, at 320 px: the page, the player and its row of the time fit their width; the sheet ≤ 60% high."""
        for _ in self.widths([(320, 844)]):
            wide = self.js("""const s = document.getElementById('player'), r = s.querySelector('.time-row');
                return [document.documentElement.scrollWidth, innerWidth, s.scrollWidth, s.clientWidth, r.scrollWidth, r.clientWidth,
                        Math.round(s.getBoundingClientRect().height), innerHeight]""")
            self.check(what, wide[0] <= wide[1] and wide[2] <= wide[3] and wide[4] <= wide[5] and wide[6] <= 0.6 * wide[7], wide)

    def toast_says(self, words, timeout=10):
        from selenium.webdriver.common.by import By
        try:
            return self.wait(f"the toast {words!r}", lambda b: words in b.find_element(By.ID, "toast").text, timeout)
        except AssertionError:
            return False

    def axe(self, context="document"):
        """axe-core's violations on the page now, each as [id, impact, help, [node: what fails]…]."""
        if not self.js("return typeof window.axe === 'object'"):
            self.js(open(AXE[-1]).read())
        out = self.browser.execute_async_script(f"""const done = arguments[arguments.length - 1];
            axe.run({context}, {{ resultTypes: ['violations'] }}).then((r) => done(r.violations.map((v) =>
              [v.id, v.impact, v.help, v.nodes.slice(0, 4).map((n) => n.target.join(' ') + ': ' + (n.failureSummary || '').replace(/\\s+/g, ' '))])),
              (e) => done('axe failed: ' + e));""")
        if isinstance(out, str):
            raise RuntimeError(out)
        return out

    def check_axe(self, name):
        """The screen as it is, once the toast has gone: no critical or serious violation; the others
        printed. Without axe-core, a note that it was not checked."""
        if not AXE:
            print(f"     note: axe-core is not installed in .build/axe-venv (scripts/install-deps.sh --test): {name} not checked")
            return
        from selenium.webdriver.common.by import By
        self.wait("the toast to go", lambda b: not b.find_element(By.ID, "toast").text, 5)
        found = self.axe()
        bad = [v for v in found if v[1] in ("critical", "serious")]
        for v in found:
            if v not in bad:
                print(f"     note ({name}): {v[1]} {v[0]}: {v[2]} {v[3][:2]}")
        self.check(f"axe: {name}: no critical or serious violation", not bad, json.dumps(bad, ensure_ascii=False, indent=1))

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
