#!/usr/bin/python3
"""Issue 47 in the web app, in a real browser (Debian's chromium + chromedriver, selenium) against the
real recd, on a private PulseAudio server, through the real `recctl ui`:

- Skip Silence in the player, on a memo made by sox (2 s tone, 3 s silence, three times, 2 s tone):
  off, the <audio> plays through a pause; the toggle (a button with aria-pressed) asks recd for the
  pauses and says "saves 7.8 s"; on, the <audio>'s time never stays inside a pause (sampled every
  frame) and the 17 s memo plays to its end in 8.2–11 s of wall time (9.2 s of sound), every tone heard; the
  state is kept across a reload (localStorage); on recd's speaker the play asks recd to skip
  (`GET /v1/playback` says skipSilence), and a toggle there says it counts from the next play;
- search's "did you mean": "harbr" says "No recordings say “harbr” — did you mean harbour?", the
  word a button named "Search for harbour" that searches again with it (Enter), the focus on the
  first hit; two words wrong, one suggestion each; a word with nothing near says only "No recordings";
- accessibility: the order is a group of two toggle buttons (aria-pressed, no tab roles), Space or
  Enter choosing; Quick Play's list items are <li> (no role=listitem on its buttons); the input
  level meter has aria-valuenow (and min, max) before, while and after recording; fields' borders and
  the waveform's bars have 3:1 contrast, and the player's position is a dark line on the waveform;
- screenshots at 320 and 1280 px.

Usage: silence_search_test.py RECD RECCTL [SHOTS_DIR]
Ends with the plain line "N passed, M failed"; exit status 0 only when nothing failed.
"""
import json, os, re, subprocess, time

from harness import setup
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.common.action_chains import ActionChains

h = setup("recd-silence-")
work, sock, check, imported = h.work, h.sock, h.check, h.client.imported


def recd(path, method="GET"):
    out = subprocess.run(["curl", "-s", "-X", method, "--unix-socket", sock, "http://recd" + path], capture_output=True, text=True, timeout=30)
    return json.loads(out.stdout) if out.stdout else None


def sox(name, *effects):
    path = os.path.join(work, name + ".wav")
    subprocess.run(["sox", "-n", "-r", "48000", "-c", "1", "-b", "16", path, *effects], check=True)
    return path


def rgb(css):
    return [int(float(v)) for v in re.findall(r"[\d.]+", css)[:3]]


def contrast(a, b):
    def lum(c):
        c = [v / 255 for v in c]
        c = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in c]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
    x, y = sorted([lum(a), lum(b)])
    return (y + 0.05) / (x + 0.05)


with h.app() as page:
    browser, wait, js, size, click = page.browser, page.wait, page.js, page.size, page.click
    toast_says, shots = page.toast_says, page.shots
    audio = lambda: js("const a = document.querySelector('#player audio'); return a && [a.currentTime, a.paused, a.ended]")
    skip_button = lambda: browser.find_element(By.CSS_SELECTOR, "#player [data-action=skip-silence]")
    saves = lambda: browser.find_element(By.CSS_SELECTOR, "#player [data-saves]").text
    stored = lambda: js("return localStorage.getItem('recd-skip-silence')")
    focused = lambda: js("const a = document.activeElement; return a && [a.tagName, a.textContent, a.closest('li')?.dataset.id ?? null]")

    def press(*keys):
        # As a keyboard sends them, to whatever has the focus (a modifier held for the key after it): not to
        # an element asked for first, which a redraw (a library change recd announced) may replace meanwhile.
        chain, held = ActionChains(browser), keys[:-1]
        for k in held: chain.key_down(k)
        chain.send_keys(keys[-1])
        for k in reversed(held): chain.key_up(k)
        chain.perform()

    def open_player(rid, speaker=False):
        css = f"li[data-id='{rid}'] " + ("[data-action=speaker]" if speaker else ".row-main")
        click(css)
        wait("the player", lambda b: b.find_elements(By.CSS_SELECTOR, "#player [data-action=skip-silence]"))

    def close_player():
        click("#player [data-action=close]")
        wait("the player closed", lambda b: b.find_element(By.ID, "player").get_attribute("hidden"))

    js("localStorage.removeItem('recd-skip-silence'); localStorage.removeItem('recd-speed')")
    # The memo: 2 s tone, then three times 3 s of silence and 2 s of tone (17 s).
    tone, quiet = sox("memo-tone", "synth", "2", "sine", "440", "vol", "0.5"), sox("memo-quiet", "trim", "0", "3")
    memo_wav = os.path.join(work, "memo.wav")
    subprocess.run(["sox", tone, quiet, tone, quiet, tone, quiet, tone, memo_wav], check=True)
    memo = imported(memo_wav, "Harbour walk")
    other = imported(sox("short", "synth", "3", "sine", "330", "vol", "0.5"), "Quiet tone")
    recd(f"/v1/recordings/{memo['id']}/played", "POST")   # the older one the most played
    pauses = recd(f"/v1/recordings/{memo['id']}/silences")
    check("recd finds the memo's three pauses, 7.8 s to skip", len(pauses["silences"]) == 3 and abs(pauses["skippable"] - 7.8) < 0.2, pauses)
    wait("both rows", lambda b: len(b.find_elements(By.CSS_SELECTOR, "ul.rows li[data-id]")) == 2)

    # 1. The order: two toggle buttons in a group named Order; Tab reaches each, Space and Enter choose.
    group = browser.find_element(By.CSS_SELECTOR, ".tabs")
    pressed = lambda: js("return [...document.querySelectorAll('.tabs button')].map((b) => [b.textContent, b.getAttribute('aria-pressed')])")
    check("the order is a group named Order of toggle buttons, Recent pressed (no tab roles)",
          group.get_attribute("role") == "group" and group.accessible_name == "Order" and pressed() == [["Recent", "true"], ["Most Played", "false"]]
          and not browser.find_elements(By.CSS_SELECTOR, "[role=tab], [role=tablist], [aria-selected]"), pressed())
    first_title = lambda: browser.find_element(By.CSS_SELECTOR, "ul.rows li[data-id] .row-title").text
    check("Recent lists the newest first", first_title() == "Quiet tone", first_title())
    js("document.querySelector('.tabs button').focus()")
    press(Keys.TAB)
    check("Tab goes from Recent to Most Played", focused()[1] == "Most Played", focused())
    press(Keys.SPACE)
    wait("Most Played pressed", lambda b: pressed() == [["Recent", "false"], ["Most Played", "true"]])
    check("Space presses Most Played (the most played first), the focus staying on it", focused()[1] == "Most Played" and first_title() == "Harbour walk", [focused(), first_title()])
    press(Keys.SHIFT, Keys.TAB)
    press(Keys.ENTER)
    wait("Recent pressed again", lambda b: pressed() == [["Recent", "true"], ["Most Played", "false"]])
    check("Shift+Tab and Enter press Recent again, the focus on it", focused()[1] == "Recent", focused())
    # A change of the library redraws the list and its order buttons: the focus stays on the one it was on.
    recd(f"/v1/recordings/{memo['id']}/played", "POST")   # still the most played, the order as it was
    wait("the list redrawn with the new count", lambda b: "2 plays" in js("return document.querySelector('.quick')?.textContent ?? ''"))
    check("a redraw keeps the focus on Recent", focused()[1] == "Recent", focused())

    # 2. Quick Play: a list of <li>, its buttons plain buttons.
    quick = js("""const q = document.querySelector('.quick'); return q && [q.tagName, [...q.children].map((c) => c.tagName),
        document.querySelectorAll('[role=listitem]').length, q.getAttribute('aria-labelledby')]""")
    items = browser.find_elements(By.CSS_SELECTOR, ".quick > li")
    buttons = browser.find_elements(By.CSS_SELECTOR, ".quick li > button")
    check("Quick Play is a <ul> of <li> named by its heading, no role=listitem anywhere", quick and quick[0] == "UL"
          and quick[1] == ["LI", "LI"] and quick[2] == 0 and quick[3] == "quick-title", quick)
    check("Chromium: its items are listitems, each holding a button named Play …", [i.aria_role for i in items] == ["listitem"] * 2
          and [b.aria_role for b in buttons] == ["button"] * 2 and all(b.accessible_name.startswith("Play ") for b in buttons),
          [[i.aria_role for i in items], [(b.aria_role, b.accessible_name) for b in buttons]])
    shots("47-library-order")

    # 3. Contrast of the search field's border on white and on the page (WCAG 1.4.11: 3:1).
    field = browser.find_element(By.CSS_SELECTOR, "input[type=search]")
    colours = js("""const s = getComputedStyle(arguments[0]); return [s.borderTopColor, s.backgroundColor,
        getComputedStyle(document.documentElement).backgroundColor]""", field)
    edge = rgb(colours[0])
    check(f"the search field's border has 3:1 against its inside and the page ({colours[0]})",
          contrast(edge, rgb(colours[1])) >= 3 and contrast(edge, rgb(colours[2])) >= 3,
          [colours, contrast(edge, rgb(colours[1])), contrast(edge, rgb(colours[2]))])

    # 4. Skip Silence off: the <audio> plays through the first pause.
    open_player(memo["id"])
    check("Skip silence is a toggle button, off at first, saying nothing of savings",
          skip_button().text == "Skip silence" and skip_button().get_attribute("aria-pressed") == "false" and saves() == ""
          and skip_button().aria_role == "button", [skip_button().text, skip_button().get_attribute("aria-pressed"), saves()])
    js("const a = document.querySelector('#player audio'); a.currentTime = 1.5; a.play()")
    inside = wait("the <audio> inside the first pause", lambda b: (lambda a: a if a[0] > 3.0 else None)(audio()), 6)
    check(f"off, the <audio> plays through a pause ({inside[0]:.2f} s)", 3.0 < inside[0] < 4.7 and not inside[1], inside)
    js("document.querySelector('#player audio').pause()")

    # 5. On: the pauses read once, the saving said.
    skip_button().click()
    said = wait("the saving", lambda b: saves())
    check("pressed, Skip silence says “saves 7.8 s” and is remembered",
          said == "saves 7.8 s" and skip_button().get_attribute("aria-pressed") == "true" and stored() == "1", [said, stored()])
    check("the saving is said to screen readers (a live region)",
          browser.find_element(By.CSS_SELECTOR, "#player [data-saves]").get_attribute("aria-live") == "polite")
    # The <audio> in a pause jumps to its end at once, even paused (timeupdate).
    js("document.querySelector('#player audio').currentTime = 8.0")
    jumped = wait("the jump over the second pause", lambda b: (lambda a: a if a[0] >= 9.79 else None)(audio()), 3)
    check(f"a seek into a pause lands at its end (8.0 → {jumped[0]:.2f} s)", abs(jumped[0] - pauses["silences"][1]["end"]) < 0.05, jumped)

    # The whole memo: the time sampled at every frame, the wall time until it ends.
    js("const a = document.querySelector('#player audio'); a.currentTime = 0;")
    wait("back at 0", lambda b: audio()[0] < 0.01)
    began = time.time()
    js("""const a = document.querySelector('#player audio'); window.samples = [];
          const f = () => { samples.push(a.currentTime); if (!a.ended) requestAnimationFrame(f); }; f(); a.play();""")
    wait("the end of the memo", lambda b: audio()[2], 20)
    took = time.time() - began
    samples = js("return window.samples")
    stuck = [t for t in samples for p in pauses["silences"] if p["start"] + 0.1 <= t < p["end"] - 0.02]
    check(f"on, the memo's 17 s play in {took:.1f} s of wall time (9.2 s of sound; 8.2–11 s)", 8.2 <= took <= 11.0, took)
    check(f"on, no frame of {len(samples)} finds the <audio> inside a pause", len(samples) > 100 and not stuck, stuck[:10])
    tones = [(0, 2), (4.8, 7.2), (9.8, 12.2), (14.8, 17)]
    heard = [sum(1 for t in samples if a + 0.1 <= t <= b - 0.1) for a, b in tones]
    check("every tone is heard (frames in each)", all(n > 20 for n in heard), heard)
    shots("47-player-skip-silence", "#player")

    # Kept across a reload.
    close_player()
    browser.refresh()
    wait("the rows", lambda b: b.find_elements(By.CSS_SELECTOR, f"li[data-id='{memo['id']}'] .row-main"))
    open_player(memo["id"])
    said = wait("the saving after a reload", lambda b: saves())
    check("after a reload Skip silence is still on, the saving said", skip_button().get_attribute("aria-pressed") == "true" and said == "saves 7.8 s", said)
    page.check_player_fits("at 320 px the player's row of ⚑ Mark, Skip silence, the saving and the time fits; the sheet ≤ 60% high")

    # 5b. Speed: one button cycling 1× → 1.25× → 1.5× → 2× → 0.75× → 1×, the <audio>'s rate (pitch kept), kept.
    speed_button = lambda: browser.find_element(By.CSS_SELECTOR, "#player [data-action=speed]")
    rate = lambda: js("const a = document.querySelector('#player audio'); return [a.playbackRate, a.preservesPitch]")
    check("Speed is a button “1×” named “Speed 1×”", speed_button().text == "1×" and speed_button().accessible_name == "Speed 1×", speed_button().accessible_name)
    cycle = []
    for _ in range(5):
        speed_button().click()
        cycle.append([speed_button().text, speed_button().get_attribute("aria-label")] + rate())
    check("it cycles 1.25×, 1.5×, 2×, 0.75×, 1×, setting playbackRate with preservesPitch",
          cycle == [[f"{v}×", f"Speed {v}×", float(v), True] for v in ["1.25", "1.5", "2", "0.75", "1"]], cycle)
    speed_button().click(); speed_button().click()
    check("1.5× is remembered", js("return localStorage.getItem('recd-speed')") == "1.5" and rate()[0] == 1.5, rate())
    skip_button().click()   # off: the pauses played, the time only the speed's
    wait("Skip silence off", lambda b: stored() == "0")
    js("const a = document.querySelector('#player audio'); a.currentTime = 0; a.play()")
    wait("playing", lambda b: audio()[0] > 0.2 and not audio()[1], 5)
    t0, w0 = audio()[0], time.time()
    time.sleep(3)
    t1, w1 = audio()[0], time.time()
    ratio = (t1 - t0) / (w1 - w0)
    check(f"at 1.5× currentTime advances {ratio:.2f} s per wall second (1.3–1.7)", 1.3 <= ratio <= 1.7, [t0, t1])
    shown = browser.find_element(By.CSS_SELECTOR, "#player .time").text
    check(f"the position shown is the recording's ({shown})", shown.startswith(f"0:{int(audio()[0]):02d}") or shown.startswith(f"0:{int(audio()[0]) - 1:02d}"), [shown, audio()])
    js("document.querySelector('#player audio').pause()")
    skip_button().click()
    wait("Skip silence on again", lambda b: stored() == "1")
    close_player()
    browser.refresh()
    wait("the rows", lambda b: b.find_elements(By.CSS_SELECTOR, f"li[data-id='{memo['id']}'] .row-main"))
    open_player(memo["id"])
    check("after a reload the speed is still 1.5×, on the <audio> too", speed_button().text == "1.5×" and rate() == [1.5, True], [speed_button().text, rate()])
    size(320)
    wide = js("const c = document.querySelector('#player .controls'); return [c.scrollWidth, c.clientWidth, document.documentElement.scrollWidth, innerWidth]")
    check("at 320 px ⏮ 15s, pause, ⏭ 15s and the speed fit on one row", wide[0] <= wide[1] and wide[2] <= wide[3], wide)
    shots("47-player-speed", "#player")
    size(390)

    # The waveform: its bars 3:1 on white, the position a dark line where the <audio> is.
    js("const a = document.querySelector('#player audio'); a.pause(); a.currentTime = 8.5;")
    wait("paused at 10 s", lambda b: audio()[1] and abs(audio()[0] - pauses["silences"][1]["end"]) < 0.1)
    time.sleep(0.5)
    px = js("""const c = document.querySelector('#player canvas.wave'), g = c.getContext('2d'), r = devicePixelRatio;
        const at = (x, y) => [...g.getImageData(Math.floor(x * r), Math.floor(y * r), 1, 1).data].slice(0, 3);
        const w = c.clientWidth, h = c.clientHeight, a = document.querySelector('#player audio'), x = Math.round(a.currentTime / a.duration * w);
        return [at(x + 0.5, 2), at(x + 1.5, h / 2), at(x - 0.5, h / 2), at(x + 2.5, h / 2), at(w * 15.5 / 17, h / 2), at(w * 1 / 17, h / 2),
                getComputedStyle(c.closest('.sheet')).backgroundColor]""")
    sheet = rgb(px[6])
    line, halo, rest, done = px[0], px[2:4], px[4], px[5]
    check("the position is a dark line across the waveform, edged in white (3:1 beside any bar)",
          px[1] == line and contrast(line, sheet) >= 3 and all(p == sheet for p in halo), px)
    check(f"the waveform's bars have 3:1 on the sheet (not played {rest}, played {done})",
          contrast(rest, sheet) >= 3 and contrast(done, sheet) >= 3 and rest != done, px)
    close_player()

    # 6. On recd's speaker: the play asks recd to skip; a toggle there counts from the next play.
    open_player(memo["id"], speaker=True)
    played = wait("recd's playback", lambda b: (recd("/v1/playback") or {}).get("playback"), 10)
    check("on recd's speaker with Skip silence on, the play asks recd to skip (skipSilence)", played["skipSilence"] is True, played)
    check("on recd's speaker the play goes at the kept speed (GET /v1/playback: speed 1.5)", played.get("speed") == 1.5, played)
    speed_button().click()
    sped = wait("speed 2 at recd", lambda b: (lambda p: p if p and p.get("speed") == 2 else None)((recd("/v1/playback") or {}).get("playback")), 5)
    check("the speed button on recd's speaker sets recd's speed (POST /v1/playback/speed): 2", sped["speed"] == 2, sped)
    speed_button().click(); speed_button().click()   # back to 1× (0.75×, 1×)
    wait("speed 1 at recd", lambda b: ((recd("/v1/playback") or {}).get("playback") or {}).get("speed") == 1, 5)
    skip_button().click()
    check("a toggle during a play on recd's speaker says it counts from the next play", toast_says("from the next play"))
    check("and is kept (off)", skip_button().get_attribute("aria-pressed") == "false" and stored() == "0", stored())
    close_player()
    open_player(memo["id"], speaker=True)
    played = wait("recd's playback again", lambda b: (recd("/v1/playback") or {}).get("playback"), 10)
    check("the next play on recd's speaker plays everything", played["skipSilence"] is False, played)
    close_player()

    # 7. Did you mean: the search field, a typo, the suggestion as a button.
    field = browser.find_element(By.CSS_SELECTOR, "input[type=search]")
    field.click()
    field.send_keys("harbr")
    none = wait("no hits", lambda b: b.find_element(By.CSS_SELECTOR, "[data-no-hits]").text)
    check("“harbr” finds nothing and says “did you mean harbour?”", none == "No recordings say “harbr” — did you mean harbour?", none)
    offer = browser.find_element(By.CSS_SELECTOR, "[data-no-hits] button")
    check("the suggestion is a button named “Search for harbour”", offer.text == "harbour" and offer.accessible_name == "Search for harbour",
          [offer.text, offer.accessible_name])
    shots("47-did-you-mean", "[data-no-hits]")
    press(Keys.TAB)
    check("Tab goes from the field to the suggestion", focused()[0] == "BUTTON" and focused()[1] == "harbour", focused())
    press(Keys.ENTER)
    wait("the hit", lambda b: b.find_elements(By.CSS_SELECTOR, f"ul.hits li[data-id='{memo['id']}']"))
    check("Enter on it searches “harbour”, in the field, and finds Harbour walk, the focus on it",
          field.get_attribute("value") == "harbour" and focused()[2] == memo["id"], [field.get_attribute("value"), focused()])
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys("harbr wlk")
    none = wait("no hits for two typos", lambda b: (lambda t: t if "wlk" in t else None)(b.find_element(By.CSS_SELECTOR, "[data-no-hits]").text))
    check("two words wrong: one suggestion each", none == "No recordings say “harbr wlk” — did you mean harbour, walk?", none)
    names = [b.accessible_name for b in browser.find_elements(By.CSS_SELECTOR, "[data-no-hits] button")]
    check("each names the search it makes", names == ["Search for harbour wlk", "Search for harbr walk"], names)
    browser.find_elements(By.CSS_SELECTOR, "[data-no-hits] button")[1].click()
    wait("harbr walk", lambda b: field.get_attribute("value") == "harbr walk" and "harbr walk" in b.find_element(By.CSS_SELECTOR, "[data-no-hits]").text)
    click("[data-no-hits] button")
    wait("the hit for harbour walk", lambda b: b.find_elements(By.CSS_SELECTOR, f"ul.hits li[data-id='{memo['id']}']"))
    check("taken one after the other, “harbour walk” finds it", field.get_attribute("value") == "harbour walk")
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys("zebra")
    none = wait("no hits for zebra", lambda b: (lambda t: t if "zebra" in t else None)(b.find_element(By.CSS_SELECTOR, "[data-no-hits]").text))
    check("a word with nothing near: no suggestion", none == "No recordings say “zebra”." and not browser.find_elements(By.CSS_SELECTOR, "[data-no-hits] button"), none)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(Keys.BACK_SPACE)
    wait("the library again", lambda b: b.find_elements(By.CSS_SELECTOR, ".tabs"), 5)

    # 8. The input level meter: a value before, while and after recording.
    click("#nav-new")
    click("[data-mode=audio]")
    meter = wait("the meter", lambda b: b.find_element(By.CSS_SELECTOR, "[role=meter]"))
    attrs = lambda: [meter.get_attribute(a) for a in ("aria-valuemin", "aria-valuemax", "aria-valuenow")]
    check("idle, the level meter has aria-valuenow -60 (of -60 to 0)", attrs() == ["-60", "0", "-60"] and meter.accessible_name == "Input level", attrs())
    click("[data-action=record]")
    seen = []
    try:
        wait("a level", lambda b: seen.append(attrs()[2]) or int(seen[-1]) > -20, 10)
    except AssertionError:
        pass
    check(f"recording the tone, aria-valuenow follows the level ({seen[-1]} dBFS)", -20 < int(seen[-1]) <= 0, sorted(set(seen)))
    shots("47-record-meter", "[role=meter]")
    click("[data-action=pause]")
    wait("paused", lambda b: attrs()[2] == "-60", 5)
    check("paused, aria-valuenow is back at -60", attrs()[2] == "-60", attrs())
    click("[data-action=resume]")
    click("[data-action=stop]")
    wait("the preview", lambda b: b.find_elements(By.CSS_SELECTOR, "[data-action=save]"))
    fields = js("""return [...document.querySelectorAll('form.meta input, form.meta textarea')].map((f) => {
        const s = getComputedStyle(f); return [s.borderTopColor, s.backgroundColor]; })""")
    check("the preview's title and notes fields have borders of 3:1", len(fields) == 2 and all(contrast(rgb(b), rgb(g)) >= 3 for b, g in fields), fields)
