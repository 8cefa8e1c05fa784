#!/usr/bin/python3
"""axe-core on every screen of the web app (issue 47), in a real browser (Debian's chromium +
chromedriver, selenium) against the real recd, on a private PulseAudio server, through the real
`recctl ui`. axe-core's axe.min.js comes from PyPI (the axe-playwright-python wheel, pinned with its
hash by scripts/install-deps.sh --test into <repo>/.build/axe-venv); selenium injects it.

Each screen is checked with axe's default rules (WCAG 2.0–2.2 A and AA, and best practices), and
fails on any violation of impact critical or serious; moderate and minor ones are printed. First,
a button without a name put in the page on purpose must be found (the check can fail).

Screens: the empty library; the library (Quick Play, the order, rows); search's hits and its "did you
mean"; the player (a marker, Skip silence on, its saving); the mode choice; the record screen, idle
and recording; the take's preview (save); the edit dialog; the Data page; the Delete All Data dialog.

Usage: axe_test.py RECD RECCTL [SHOTS_DIR]
Ends with the plain line "N passed, M failed"; exit status 0 only when nothing failed.
"""
import os, subprocess, time

from harness import AXE, setup
from selenium.webdriver.common.by import By

h = setup("recd-axe-")
work, check, client = h.work, h.check, h.client
recctl = client.recctl


def imported(title, seconds, pause=0):
    """A tone of `seconds`, then `pause` s of silence and the tone again when asked, imported as `title`."""
    tone = os.path.join(work, f"axe-{title[:4]}.wav")
    effects = ["synth", str(seconds), "sine", "440", "vol", "0.5"] + (["pad", "0", str(pause), "repeat", "1"] if pause else [])
    subprocess.run(["sox", "-n", "-r", "48000", "-c", "1", "-b", "16", tone, *effects], check=True)
    return client.imported(tone, title)


with h.app() as page:
    if not AXE:
        raise RuntimeError("axe-core is not installed in .build/axe-venv: scripts/install-deps.sh --test")
    browser, wait, js, size, click, screen = page.browser, page.wait, page.js, page.size, page.click, page.check_axe

    # The check can fail: a nameless button made on purpose is found (critical), then removed.
    js("const b = document.createElement('button'); b.id = 'axe-bait'; document.body.append(b);")
    bait = page.axe()
    version = js("return axe.version")
    check(f"axe-core {version} runs in the page and finds a button without a name",
          any(v[0] == "button-name" and v[1] == "critical" and "#axe-bait" in " ".join(v[3]) for v in bait), bait)
    js("document.getElementById('axe-bait').remove()")
    screen("the empty library")

    memo = imported("Harbour walk", 2, 3)
    imported("Quiet tone", 3)
    wait("two rows", lambda b: len(b.find_elements(By.CSS_SELECTOR, "ul.rows li[data-id]")) == 2)
    screen("the library (Quick Play, Recent)")
    click(".tabs button:not([aria-pressed=true])")
    wait("Most Played", lambda b: "Most Played" in b.find_element(By.CSS_SELECTOR, ".tabs [aria-pressed=true]").text)
    screen("the library (Most Played)")

    field = browser.find_element(By.CSS_SELECTOR, "input[type=search]")
    field.click()
    field.send_keys("harbr")
    wait("did you mean", lambda b: b.find_elements(By.CSS_SELECTOR, "[data-no-hits] button"))
    screen("search: did you mean")
    click("[data-no-hits] button")
    wait("the hit", lambda b: b.find_elements(By.CSS_SELECTOR, "ul.hits li"))
    screen("search: its hits")
    js("arguments[0].value = ''; arguments[0].dispatchEvent(new Event('input'))", field)
    wait("the library again", lambda b: b.find_elements(By.CSS_SELECTOR, ".tabs"))

    click(f"li[data-id='{memo['id']}'] .row-main")
    wait("the player", lambda b: b.find_elements(By.CSS_SELECTOR, "#player canvas.wave[data-drawn]"))
    click("#player [data-action=pause]")
    recctl("mark", memo["id"], "The plan", "--at", "1")
    wait("the marker", lambda b: b.find_elements(By.CSS_SELECTOR, "#player .markers li"), 10)
    click("#player [data-action=skip-silence]")
    wait("the saving", lambda b: b.find_element(By.CSS_SELECTOR, "#player [data-saves]").text)
    screen("the player (a marker, Skip silence on)")
    click("#player [data-action=close]")

    click("#nav-new")
    wait("the mode choice", lambda b: b.find_elements(By.CSS_SELECTOR, "dialog[open] [data-mode]"))
    screen("the mode choice dialog")
    click("[data-mode=audio]")
    wait("the record screen", lambda b: b.find_elements(By.CSS_SELECTOR, "[data-action=record]"))
    screen("the record screen, idle")
    click("[data-action=record]")
    wait("a level", lambda b: float(b.find_element(By.CSS_SELECTOR, ".meter").get_attribute("data-peak") or "-160") > -30, 10)
    time.sleep(1.5)
    screen("the record screen, recording")
    click("[data-action=stop]")
    wait("the preview", lambda b: b.find_elements(By.CSS_SELECTOR, "[data-action=save]"))
    screen("the take's preview (save)")
    click("[data-action=save]")
    wait("the library", lambda b: len(b.find_elements(By.CSS_SELECTOR, "ul.rows li[data-id]")) == 3)

    click(f"li[data-id='{memo['id']}'] [data-action=edit]")
    wait("the edit dialog", lambda b: b.find_elements(By.CSS_SELECTOR, "dialog[open] [data-action=save-changes]"))
    screen("the edit dialog")
    click("dialog[open] button[aria-label=Close]")

    click("#nav-data")
    wait("the Data page", lambda b: b.find_elements(By.CSS_SELECTOR, "[data-action=delete-all]") and
         not b.find_element(By.CSS_SELECTOR, "[data-backup=off]").get_attribute("hidden"))
    screen("the Data page")
    click("[data-action=delete-all]")
    wait("the confirmation", lambda b: "Delete All Data?" in b.find_element(By.CSS_SELECTOR, "dialog[open]").text)
    screen("the Delete All Data dialog")
    size(1280, 860)
    screen("the Delete All Data dialog at 1280 px")
