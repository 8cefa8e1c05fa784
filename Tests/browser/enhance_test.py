#!/usr/bin/python3
"""Issue 47's Enhance in the web app, in a real browser (Debian's chromium + chromedriver, selenium)
against the real recd, on a private PulseAudio server, through the real `recctl ui`:

- a short noisy memo (espeak-ng speech after 0.5 s of silence, pink noise under it, made with sox)
  imported and opened in the player: ✨ in its head is a button named "Enhance" (recd has no copy
  yet), and no row is added under the controls; pressed, it is named "Enhancing…" (aria-disabled,
  aria-busy) while recd makes the copy, then goes, and the A/B pair "Original | Enhanced" (toggle
  buttons, aria-pressed, in a named group) shows under the controls with the loudness change
  ("−NN → −16 LUFS"), and recd has the copy;
- Enhanced swaps the <audio>'s src to the copy's media, at the same time (±0.5 s), still playing, at
  the same speed; Original swaps back; Space on a focused A/B button works too; switching counts no
  play (the play is counted once, when the player is closed);
- ⬇✨ beside ⬇ downloads "<title> (enhanced).m4a" (recd's Content-Disposition);
- 🗑️ asks first (the focus on Cancel; Cancel keeps the copy), then removes it: the player is back on
  the original at the same time, ✨ Enhance is offered again (focused), and `GET /v1/recordings/{id}/enhanced`
  says `copy: null`;
- recd's refusal (the copy made for a recording deleted meanwhile) is said in a toast, in its words;
- every control named, nothing wider than the page at 320 and 1280 px (screenshots), and axe-core
  (when installed, as axe_test.py finds it) finds no critical or serious violation.

Usage: enhance_test.py RECD RECCTL [SHOTS_DIR]
Ends with the plain line "N passed, M failed"; exit status 0 only when nothing failed.
"""
import json, os, subprocess, time

from harness import setup
from selenium.webdriver.common.by import By

h = setup("recd-enhance-ui-")
work, sock, check, client = h.work, h.sock, h.check, h.client
recd_get = client.get


def noisy_speech(title):
    """espeak-ng's words after 0.5 s of silence, pink noise under all of it, imported into recd."""
    raw, voice, noise, wav = (os.path.join(work, n + ".wav") for n in ("raw", "voice", "noise", "noisy"))
    subprocess.run(["espeak-ng", "-w", raw, "The harbour was quiet this morning, and the boats stayed in until noon. "
                    "We walked along the shore and counted the gulls. " * 3], check=True, capture_output=True)
    subprocess.run(["sox", raw, "-r", "48000", "-c", "1", "-b", "16", voice, "pad", "0.5", "0", "vol", "0.3"], check=True)
    length = subprocess.run(["soxi", "-D", voice], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["sox", "-n", "-r", "48000", "-c", "1", "-b", "16", noise, "synth", length, "pinknoise", "vol", "0.05"], check=True)
    subprocess.run(["sox", "-m", voice, noise, wav], check=True)
    return client.imported(wav, title)


with h.app() as page:
    rec = noisy_speech("Harbour memo")
    rid = rec["id"]
    browser, downloads, wait, js, size, click = page.browser, page.downloads, page.wait, page.js, page.size, page.click
    toast_says, axe = page.toast_says, page.check_axe
    el = lambda css: browser.find_element(By.CSS_SELECTOR, css)
    shown = lambda css: [e for e in browser.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()]
    audio = lambda: js("const a = document.querySelector('#player audio'); return a && [a.currentTime, a.paused, a.getAttribute('src'), a.playbackRate]")
    pressed = lambda: [b.get_attribute("aria-pressed") for b in browser.find_elements(By.CSS_SELECTOR, "#player [data-enhance] .tabs button")]

    def unnamed(scope):
        """The controls in `scope` that are shown and that Chromium gives no accessible name."""
        els = browser.find_elements(By.CSS_SELECTOR, f"{scope} button, {scope} input, {scope} a, {scope} [role=slider]")
        return [e.get_attribute("outerHTML")[:120] for e in els if e.is_displayed() and not (e.accessible_name or "").strip()]

    def fits(name):
        """At 320 and 1280 px: nothing wider than the page, every control named; screenshots then."""
        for width in page.widths([(320, 844), (1280, 860)], f"enhance-{name.replace(' ', '-')}"):
            page.check_fits(f"{name} at {width} px")
            check(f"{name} at {width} px: every control named", not unnamed("#player"), unnamed("#player"))
            high = js("return [Math.round(document.getElementById('player').getBoundingClientRect().height), innerHeight]")
            check(f"{name} at {width} px: the sheet ≤ 60% high", high[0] <= 0.6 * high[1], high)

    wait("the row", lambda b: shown(f"li[data-id='{rid}'] .row-main"))
    check("recd has no enhanced copy yet", recd_get(f"/v1/recordings/{rid}/enhanced")["copy"] is None)
    click(f"li[data-id='{rid}'] .row-main")
    wait("the player playing", lambda b: (audio() or [0, True])[0] > 0.3)
    make = wait("Enhance", lambda b: shown("#player [data-action=enhance]"))[0]
    check("with no copy, ✨ in the player's head is a button named Enhance; no A/B row, no second download",
          make.accessible_name == "Enhance" and shown("#player .head [data-action=enhance]") and not shown("#player [data-enhance]")
          and not shown("#player [data-action=download-enhanced]"), [make.accessible_name, page.text()])
    axe("the player with Enhance")
    fits("before")

    # 1. Enhance: busy while recd makes it, then the A/B pair (the focus on Enhanced).
    js("""window.busy = []; const b = document.querySelector('#player [data-action=enhance]');
          new MutationObserver(() => window.busy.push([b.getAttribute('aria-label'), b.getAttribute('aria-disabled'), b.getAttribute('aria-busy')]))
            .observe(b, { attributes: true, childList: true, characterData: true, subtree: true });""")
    click("#player [data-action=enhance]")
    wait("the A/B pair", lambda b: shown("#player [data-enhance] .tabs button"), 60)
    busy = js("return window.busy")
    check("while recd makes it the button is named “Enhancing…”, aria-disabled and aria-busy",
          ["Enhancing…", "true", "true"] in busy, busy)
    copy = recd_get(f"/v1/recordings/{rid}/enhanced")["copy"]
    check("recd has the copy, levelled to about -16 LUFS (within 2.5 LU: one pass leaves it a little under)", copy and abs(copy["loudness"] + 16) < 2.5, copy)
    group = el("#player [data-enhance] .tabs")
    ab = shown("#player [data-enhance] .tabs button")
    check("the A/B pair: Original (pressed) and Enhanced, toggle buttons in a named group",
          [b.text for b in ab] == ["Original", "Enhanced"] and pressed() == ["true", "false"]
          and group.get_attribute("role") == "group" and group.accessible_name, [[b.text for b in ab], pressed(), group.accessible_name])
    check("Enhance has gone; the focus is on Enhanced", not shown("#player [data-action=enhance]")
          and js("return document.activeElement.dataset.action") == "enhanced", js("return document.activeElement.outerHTML"))
    level = el("#player [data-enhance] .hint").text
    want = f"{round(copy['originalLoudness'])} → {round(copy['loudness'])} LUFS".replace("-", "−")
    check("the loudness change is said (−NN → −16 LUFS)", level == want, [level, want])
    check("“Enhanced copy made ✓” in a toast", toast_says("Enhanced copy made"))

    # 2. A/B: the src swapped, the time, playing state and speed kept; no play counted.
    js("const a = document.querySelector('#player audio'); a.playbackRate = a.defaultPlaybackRate = 1.25; a.currentTime = 2; a.play()")
    wait("playing past 2.2 s", lambda b: audio()[0] > 2.2 and not audio()[1])
    before, since = audio(), time.monotonic()
    click("#player [data-action=enhanced]")
    wait("the enhanced media", lambda b: "/enhanced/media" in (audio()[2] or ""))
    time.sleep(0.3)
    after, played = audio(), (time.monotonic() - since) * 1.25
    check("Enhanced: the <audio> plays the copy's media (/enhanced/media)", f"v1/recordings/{rid}/enhanced/media" in after[2], after)
    # On from where it was, no further than it could have played meanwhile at 1.25× (a loaded CI
    # machine took 0.56 s to switch: 0.7 s on), never back.
    check("…at the same time (±0.5 s, and what it played meanwhile), still playing, at the same speed",
          -0.5 < after[0] - before[0] < played + 0.5 and not after[1] and after[3] == 1.25, [before, after, played])
    check("Enhanced is pressed", pressed() == ["false", "true"], pressed())
    wait("it plays on", lambda b: audio()[0] > after[0] + 0.3 and not audio()[1])
    check("the copy plays on from there", True)
    before, since = audio(), time.monotonic()
    el("#player [data-action=original]").send_keys(" ")
    wait("the original media", lambda b: "/enhanced/" not in (audio()[2] or "") and f"recordings/{rid}/media" in audio()[2])
    time.sleep(0.3)
    after, played = audio(), (time.monotonic() - since) * 1.25
    check("Original (Space on it): the recording's own media, at the same time, still playing",
          -0.5 < after[0] - before[0] < played + 0.5 and not after[1] and pressed() == ["true", "false"], [before, after, played, pressed()])
    click("#player [data-action=enhanced]")
    wait("the enhanced media again", lambda b: "/enhanced/media" in (audio()[2] or ""))
    check("no play counted by switching", recd_get(f"/v1/recordings/{rid}")["playCount"] == 0)
    axe("the player with the A/B pair")
    fits("A-B")

    # 3. The copy's download beside the recording's.
    link = el("#player [data-action=download-enhanced]")
    head_links = [e.get_attribute("data-action") for e in browser.find_elements(By.CSS_SELECTOR, "#player .head a")]
    check("⬇✨ follows ⬇ in the player's head, named", head_links[:2] == ["download", "download-enhanced"]
          and "enhanced" in link.accessible_name.lower(), [head_links, link.accessible_name])
    check("its address is the copy's media, as a download",
          link.get_attribute("href").split("/v1/", 1)[-1].startswith(f"recordings/{rid}/enhanced/media?") and link.get_attribute("href").endswith("&download=true"),
          link.get_attribute("href"))
    link.click()
    wanted = os.path.join(downloads, "Harbour memo (enhanced).m4a")
    try:
        page.wait("the download", lambda b: os.path.exists(wanted) and os.path.getsize(wanted) == copy["sizeBytes"], 20)
        check("it downloads “Harbour memo (enhanced).m4a”, the copy's bytes", True)
    except AssertionError:
        check("it downloads “Harbour memo (enhanced).m4a”, the copy's bytes", False, os.listdir(downloads))

    # 4. Remove: asked first (Cancel focused, keeps it), then gone; back on the original at the same time.
    js("const a = document.querySelector('#player audio'); a.currentTime = 2; a.play()")
    click("#player [data-action=unenhance]")
    wait("the confirmation", lambda b: shown("dialog[open] [data-cancel]"))
    check("removing asks first, the focus on Cancel", js("return document.activeElement.hasAttribute('data-cancel')")
          and "enhanced copy" in el("dialog[open]").text.lower(), [js("return document.activeElement.outerHTML"), el("dialog[open]").text])
    click("dialog[open] [data-cancel]")
    wait("the dialog closed", lambda b: not shown("dialog[open]"))
    check("Cancel keeps the copy", recd_get(f"/v1/recordings/{rid}/enhanced")["copy"] is not None and shown("#player [data-enhance] .tabs"))
    before, since = audio(), time.monotonic()
    click("#player [data-action=unenhance]")
    click("dialog[open] [data-confirm]")
    wait("Enhance again", lambda b: shown("#player [data-action=enhance]"))
    after, played = audio(), (time.monotonic() - since) * 1.25
    # The time it played meanwhile is the dialog's and recd's removal: 1.25 s on a loaded CI machine.
    check("removed: the original plays on at the same time; Enhance is offered again, no A/B, no ⬇✨",
          "/enhanced/" not in after[2] and -0.5 < after[0] - before[0] < played + 0.5 and not after[1]
          and not shown("#player [data-enhance] .tabs") and not shown("#player [data-action=download-enhanced]"), [before, after, played])
    check("recd says it has no copy (GET …/enhanced: copy null)", recd_get(f"/v1/recordings/{rid}/enhanced")["copy"] is None)
    check("“Enhanced copy removed” in a toast; the focus on Enhance", toast_says("Enhanced copy removed")
          and js("return document.activeElement.dataset.action") == "enhance" and el("#player [data-action=enhance]").accessible_name == "Enhance")

    # 5. The play counted once, at closing.
    click("#player [data-action=close]")
    page.wait("the play counted", lambda b: recd_get(f"/v1/recordings/{rid}")["playCount"] == 1, 10)
    time.sleep(0.5)
    check("one play counted, whatever was switched", recd_get(f"/v1/recordings/{rid}")["playCount"] == 1)

    # 6. recd's refusal in its words: the recording gone meanwhile.
    other = noisy_speech("Doomed memo")
    page.wait("its row", lambda b: shown(f"li[data-id='{other['id']}'] .row-main"))
    click(f"li[data-id='{other['id']}'] .row-main")
    wait("Enhance", lambda b: shown("#player [data-action=enhance]"))
    subprocess.run(["curl", "-s", "-X", "DELETE", "--unix-socket", sock, f"http://recd/v1/recordings/{other['id']}"], capture_output=True, check=True)
    refusal = json.loads(subprocess.run(["curl", "-s", "-X", "POST", "--unix-socket", sock, f"http://recd/v1/recordings/{other['id']}/enhanced"],
                                        capture_output=True, text=True).stdout)["error"]["message"]
    click("#player [data-action=enhance]")
    said = toast_says(refusal, 15) and el("#toast").text
    check("recd's refusal is said in a toast in its words, and Enhance stays", said and shown("#player [data-action=enhance]")
          and el("#player [data-action=enhance]").accessible_name == "Enhance"
          and el("#player [data-action=enhance]").get_attribute("aria-busy") == "false", [refusal, said])
