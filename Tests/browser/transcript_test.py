#!/usr/bin/python3
"""Issue 38's web app in a real browser (Debian's chromium + chromedriver, selenium) against the real
recd, with the real transcriber (Whisper base, installed by scripts/install-deps.sh --transcribe in
<repo>/.build/transcribe), on a private PulseAudio server, through the real `recctl ui`: speech made by
espeak-ng and imported; the player's transcript ("Transcribing…" until `transcript.done`, then the
words), a click on a word playing from there (in the browser, and on recd's speaker through its seek),
the word being heard marked and kept in view; search as one types (debounced), the words marked with
<mark> built as text (a title with markup stays text), "at 0:0X" for words said, a click on a hit
playing from there, no hits, clearing; and recd without the transcriber: a quiet line, search on titles.

Usage: transcript_test.py RECD RECCTL [SHOTS_DIR]
Ends with the plain line "N passed, M failed"; exit status 0 only when nothing failed.
"""
import os, signal, subprocess, time

from harness import REPO, setup
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

h = setup("recd-transcript-")
work, check, client = h.work, h.check, h.client
TRANSCRIBER = os.path.join(REPO, ".build", "transcribe")

STORY = ("Good morning. Today I want to remember why I started. The storm passed over the harbour last night, "
         "and the boats are safe. I walked along the water for an hour and felt calm again. "
         "Tomorrow I will call my sister and tell her the good news about the new job.")
SHOPPING = "Remember to buy three apples and a loaf of bread."
TRICKY = "<b>Apples</b> & quiet"   # a title with markup: shown as text, never as markup
# Long words, the one searched for last: recd's snippet (12 words) ends with it, four lines at 360 px.
LONG_NOTES = ("Remember: extraordinary circumstances surrounding yesterday's conversation with grandmother regarding "
              "unforgettable childhood adventures reminded everybody about resilience")

recctl, recd_get, imported = client.recctl, client.get, client.imported


def speech(text, name, silence=1.0):
    """`text` spoken by espeak-ng after `silence` s, as a 48 kHz mono WAV."""
    raw, wav = os.path.join(work, name + "-raw.wav"), os.path.join(work, name + ".wav")
    subprocess.run(["espeak-ng", "-w", raw, text], check=True, capture_output=True)
    subprocess.run(["sox", raw, "-r", "48000", "-c", "1", "-b", "16", wav, "pad", str(silence), "0.5"], check=True)
    return wav


def transcript_of(rid, seconds=180):
    deadline = time.time() + seconds
    t = recd_get(f"/v1/recordings/{rid}/transcript")
    while t["state"] == "pending" and time.time() < deadline:
        time.sleep(0.25)
        t = recd_get(f"/v1/recordings/{rid}/transcript")
    return t


# Normal priority: the suite's other half keeps the CPU busy, and SCHED_IDLE would wait for it.
with h.app("--transcriber", TRANSCRIBER, "--transcribe-priority", "normal") as page:
    if not os.path.exists(os.path.join(TRANSCRIBER, ".installed")):
        raise RuntimeError(f"the transcriber is not installed in {TRANSCRIBER}: scripts/install-deps.sh --transcribe")
    recd, browser, base = h.recd, page.browser, page.base
    wait, js, text, size, shot, click = page.wait, page.js, page.text, page.size, page.shot, page.click

    audio_time = lambda: js("const a = document.querySelector('#player audio'); return a && [a.currentTime, a.paused]")
    marked = lambda: js("""const w = [...document.querySelectorAll('#player .word.now')];
        return w.map((e) => [e.textContent, +e.dataset.start, e.getAttribute('aria-current')])""")

    check("an empty library offers no search", not browser.find_elements(By.CSS_SELECTOR, "input[type=search]"))

    story = imported(speech(STORY, "story"), "Morning walk")
    wait("the row", lambda b: b.find_elements(By.CSS_SELECTOR, f"li[data-id='{story['id']}'] .row-main"))
    click(f"li[data-id='{story['id']}'] .row-main")   # found again if the list re-rendered meanwhile
    click("#player [data-action=pause]")   # heard later, word by word
    first = wait("the transcript's first state", lambda b: js("const t = document.querySelector('#player [data-transcript]'); return t && t.dataset.state !== 'loading' && [t.dataset.state, t.textContent]"))
    check("while recd transcribes, the player says Transcribing…", first[0] == "pending" and first[1].startswith("Transcribing…"), first)
    shot("38-transcribing")
    try:
        wait("the words (transcript.done, without reopening)", lambda b: b.find_elements(By.CSS_SELECTOR, "#player .word"), 180)
    except AssertionError:
        print("transcript:", recd_get(f"/v1/recordings/{story['id']}/transcript")["state"], "player:",
              browser.find_element(By.ID, "player").text, "log:", open(os.path.join(work, "recd.log")).read()[-3000:])
        raise
    t = transcript_of(story["id"])
    words = [w for s in t["segments"] for w in s["words"] if w["word"].strip()]
    shown = js("return [...document.querySelectorAll('#player .word')].map((e) => [e.textContent, +e.dataset.start])")
    check(f"the transcript shows when done: {len(shown)} words, each with its start, as recd has them",
          len(shown) == len(words) > 20 and all(s[0] == w["word"].strip() and abs(s[1] - w["start"]) < 1e-6 for s, w in zip(shown, words)),
          [shown[:5], words[:5]])
    check("what recd heard is what was said", "storm passed over the harb" in t["text"].lower(), t["text"])
    note = browser.find_element(By.CSS_SELECTOR, "#player [data-transcript] .note").text
    check("the transcript says it is automatic", note == "Transcribed on this device · may contain mistakes", note)
    geo = js("""const s = document.getElementById('player').getBoundingClientRect(), w = document.querySelector('#player .words');
        return [Math.round(s.height), w.clientHeight, w.scrollHeight, innerHeight]""")
    check(f"390x844: the sheet stays {geo[0]} px high (≤ 60%), the words a scrolling box of {geo[1]} px",
          geo[0] <= 0.6 * geo[3] and 60 <= geo[1] <= 130 and geo[2] > geo[1], geo)

    # A click on a word plays from its start; the word being heard is marked.
    pick = next(i for i, w in enumerate(words) if w["start"] > 4)
    before = audio_time()
    browser.find_elements(By.CSS_SELECTOR, "#player .word")[pick].click()
    moved = wait("the seek", lambda b: (lambda a: a if a and abs(a[0] - words[pick]["start"]) < 0.6 else None)(audio_time()), 5)
    playing = wait("the playback", lambda b: (lambda a: a if a and not a[1] else None)(audio_time()), 5)
    check(f"a click on “{words[pick]['word'].strip()}” seeks to its start ({words[pick]['start']:.2f} s) and plays",
          before[1] and playing[0] >= words[pick]["start"] - 0.3, [before, moved, playing])
    now = wait("a marked word", lambda b: marked(), 5)
    check("while playing, the word being heard is marked (class and aria-current), one at a time",
          len(now) == 1 and now[0][2] == "true" and now[0][1] <= audio_time()[0] + 0.05 and now[0][1] >= words[pick]["start"] - 0.01, [now, audio_time()])
    later = wait("the mark moving on", lambda b: (lambda m: m if m and m[0][1] > now[0][1] else None)(marked()), 8)
    check("the mark follows the playback", later[0][1] > now[0][1], [now, later])
    # A word far down, out of the box's view: marked and scrolled into it (the box, not the page).
    js("document.querySelector('#player .words').scrollTop = 0")
    page_y = js("return scrollY")
    last = len(words) - 3
    js(f"document.querySelector('#player audio').currentTime = {words[last]['start'] + 0.05}")
    wait("the late word marked", lambda b: (lambda m: m and m[0][1] == words[last]["start"])(marked()), 5)
    time.sleep(1)   # the smooth scroll
    seen = js("""const w = document.querySelector('#player .word.now').getBoundingClientRect(), b = document.querySelector('#player .words').getBoundingClientRect();
        return [w.top >= b.top - 1 && w.bottom <= b.bottom + 1, document.querySelector('#player .words').scrollTop, scrollY]""")
    check("a marked word out of view is scrolled into the transcript's box (the page stays put)", seen[0] and seen[1] > 0 and seen[2] == page_y, seen)
    click("#player [data-action=pause]")
    shot("38-player")

    # By keyboard (issue 47): Tab reaches the box, ← → go from word to word (from the one marked), Enter plays from it.
    box = browser.find_element(By.CSS_SELECTOR, "#player .words")
    check("the transcript box says how to use it by keyboard", box.accessible_name == "Transcript"
          and box.get_attribute("aria-description") == "Arrow keys choose a word, Enter plays from it", box.accessible_name)
    js("arguments[0].focus()", box)
    key = lambda k: browser.switch_to.active_element.send_keys(k)
    at_word = lambda: js("return [...document.querySelectorAll('#player .word')].indexOf(document.activeElement)")
    m = js("return [...document.querySelectorAll('#player .word')].findIndex((w) => w.classList.contains('now'))")
    m = max(m, 0)
    key(Keys.ARROW_RIGHT)
    check(f"→ in the box focuses the word marked (#{m})", at_word() == m, [at_word(), m])
    n, steps, want = len(words), [], []
    for k in [Keys.ARROW_LEFT, Keys.ARROW_LEFT, Keys.ARROW_RIGHT] if m >= 2 else [Keys.ARROW_RIGHT, Keys.ARROW_RIGHT, Keys.ARROW_LEFT]:
        key(k)
        steps.append(at_word())
        want.append((want[-1] if want else m) + (1 if k == Keys.ARROW_RIGHT else -1))
    check("← and → go word by word", steps == want, [steps, want, n])
    target = steps[-1]
    js("document.querySelectorAll('#player .word')[arguments[0]].focus()", n - 1)
    key(Keys.ARROW_RIGHT)
    last = at_word()
    js("document.querySelectorAll('#player .word')[arguments[0]].focus()", target)
    check("→ on the last word stays there", last == n - 1, last)
    key(Keys.ENTER)
    sought = wait("the seek by Enter", lambda b: (lambda a: a if a and not a[1] and abs(a[0] - words[target]["start"]) < 0.6 else None)(audio_time()), 5)
    check(f"Enter on “{words[target]['word'].strip()}” plays from its start ({words[target]['start']:.2f} s)", bool(sought), audio_time())
    key(Keys.TAB)
    check("Tab leaves the transcript (the words are not tab stops)", at_word() == -1 and
          not js("return document.querySelector('#player .words').contains(document.activeElement)"))
    click("#player [data-action=pause]")
    click("#player [data-action=close]")

    # On recd's speaker the word is played from through recd's seek (GET /v1/playback says where).
    browser.find_element(By.CSS_SELECTOR, f"li[data-id='{story['id']}'] button[title=\"Play on recd's speaker\"]").click()
    wait("the speaker's words", lambda b: b.find_elements(By.CSS_SELECTOR, "#player .word"), 10)
    target = next(i for i, w in enumerate(words) if w["start"] > 8)
    browser.find_elements(By.CSS_SELECTOR, "#player .word")[target].click()
    pos = wait("recd's position", lambda b: (lambda p: p if p and abs(p["position"] - words[target]["start"]) < 1.0 else None)(recd_get("/v1/playback").get("playback")), 5)
    check(f"on recd's speaker a click on a word seeks recd there ({words[target]['start']:.2f} s)", pos["state"] == "playing", pos)
    on = wait("a word marked from recd's position", lambda b: marked(), 5)
    check("on recd's speaker the word being heard is marked too", on[0][1] >= words[target]["start"] - 0.01, on)
    click("#player [data-action=close]")

    # Done but silent; and more to search.
    silent = os.path.join(work, "silence.wav")
    subprocess.run(["sox", "-n", "-r", "48000", "-c", "1", "-b", "16", silent, "trim", "0", "3"], check=True)
    quiet = imported(silent, TRICKY)
    recctl("edit", quiet["id"], "--notes", LONG_NOTES)
    shopping = imported(speech(SHOPPING, "shopping", 2.0), "Errands")
    tq, ts = transcript_of(quiet["id"]), transcript_of(shopping["id"])
    wait("the new rows", lambda b: len(b.find_elements(By.CSS_SELECTOR, "ul.rows li")) == 3)
    click(f"li[data-id='{quiet['id']}'] .row-main")   # found again if the list re-rendered meanwhile
    said = wait("the silent transcript", lambda b: b.find_element(By.CSS_SELECTOR, "#player [data-transcript][data-state=done]").text)
    check("a recording with no speech says No words were heard.", tq["state"] == "done" and said == "No words were heard.", [tq, said])
    click("#player [data-action=close]")

    # Search as one types: one request after the typing stops, the hits with their words marked.
    field = browser.find_element(By.CSS_SELECTOR, "input[type=search]")
    check("the search field is labelled", field.get_attribute("aria-label") == "Search recordings")
    js("performance.clearResourceTimings()")
    field.send_keys("apples")
    wait("the hits", lambda b: len(b.find_elements(By.CSS_SELECTOR, "ul.hits li")) == 2)
    time.sleep(0.5)
    asked = js("return performance.getEntriesByType('resource').map((e) => e.name).filter((n) => n.includes('/search?'))")
    check("typing 'apples' asks recd once, after the typing stops", len(asked) == 1 and asked[0].endswith("q=apples&limit=50"), asked)
    hits = js("""return [...document.querySelectorAll('ul.hits li')].map((li) => ({id: li.dataset.id, field: li.dataset.field,
        title: li.querySelector('.row-title').textContent, marks: [...li.querySelectorAll('mark')].map((m) => m.textContent),
        snippet: li.querySelector('.snippet')?.textContent, where: li.querySelector('[data-where]').textContent}))""")
    by_field = {x["field"]: x for x in hits}
    heard = by_field.get("transcript", {})
    api = recd_get("/v1/search?q=apples")["results"]
    hit_time = next((x["time"] for x in api if x["field"] == "transcript"), None)
    check("a hit in what was said: its snippet with <mark>apples</mark> and when it is said",
          heard.get("id") == shopping["id"] and [m.lower() for m in heard.get("marks", [])] == ["apples"]
          and hit_time is not None and heard.get("where", "").endswith(f"at 0:{int(hit_time):02d}"), [heard, hit_time])
    titled = by_field.get("title", {})
    check("a hit in a title with markup: the markup shown as text, only the word marked, nothing injected",
          titled.get("title") == TRICKY and titled.get("snippet") is None and [m.lower() for m in titled.get("marks", [])] == ["apples"]
          and not browser.find_elements(By.CSS_SELECTOR, "ul.hits b") and titled.get("where", "").endswith("in its title"), titled)
    check("while searching, the list is what was found (no Quick Play, no tabs)",
          not browser.find_elements(By.CSS_SELECTOR, ".quick, .tabs")
          and js("return document.querySelector('#view h2.section').textContent") == "2 recordings found")
    shot("38-search")
    click(f"ul.hits li[data-id='{shopping['id']}'] .row-main")   # found again if the list re-rendered meanwhile
    opened = wait("the player at the words", lambda b: (lambda a: a if a and a[0] > 0 and not a[1] else None)(audio_time()), 10)
    check(f"a click on the hit plays it from {hit_time:.2f} s", abs(opened[0] - hit_time) < 1.0, [opened, hit_time])
    check("the field keeps the query while the player is up", field.get_attribute("value") == "apples")
    click("#player [data-action=close]")

    field.clear()
    field.send_keys("zebra")
    none = wait("no hits", lambda b: b.find_element(By.CSS_SELECTOR, "[data-no-hits]").text)
    check("no hits says so", none == "No recordings say “zebra”.", none)
    js("performance.clearResourceTimings()")
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys("!!")
    wait("the library again", lambda b: b.find_elements(By.CSS_SELECTOR, ".tabs"), 5)
    time.sleep(0.5)
    check("a query without letters or digits is not sent (recd would refuse it): the library shows",
          not js("return performance.getEntriesByType('resource').filter((e) => e.name.includes('/search?')).length")
          and not browser.find_elements(By.CSS_SELECTOR, ".banner"))
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys("harb")
    wait("the prefix hit", lambda b: [e.get_attribute("data-id") for e in b.find_elements(By.CSS_SELECTOR, "ul.hits li")] == [story["id"]])
    check("a word's beginning finds it ('harb')", True)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(Keys.BACK_SPACE)
    wait("the library after clearing", lambda b: len(b.find_elements(By.CSS_SELECTOR, "ul.rows:not(.hits) li")) == 3 and b.find_elements(By.CSS_SELECTOR, ".tabs"), 5)
    check("clearing the field brings the library back, the field still focused",
          js("return document.activeElement === document.querySelector('input[type=search]')"))

    # A hit at the end of a long snippet on a phone: the marked word is in view inside the
    # snippet's box (two lines: it was on the fourth, cut off), at 360 px and after a turn to 320.
    size(360)
    field.send_keys("resilience")
    wait("the hit in the notes", lambda b: b.find_elements(By.CSS_SELECTOR, f"ul.hits li[data-id='{quiet['id']}'] .snippet mark"))
    seen = """const li = document.querySelector(`ul.hits li[data-id='${arguments[0]}']`), s = li.querySelector('.snippet'), m = s.querySelector('mark');
        li.scrollIntoView({block: 'center'});
        const a = s.getBoundingClientRect(), b = m.getBoundingClientRect();
        const at = document.elementFromPoint((b.left + b.right) / 2, (b.top + b.bottom) / 2);
        return [b.top >= a.top - 0.5 && b.bottom <= a.bottom + 0.5 && b.left >= a.left - 0.5 && b.right <= a.right + 0.5,
                at === m || m.contains(at), m.textContent, s.textContent]"""
    for width in (360, 320):
        size(width)
        v = js(seen, quiet["id"])
        check(f"{width} px: the marked word of a long snippet is inside the snippet's visible box",
              v[0] and v[1] and v[2].lower() == "resilience", v)
    size(390)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(Keys.BACK_SPACE)
    wait("the library after clearing", lambda b: b.find_elements(By.CSS_SELECTOR, ".tabs"), 5)

    # recd without the transcriber: a quiet line says why; search still finds titles.
    recd.send_signal(signal.SIGTERM)
    recd.wait(15)
    recd = h.start_recd("--transcriber", "/nonexistent/transcribe")
    plain = imported(speech("Nothing to see here.", "plain"), "Untranscribed note")
    browser.get(base + "/")
    wait("the rows", lambda b: len(b.find_elements(By.CSS_SELECTOR, "ul.rows li")) == 4)
    click(f"li[data-id='{plain['id']}'] .row-main")   # found again if the list re-rendered meanwhile
    why = wait("the quiet line", lambda b: b.find_element(By.CSS_SELECTOR, "#player [data-transcript][data-state=none]").text)
    check("without the transcriber the player says why, in one quiet line, and plays",
          why.startswith("No transcript: ") and "not installed" in why and audio_time() is not None, why)
    check("without the transcriber the player's controls are all there",
          all(browser.find_elements(By.CSS_SELECTOR, f"#player [data-action={a}]") for a in ("back", "pause", "forward", "close")))
    shot("38-no-transcriber")
    click("#player [data-action=close]")
    click(f"li[data-id='{story['id']}'] .row-main")   # found again if the list re-rendered meanwhile
    kept = wait("the stored words", lambda b: b.find_elements(By.CSS_SELECTOR, "#player .word"), 10)
    check("a transcript made before is still shown", len(kept) == len(words), len(kept))
    click("#player [data-action=close]")
    field = browser.find_element(By.CSS_SELECTOR, "input[type=search]")
    field.send_keys("untranscribed")
    found = wait("a title hit", lambda b: [e.get_attribute("data-id") for e in b.find_elements(By.CSS_SELECTOR, "ul.hits li")])
    check("without the transcriber search still finds titles", found == [plain["id"]], found)
