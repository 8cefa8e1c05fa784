#!/usr/bin/python3
"""Issue 37 in a real browser (Debian's chromium + chromedriver, selenium) against the real recd on a
private PulseAudio server, through the real `recctl ui`: the page noticing recd going away during a
take and showing the recovered take when it is back; "starting…" while a start takes time; layouts
that hold the widest titles at 320, 390, 768 and 1280 px; the player's waveform fitted to its canvas;
and the seed's details (the mode dialog's words, the preview's waveform, the recording marks, the
counters, the speaker button and note, Data marked, an empty export).

Usage: app_details_test.py RECD RECCTL [SHOTS_DIR]
Ends with the plain line "N passed, M failed"; exit status 0 only when nothing failed.
"""
import os, signal, subprocess, time

from harness import setup
from selenium.webdriver.common.by import By

h = setup("recd-details-")
work, sock, check, client = h.work, h.sock, h.check, h.client

# The widest real titles (40 graphemes each, recd's limit): wide Latin capitals, CJK (each glyph a
# full em; measured with a real CJK font, fonts-noto-cjk, not fallback boxes), emoji, and a sentence.
TITLES = ["W" * 40, ("録音のテストです長いタイトル" * 3)[:40], "😀" * 40, "Remember why you started: one day a time"]
assert [len(t) for t in TITLES] == [40] * 4

recctl, recctl_json, recd_get = client.recctl, client.recctl_json, client.get


with h.app() as page:
    recd, browser, base, downloads = h.recd, page.browser, page.base, page.downloads
    wait, js, text, size, shot, click = page.wait, page.js, page.text, page.size, page.shot, page.click

    def toast():
        return browser.find_element(By.ID, "toast").text

    # Data stays marked while its screen is up; an empty library has nothing to export.
    click("#nav-data")
    marked = js("""const d = document.getElementById('nav-data'), n = document.getElementById('nav-new');
        return [d.getAttribute('aria-current'), getComputedStyle(d).backgroundColor, getComputedStyle(n).backgroundColor]""")
    check("Data is marked as the current page on its screen", marked[0] == "page" and marked[1] == marked[2], marked)
    click("[data-action=export]")
    said = wait("the export's answer", lambda b: toast())
    time.sleep(1)
    check("exporting an empty library says there is nothing to export, and downloads nothing",
          said.startswith("Nothing to export") and os.listdir(downloads) == [], [said, os.listdir(downloads)])
    click("#nav-new")
    heading = wait("the mode dialog", lambda b: b.find_element(By.CSS_SELECTOR, "dialog[open] h2").text)
    check("the mode dialog is headed as the seed's", heading == "Choose Recording Type", heading)
    shot("37-mode")
    click("[data-mode=audio]")
    check("Data is not marked once another screen is up", js("return document.getElementById('nav-data').getAttribute('aria-current')") is None)

    controls = lambda: js("return ['stop', 'pause'].map((a) => { const b = document.querySelector(`.record [data-action=${a}]`); return b && b.disabled })")
    # recd killed (kill -9) early in a take, before its first second reached the disk: STOP and
    # PAUSE are disabled while it is away (STOP did nothing visible), the screen promises nothing
    # it cannot know, and once recd is back the screen says what its start did with the take:
    # removed as empty (the page went to the library, having promised it would show here), or
    # kept as a take not saved.
    click("[data-action=record]")
    wait("the take", lambda b: b.find_elements(By.CSS_SELECTOR, "[data-action=stop]"))
    recd.send_signal(signal.SIGKILL)
    recd.wait()
    wait("the banner", lambda b: b.find_element(By.ID, "offline").is_displayed(), 6)
    said = wait("the screen's words", lambda b: b.find_element(By.CSS_SELECTOR, ".record .banner").text)
    check("recd gone: STOP and PAUSE are disabled", controls() == [True, True], controls())
    check("recd gone: the screen says what it knows (nothing more recorded), not that the take is kept",
          "nothing more is being recorded" in said and "is kept" not in said, said)
    recd = h.start_recd()
    kept = recctl_json("list", "--state", "pending")["recordings"]
    if not kept:   # the usual case: killed within its first second
        said = wait("the screen's words", lambda b: (lambda t: t if "Nothing was kept" in t else None)(
            b.find_element(By.CSS_SELECTOR, ".record .banner").text), 20)
        check("recd back, the empty take removed by its start: the screen says so, ready to record again",
              "removed the empty take" in said and browser.find_element(By.CSS_SELECTOR, "[data-action=record]").is_enabled()
              and not browser.find_element(By.ID, "nav-new").get_attribute("disabled"), said)
    else:          # it held a fragment already: kept, not saved, and the preview says so
        said = wait("the recovered preview", lambda b: b.find_element(By.CSS_SELECTOR, "[data-recovered]").text, 20)
        check("recd back, the take kept as not saved: its preview says so", "not saved yet" in said and kept[0]["recovered"], said)
        recctl("discard", kept[0]["id"], "--yes")
        browser.get(base + "/")
        click("#nav-new")
        click("[data-mode=audio]")

    # A start that takes time says so at once: recd is held (SIGSTOP) while RECORD is pressed.
    recd.send_signal(signal.SIGSTOP)
    try:
        click("[data-action=record]")
        time.sleep(0.3)
        shown = js("return [document.querySelector('[data-action]').closest('section').textContent]")[0]
        held = js("const a = document.activeElement; return [a.dataset.action, a.getAttribute('aria-disabled')]")
    finally:
        recd.send_signal(signal.SIGCONT)
    check("a start that takes time shows starting… at once", "starting…" in shown.lower(), shown[:200])
    check("meanwhile RECORD keeps the focus (aria-disabled, not disabled: the focus fell to <body>)", held == ["record", "true"], held)
    wait("the recording", lambda b: b.find_elements(By.CSS_SELECTOR, "[data-action=stop]"))
    wait("the meter", lambda b: float(b.find_element(By.CSS_SELECTOR, ".meter").get_attribute("data-peak") or "-160") > -20)
    marks = js("""const m = document.querySelector('.timer .rec-mark'), i = document.querySelector('.record .big-icon');
        return [m && m.textContent, m && getComputedStyle(m).backgroundColor, getComputedStyle(i).animationName, i.classList.contains('live')]""")
    check("recording: a red ⏺ by the timer and the mic pulsing red",
          marks[0] == "⏺" and marks[1] == "rgb(217, 54, 54)" and marks[2] == "pulse-red" and marks[3], marks)
    shot("37-recording")
    top = lambda: js("return Math.round(document.querySelector('[data-action=stop]').getBoundingClientRect().top)")
    before = top()
    click("[data-action=pause]")
    wait("the pause", lambda b: b.find_elements(By.CSS_SELECTOR, "[data-action=resume]"))
    time.sleep(0.3)
    check("paused: the meter keeps its height, the controls stay put", top() == before, [before, top()])
    click("[data-action=resume]")
    wait("the resume", lambda b: b.find_elements(By.CSS_SELECTOR, "[data-action=pause]"))
    time.sleep(2)

    # recd dies during the take (kill -9): the page says so within ~2 s, the timer stops, no raw
    # error text; when recd is back the page reconnects and shows the take recd recovered.
    take = recd_get("/v1/status")["active"]["recording"]["id"]
    recd.send_signal(signal.SIGKILL)
    recd.wait()
    killed = time.time()
    wait("the banner", lambda b: b.find_element(By.ID, "offline").is_displayed(), 6)
    noticed = time.time() - killed
    check("recd gone: the page says so within 2 s", noticed <= 2.0, f"{noticed:.2f} s")
    t0 = browser.find_element(By.CSS_SELECTOR, ".timer").text
    time.sleep(1.5)
    t1 = browser.find_element(By.CSS_SELECTOR, ".timer").text
    check("recd gone: the timer stops", t0 == t1, [t0, t1])
    check("recd gone: the recording screen says so",
          "recd stopped during the recording" in browser.find_element(By.CSS_SELECTOR, ".record .banner").text)
    check("recd gone: STOP and PAUSE are disabled", controls() == [True, True], controls())
    check("recd gone: no raw errno text anywhere",
          "errno" not in text() and "descriptor" not in text() and "errno" not in (browser.find_element(By.ID, "toast").get_attribute("textContent") or ""),
          text()[:300])
    shot("37-recd-gone")
    time.sleep(2)   # the stream's retries back off meanwhile
    recd = h.start_recd()
    back = time.time()
    wait("the recovered take's preview", lambda b: b.find_elements(By.CSS_SELECTOR, "[data-recovered]"), 20)
    recovered = recctl_json("show", take)
    sentence = browser.find_element(By.CSS_SELECTOR, "[data-recovered]").text
    d = int(recovered["duration"])
    check("recd back: the event stream reconnects and the banner goes",
          not browser.find_element(By.ID, "offline").is_displayed(), f"{time.time() - back:.1f} s")
    check("recd back: the recovered take with its real length and a sentence saying so",
          recovered["recovered"] and recovered["state"] == "pending" and "Recovered after recd stopped" in sentence
          and f"{d // 60}:{d % 60:02d}" in sentence and "not saved yet" in sentence, [sentence, recovered["duration"]])
    shot("37-recovered")

    # The preview: the waveform under the icon before Play; one line under each field, the
    # limit until the count nears it (notes: from 150, as the seed says).
    wait("the preview's waveform", lambda b: int(b.find_element(By.CSS_SELECTOR, ".preview-wave").get_attribute("data-points") or 0) > 0)
    order = js("""const i = document.querySelector('.record .big-icon').getBoundingClientRect(), w = document.querySelector('.preview-wave').getBoundingClientRect();
        return [w.top >= i.bottom - 1, !document.querySelector('#player:not([hidden])')]""")
    check("the audio preview shows its waveform under the icon, before Play", order == [True, True], order)
    lines = lambda: js("return [...document.querySelectorAll('form.meta .limit')].map((e) => e.textContent)")
    check("title and notes show their limit, not 0/40 as well", lines() == ["(40 char max)", "(200 char max)"] and "0/40" not in text(), lines())
    notes = browser.find_element(By.NAME, "notes")
    notes.send_keys("a" * 149)
    at149 = lines()[1]
    notes.send_keys("a")
    at150 = lines()[1]
    check("the notes counter appears at 150 characters", at149 == "(200 char max)" and at150 == "150/200", [at149, at150])
    notes.clear()
    js("window.scrollTo(0, 0)")   # the sticky header would cover SAVE scrolled to just under it
    click("[data-action=save]")
    wait("saved", lambda b: "Recording saved ✓" in toast())

    # Titles as wide as recd allows: imported, each played once (Quick Play shows the top 3).
    ids = []
    for i, t in enumerate(TITLES):
        # Different bytes each: the same bytes imported again are the recording they already are.
        short = os.path.join(work, f"short{i}.wav")
        subprocess.run(["sox", "-n", "-r", "48000", "-c", "1", "-b", "16", short, "synth", "4", "sine", str(300 + 100 * i), "vol", "0.5"], check=True)
        rec = client.imported(short, t)
        ids.append(rec["id"])
        subprocess.run(["curl", "-s", "--unix-socket", sock, "-X", "POST", f"http://recd/v1/recordings/{rec['id']}/played"], capture_output=True)
    browser.get(base + "/")
    wait("the long titles", lambda b: len(b.find_elements(By.CSS_SELECTOR, ".quick button")) == 3 and len(b.find_elements(By.CSS_SELECTOR, "ul.rows li")) == 5)
    measure = """const vw = window.innerWidth, out = {overflow: document.documentElement.scrollWidth - vw, bad: [], rowTitle: 0, card: 0};
        const boxes = [...document.querySelectorAll('ul.rows li .row-title')].map((t) => [t, t.closest('li')])
            .concat([...document.querySelectorAll('.quick .row-title')].map((t) => [t, t.closest('button')]));
        for (const [t, box] of boxes) {
          const r = t.getBoundingClientRect(), b = box.getBoundingClientRect();
          const cut = t.scrollWidth > t.clientWidth + 1;
          if (r.right > b.right + 0.5 || r.left < b.left - 0.5 || b.right > vw + 0.5 || (cut && getComputedStyle(t).textOverflow !== 'ellipsis'))
            out.bad.push([t.textContent.slice(0, 12), Math.round(r.left), Math.round(r.right), Math.round(b.right), cut]);
        }
        out.rowTitle = Math.round(Math.min(...[...document.querySelectorAll('ul.rows li .row-title')].map((t) => t.getBoundingClientRect().width)));
        // A tap on a card lands on that card (a card overflowing its neighbour took the tap).
        for (const c of document.querySelectorAll('.quick button')) {
          const r = c.getBoundingClientRect();
          out.card = Math.max(out.card, Math.round(r.width));
          const hit = document.elementFromPoint(r.left + r.width * 0.9, r.top + r.height / 2);
          if (!c.contains(hit)) out.bad.push(['card tap', c.getAttribute('aria-label').slice(0, 12)]);
        }
        const meta = [...document.querySelectorAll('ul.rows li .row-meta')].filter((m) => m.getBoundingClientRect().height > 30);
        if (meta.length) out.bad.push(['meta wraps', meta.length]);
        return out"""
    for width in (320, 390, 768, 1280):
        size(width)
        m = wait("the layout", lambda b: js(measure))
        check(f"{width} px: no horizontal overflow, every title inside its box or ellipsized (title width {m['rowTitle']} px, cards {m['card']} px)",
              m["overflow"] <= 0 and not m["bad"], m)
        if width == 390:
            check("390 px: a row's title has the row's width (not ~11 characters)", m["rowTitle"] >= 250, m["rowTitle"])
    # A take in progress with the widest title: its badge stays whole at 320 px.
    size(320)
    live = recctl_json("record", "start", "--title", TITLES[0])["recording"]["id"]
    badge = wait("the recording row", lambda b: js(f"""const t = document.querySelector("li[data-id='{live}'] .pending-tag");
        return t && [t.getClientRects().length, document.documentElement.scrollWidth - innerWidth,
                     t.closest('li').getBoundingClientRect().right - t.getBoundingClientRect().right]"""))
    recctl("record", "stop", "--discard")
    check("320 px: a row being recorded keeps its '● recording' badge whole, inside the row", badge[0] == 1 and badge[1] <= 0 and badge[2] >= 0, badge)
    wait("the row to go", lambda b: not b.find_elements(By.CSS_SELECTOR, f"li[data-id='{live}']"))
    browser.find_element(By.CSS_SELECTOR, f"li[data-id='{ids[0]}'] [data-action=delete]").click()
    dialog = wait("the delete question", lambda b: b.find_element(By.CSS_SELECTOR, "dialog[open]"))
    fits = js("const d = document.querySelector('dialog[open]'); return [d.scrollWidth <= d.clientWidth, document.documentElement.scrollWidth <= innerWidth]")
    check("320 px: the delete question holds a 40 × W title", fits == [True, True], fits)
    click("dialog[open] button:not([data-confirm])")
    js("window.scrollTo(0, 0)")
    shot("37-long-titles")

    # The player's waveform asks for the canvas's pixels (CSS width × devicePixelRatio), spreads
    # them over the whole width, and asks again when the width changes.
    size(390)
    asked = lambda: js("""return performance.getEntriesByType('resource').map((e) => e.name)
        .filter((n) => n.includes('/waveform?pixels=')).map((n) => +n.split('pixels=')[1])""")
    js("performance.clearResourceTimings()")
    click(f"li[data-id='{ids[3]}'] .row-main")   # found again if the list re-rendered meanwhile
    canvas = lambda: js("""const c = document.querySelector('#player canvas'); return c && [c.clientWidth, c.width, +(c.dataset.drawn || 0), +(c.dataset.points || 0)]""")
    wait("the player's waveform", lambda b: asked() and (canvas() or [0, 0, 0, 0])[3] > 0)
    c = canvas()
    check("the browser's player says nothing of the speaker (and no stray text)",
          not browser.find_elements(By.CSS_SELECTOR, "#player [data-speaker-note]") and "null" not in browser.find_element(By.ID, "player").text,
          browser.find_element(By.ID, "player").text)
    check(f"390 px: the waveform asks for the canvas's {c[1]} pixels and fills its {c[0]} px", asked()[-1] == c[1] == c[0]
          and abs(c[2] - c[0]) <= 1, [asked(), c])
    size(1280)
    wait("a new request", lambda b: asked()[-1] != c[1], 5)
    c2 = wait("the redraw", lambda b: (lambda v: v if v and v[0] > 600 and abs(v[2] - v[0]) <= 1 else None)(canvas()), 5)
    check(f"resized to 1280 px: asked again for {c2[1]} and redrawn across {c2[0]} px", asked()[-1] == c2[1], [asked(), c2])
    click("[data-action=close]")
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": False})
    js("performance.clearResourceTimings()")
    click(f"li[data-id='{ids[3]}'] .row-main")   # found again if the list re-rendered meanwhile
    wait("the player's waveform at ×2", lambda b: asked())
    c3 = canvas()
    check(f"devicePixelRatio 2: asks for {c3[1]} = 2 × {c3[0]} points", asked()[-1] == c3[1] == 2 * c3[0], [asked(), c3])
    click("[data-action=close]")
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    size(390)

    # 🔈 is labelled, and the player says the sound is on recd's speaker.
    # Found again at each try: closing the player counts its play, and the list that redraws for
    # it replaces the row (a button found before went stale under .text once in CI).
    speaker = f"li[data-id='{ids[3]}'] button[title=\"Play on recd's speaker\"]"
    label = wait("the speaker button", lambda b: b.find_element(By.CSS_SELECTOR, speaker).text)
    check("the speaker button says what it is", "Speaker" in label, label)
    click(speaker)
    note = wait("the speaker note", lambda b: b.find_element(By.CSS_SELECTOR, "#player [data-speaker-note]").text)
    check("the player says the sound is on recd's speaker, not in the browser", "recd's speaker" in note and "not in this browser" in note, note)
    shot("37-speaker")
    click("#player [data-action=close]")
