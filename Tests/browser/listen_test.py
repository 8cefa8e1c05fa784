#!/usr/bin/python3
"""Issue 49's Listen mode in the web app, in a real browser (Debian's chromium + chromedriver, selenium)
against the real recd, on a private PulseAudio server whose microphone hears silence until the test
speaks into it (espeak-ng), through the real `recctl ui`; recd's level gate decides speech (its
transcriber is absent):

- off: no indicator in the header; the mode choice leads to Listen, which says listening is off, with
  named settings whose limits are the API's (silence 0.3–60 s, pre-roll 0–10, min 0–60, max 5–14400);
  a value out of them is said (and focused), and nothing is armed;
- START LISTENING arms recd with the settings chosen; the screen says listening, the level gate and
  its note; the header's indicator shows on every screen (the library, the Data page) while armed:
  its words at 1280 px, a red dot named by them at phone width, where the header keeps the height it
  has unarmed (320 and 390 px: the Listen screen, the library, the Data page; issue 49);
- speech into the microphone: the level bar rises, the state says "Hearing speech", then the thing said
  shows in the list as a saved recording (recd's too), and plays in the player from there;
- RECORD pressed while a thing said is being recorded (recd refuses it): back to Listen, saying why;
- speech during a recording made by hand: "Listening paused" in the header until it ends;
- armed and disarmed by another client: the page follows without a reload;
- STOP LISTENING disarms (recd says off, by request); the indicator goes;
- every control named, nothing wider than 320 and 1280 px, and axe-core (when installed, as
  axe_test.py finds it) finds no critical or serious violation on the screen, off and armed.

Usage: listen_test.py RECD RECCTL [SHOTS_DIR]
Ends with the plain line "N passed, M failed"; exit status 0 only when nothing failed.
"""
import json, os, subprocess, time

from harness import setup
from selenium.webdriver.common.by import By

h = setup("recd-listen-ui-")
work, env, sock, check, start, recd_get = h.work, h.env, h.sock, h.check, h.start, h.client.get


def recd_call(method, path, body=None):
    """recd's own answer (curl on its socket), as JSON."""
    args = ["curl", "-s", "-X", method, "--unix-socket", sock, "http://recd" + path]
    if body is not None:
        args += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
    return json.loads(subprocess.run(args, capture_output=True, text=True, timeout=20).stdout or "null")


def speech(text, name):
    """`text` spoken by espeak-ng, loud, as a 48 kHz mono WAV."""
    raw, wav = os.path.join(work, name + "-raw.wav"), os.path.join(work, name + ".wav")
    subprocess.run(["espeak-ng", "-w", raw, text], check=True, capture_output=True)
    subprocess.run(["sox", raw, "-r", "48000", "-c", "1", "-b", "16", wav, "norm", "-3"], check=True)
    return wav


def say(wav):
    """Plays `wav` into the microphone; returns once it has been played."""
    subprocess.run(["paplay", "--latency-msec=10", "-d", "mic", wav], env=env, check=True, timeout=60)


# The microphone hears silence until `say` plays into it too; with no transcriber, recd's level gate
# decides speech (and says why).
with h.app("--transcriber", os.path.join(work, "no-transcriber"), microphone=("trim", "0", "300")) as page:
    phrase = speech("The boat leaves the harbour at seven tomorrow morning.", "phrase")
    browser, wait, js, size, click, axe = page.browser, page.wait, page.js, page.size, page.click, page.check_axe
    el = lambda css: browser.find_element(By.CSS_SELECTOR, css)
    shown = lambda css: [e for e in browser.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()]
    state_line = lambda: el("section.record .listen-state").text.strip()
    indicator = lambda: (shown("#nav-listen") or [None])[0]
    named = lambda: (indicator().accessible_name or "").strip() if indicator() else None
    heights = {}

    def header(screen, armed):
        """The header's height on `screen` at 320 and 390 px, kept; armed, checked against unarmed."""
        for width in page.widths([(320, 640), (390, 640)]):
            heights[(screen, width, armed)] = js("return document.querySelector('header.bar').offsetHeight")
            if armed:
                check(f"{screen} at {width} px: the header armed is as high as unarmed (the indicator fits its row)",
                      heights[(screen, width, True)] == heights[(screen, width, False)],
                      [heights[(screen, width, False)], heights[(screen, width, True)], indicator() and indicator().rect])

    def press(css):
        """Clicks `css` once shown, scrolled to the middle (not under the sticky header)."""
        b = wait(css, lambda b: shown(css))[0]
        js("arguments[0].scrollIntoView({block: 'center'})", b)
        b.click()

    def unnamed(scope):
        """The controls in `scope` that are shown and that Chromium gives no accessible name."""
        els = browser.find_elements(By.CSS_SELECTOR, f"{scope} button, {scope} input, {scope} select, {scope} [role=meter], {scope} a")
        return [e.get_attribute("outerHTML")[:120] for e in els if e.is_displayed() and not (e.accessible_name or "").strip()]

    def fits(name):
        """At 320 and 1280 px: nothing wider than the page, every control named; screenshots then."""
        for width in page.widths([(320, 640), (1280, 860)], f"listen-{name.replace(' ', '-')}"):
            page.check_fits(f"{name} at {width} px")
            check(f"{name} at {width} px: every control named", not unnamed("body"), unnamed("body"))

    check("off: no listening indicator in the header", indicator() is None)
    header("the library", False)
    click("#nav-data")
    wait("the Data page", lambda b: js("return document.title") == "Data — recd")
    header("the Data page", False)
    press("#view > button.quiet")

    # 1. Off: reached from the mode choice, said off, the settings and their limits.
    click("#nav-new")
    listen_button = wait("the mode choice's Listen", lambda b: shown("dialog[open] [data-mode=listen]"))[0]
    check("the mode choice offers Listen beside Record video and Record audio",
          "LISTEN" in listen_button.text and len(shown("dialog[open] [data-mode]")) == 3, listen_button.text)
    listen_button.click()
    wait("the Listen screen", lambda b: shown("[data-action=listen-start]"))
    check("the screen is Listen (header and tab)", el("#title").text == "Listen" and js("return document.title") == "Listen — recd",
          [el("#title").text, js("return document.title")])
    check("it says listening is off", state_line() == "Listening is off", state_line())
    limits = js("""return Object.fromEntries(['silence', 'preRoll', 'min', 'max'].map((n) => {
        const i = document.querySelector(`.listen-set [name=${n}]`); return [n, [+i.min, +i.max, +i.value, i.labels[0]?.textContent]]; }))""")
    check("the settings have the API's limits and defaults (silence 0.3–60 s, pre-roll 0–10, min 0–60, max 5–14400)",
          [limits[n][:3] for n in ("silence", "preRoll", "min", "max")] == [[0.3, 60, 2], [0, 10, 1], [0, 60, 1], [5, 14400, 600]], limits)
    check("each setting's label says its limits", "0.3–60 s" in limits["silence"][3] and "0–10 s" in limits["preRoll"][3], limits)
    check("the level bar is a meter at rest", el(".record .meter").get_attribute("aria-valuenow") == "-60")
    axe("the Listen screen, off")
    fits("off")
    header("the Listen screen", False)

    field = el(".listen-set [name=silence]")
    field.clear(); field.send_keys("0.1")
    press("[data-action=listen-start]")
    banner = wait("the error", lambda b: shown("section.record .banner"))[0]
    check("a silence out of its limits is said, and focused; nothing armed",
          "0.3 to 60" in banner.text and js("return document.activeElement.name") == "silence" and recd_get("/v1/listen")["state"] == "off",
          [banner.text, js("return document.activeElement.name")])
    field.clear(); field.send_keys("1")
    for name, value in [("preRoll", "0.5"), ("min", "0.3")]:
        f = el(f".listen-set [name={name}]"); f.clear(); f.send_keys(value)
    js("const s = document.querySelector('.listen-set [name=purpose]'); s.value = 'reflection';")

    # 2. Armed from the page: recd has the settings; the screen and the header say so.
    press("[data-action=listen-start]")
    wait("armed", lambda b: shown("[data-action=listen-stop]"))
    status = recd_get("/v1/listen")
    check("START LISTENING arms recd with the settings chosen",
          status["armed"] and status["settings"]["silence"] == 1 and status["settings"]["preRoll"] == 0.5
          and status["settings"]["min"] == 0.3 and status["settings"]["purpose"] == "reflection", status)
    wait("the state listening", lambda b: state_line() == "Listening: waiting for speech")
    check("the screen says it is listening, with the level gate and its note",
          "level gate" in el("section.record .hint").text and shown("[data-detector-note]")
          and "not only speech" in el("[data-detector-note]").text, page.text())
    check("the header shows “Listening” (its name; its title recd's state)", named() == "Listening"
          and indicator().get_attribute("title") == "Listening: waiting for speech"
          and indicator().get_attribute("aria-current") == "page", indicator() and indicator().get_attribute("outerHTML"))
    size(1280)
    check("at 1280 px the indicator says “Listening” in words", indicator().text.strip() == "Listening", indicator().text)
    size(320)
    check("at 320 px it is a red dot (44 px), still named “Listening”", indicator().text.strip() == "" and named() == "Listening"
          and indicator().rect["width"] == 44 and indicator().rect["height"] >= 44, [indicator().text, indicator().rect])
    size(390)
    header("the Listen screen", True)
    check("the settings in force are shown, and locked while armed",
          el(".listen-set [name=silence]").get_attribute("value") in ("1", "1.0") and not el(".listen-set [name=silence]").is_enabled())
    axe("the Listen screen, armed")

    # 3. Speech: the level, "Hearing speech", then the recording in the list.
    peaks = []
    js("""window.peaks = []; const m = document.querySelector('.record .meter');
          new MutationObserver(() => window.peaks.push(+m.getAttribute('aria-valuenow'))).observe(m, { attributes: true });
          window.states = []; const l = document.querySelector('.listen-state');
          new MutationObserver(() => window.states.push(l.textContent.trim())).observe(l, { childList: true, characterData: true, subtree: true });""")
    say(phrase)
    wait("a kept recording in the list", lambda b: shown("section.record ul.rows li[data-id]"), 30)
    peaks, states = js("return window.peaks"), js("return window.states")
    check("the level bar rose with the speech (above -30 dBFS)", peaks and max(peaks) > -30, peaks[-20:])
    check("the state said “Hearing speech”, then listening again",
          any(s.startswith("Hearing speech") for s in states) and state_line() == "Listening: waiting for speech", states)
    rows = shown("section.record ul.rows li[data-id]")
    rid = rows[0].get_attribute("data-id")
    rec = recd_get(f"/v1/recordings/{rid}")
    check("one recording in the list: recd's, saved, of the reflection purpose",
          len(rows) == 1 and rec.get("state") == "ready" and rec.get("purpose") == "reflection", rec)
    check("its row says its title and length", rec.get("title", "?") in rows[0].text, rows[0].text)
    check("the screen counts it", "1 kept" in el("section.record .hint").text, el("section.record .hint").text)
    fits("armed")
    press("section.record ul.rows li[data-id] .row-main")
    wait("the player", lambda b: shown("#player [data-action=close]"))
    check("a row plays its recording in the player", rec["title"] in el("#player .head").text, el("#player .head").text)
    click("#player [data-action=close]")

    # 4. RECORD while a thing said is being recorded: recd refuses it (409); the page shows Listen, and why.
    click("#nav-new")
    click("dialog[open] [data-mode=audio]")
    wait("the record screen", lambda b: shown("[data-action=record]"))
    speaking = start(["paplay", "--latency-msec=10", "-d", "mic", phrase])
    wait("“Hearing speech” in the header", lambda b: named() == "Hearing speech")
    press("[data-action=record]")
    wait("the Listen screen", lambda b: shown("[data-action=listen-stop]"))
    check("RECORD while listening records a thing said: the Listen screen, and a toast saying why",
          "Listening is recording" in el("#toast").text and not shown("[data-action=stop]"), el("#toast").text)
    speaking.wait(30)
    wait("the second recording in the list", lambda b: len(shown("section.record ul.rows li[data-id]")) == 2, 30)
    check("the second thing said is listed too", True)

    # 5. The indicator on other screens.
    press("section.record button.quiet")
    wait("the library", lambda b: shown(f"li[data-id='{rid}']"))
    check("the library: the indicator, and the recording among the others", named() == "Listening")
    header("the library", True)
    click("#nav-data")
    wait("the Data page", lambda b: js("return document.title") == "Data — recd")
    check("the Data page: the indicator", indicator() is not None)
    header("the Data page", True)

    # 6. Speech during a recording made by hand: that recording holds it; listening says it is paused.
    recd_call("POST", "/v1/record/start", {"type": "audio"})
    say(phrase)
    wait("“Listening paused”", lambda b: named() == "Listening paused")
    check("a recording made by hand: the header says “Listening paused”", True)
    kept = recd_call("POST", "/v1/record/stop", {"then": "save"})["recording"]
    wait("listening again", lambda b: named() == "Listening")
    check("when it ends, “Listening” again", True)
    indicator().click()
    wait("the Listen screen's list", lambda b: len(shown("section.record ul.rows li[data-id]")) >= 2, 15)
    time.sleep(1)
    check("the recording made by hand (saved) is not among the things said: source “record”, not “listen”",
          kept["source"] == "record" and len(shown("section.record ul.rows li[data-id]")) == 2
          and not shown(f"section.record li[data-id='{kept['id']}']"), kept)
    click("#nav-data")
    wait("the Data page", lambda b: js("return document.title") == "Data — recd")

    # 7. Disarmed and armed by another client: followed without a reload.
    recd_call("DELETE", "/v1/listen")
    wait("the indicator gone", lambda b: indicator() is None)
    check("disarmed elsewhere: the indicator goes", True)
    recd_call("POST", "/v1/listen", {"silence": 2})
    wait("the indicator back", lambda b: indicator() is not None)
    check("armed elsewhere: the indicator shows", True)
    indicator().click()
    wait("the Listen screen", lambda b: shown("[data-action=listen-stop]"))
    check("the indicator leads to Listen, armed with the other client's settings, its list this session's (none yet)",
          el(".listen-set [name=silence]").get_attribute("value") == "2" and not shown(f"section.record li[data-id='{rid}']")
          and "Nothing yet" in el("section.record ul.rows").text)

    # 8. Stopped here.
    press("[data-action=listen-stop]")
    wait("off", lambda b: shown("[data-action=listen-start]") and state_line() == "Listening is off")
    status = recd_get("/v1/listen")
    check("STOP LISTENING disarms recd (by request)", status["state"] == "off" and status["lastStop"]["reason"] == "requested", status)
    check("the indicator goes; the settings can be changed again",
          indicator() is None and el(".listen-set [name=silence]").is_enabled())
