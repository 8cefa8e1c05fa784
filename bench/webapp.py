#!/usr/bin/python3
"""The web app with a library of 10,000 recordings: time to the library's first paint in headless
Chromium, the page's bytes without media, beside `recctl --json list --limit 50` in the same run.
Writes the "Web app" section of BENCHMARKS.md. Uses the release build (built if missing)."""
import os, signal, sqlite3, statistics, subprocess, sys, tempfile, time, uuid, datetime

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Tests", "browser"))
from benchmarks_md import write_section
from harness import Harness

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROWS, LOADS = 10_000, 7
bin_dir = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=REPO, capture_output=True, text=True).stdout.strip()
if not os.path.exists(os.path.join(bin_dir, "recd")):
    subprocess.run(["swift", "build", "-c", "release"], cwd=REPO, check=True)
RECD, RECCTL = os.path.join(bin_dir, "recd"), os.path.join(bin_dir, "recctl")
work = tempfile.mkdtemp(prefix="recd-bench-webapp-")
data, sock = os.path.join(work, "data"), os.path.join(work, "recd.sock")
h = Harness(None, work)
start = h.start


def wait_up():
    for _ in range(200):
        if subprocess.run([RECCTL, "--socket", sock, "status"], capture_output=True).returncode == 0:
            return
        time.sleep(0.05)
    raise SystemExit("recd did not start")


try:
    # A catalog of 10,000 saved recordings, made by recd's own schema (rows only: the page needs no file).
    p = start([RECD, "--data-dir", data, "--socket", sock, "--capture-device", "null"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_up()
    p.send_signal(signal.SIGTERM); p.wait()
    db = sqlite3.connect(os.path.join(data, "catalog.sqlite"))
    now = datetime.datetime.utcnow()
    rows = []
    for i in range(ROWS):
        rid = str(uuid.uuid4()).upper()
        created = (now - datetime.timedelta(seconds=ROWS - i)).strftime("%Y-%m-%d %H:%M:%S.000")
        rows.append((rid, "audio", "ready", f"Recording {i}", "", created, 42.5, 1000, f"Recordings/audio_{rid}.m4a", i % 17, 0, 0))
    db.executemany("INSERT INTO recording (id, type, state, title, notes, createdAt, duration, sizeBytes, file, playCount,"
                   " recovered, droppedFrames) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    db.commit(); db.close()
    # Files present (empty ones would be quarantined by recovery as non-media): recd is started with
    # the rows and without their files, so recovery marks them missing — not what a library looks like.
    # Instead hard-link one real AAC file under every name.
    template = os.path.join(work, "t.m4a")
    subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=440:d=0.5", "-c:a", "aac", template], check=True)
    for r in rows:
        os.link(template, os.path.join(data, r[8]))
    start([RECD, "--data-dir", data, "--socket", sock, "--capture-device", "null"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_up()
    ui = start([RECCTL, "--socket", sock, "ui"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = ui.stdout.readline().strip()

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,860", "--disable-dev-shm-usage"]:
        options.add_argument(a)
    browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    browser.get(url)   # redeems the token; the cookie stays for the loads below
    base = url.split("/?")[0] + "/"
    paints, fcps = [], []
    for i in range(LOADS):
        browser.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": i % 2 == 0})
        browser.get(base)
        for _ in range(200):
            t = browser.execute_script("const m = performance.getEntriesByName('library-painted'); return m.length ? m[0].startTime : null")
            if t is not None:
                break
            time.sleep(0.02)
        paints.append(t)
        fcps.append(browser.execute_script("const e = performance.getEntriesByName('first-contentful-paint'); return e.length ? e[0].startTime : null"))
    resources = browser.execute_script("return performance.getEntriesByType('resource').filter(r => r.initiatorType !== 'fetch' && r.initiatorType !== 'xmlhttprequest' && !r.name.includes('/v1/')).map(r => r.decodedBodySize)")
    page = browser.execute_script("return performance.getEntriesByType('navigation')[0].decodedBodySize")
    browser.quit()
    page_bytes = page + sum(resources)
    # The peer in the same run: the same first page through the CLI, spawn to exit.
    cli = []
    for _ in range(LOADS):
        t0 = time.perf_counter()
        subprocess.run([RECCTL, "--socket", sock, "--json", "list", "--limit", "50"], check=True, capture_output=True)
        cli.append((time.perf_counter() - t0) * 1000)
    paint, fcp, peer = statistics.median(paints), statistics.median(f for f in fcps if f is not None), statistics.median(cli)
    section = f"""## Web app (bench/webapp.py)

Headless Chromium ({LOADS} loads, caches off on every other one) through `recctl ui`, release build,
a library of {ROWS:,} saved recordings; the peer is `recctl --json list --limit 50` (spawn to exit) in
the same run.

| what | median | goal |
| --- | --- | --- |
| first contentful paint | {fcp:.0f} ms | |
| library painted (first 50 rows and Quick Play on screen) | {paint:.0f} ms | ≤ 300 ms |
| `recctl --json list --limit 50` | {peer:.1f} ms | |
| ratio library painted / CLI list | {paint / peer:.1f}× | |
| page and its code, uncompressed, without media | {page_bytes / 1000:.1f} KB | ≤ 100 KB |
"""
    print(section)
    write_section(REPO, "## Web app (bench/webapp.py)", section)
finally:
    h.close()
