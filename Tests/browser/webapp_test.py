#!/usr/bin/python3
"""recd's web app in a real browser (Debian's chromium + chromedriver, driven by selenium), against the
real recd on a private PulseAudio server, reached through the real `recctl ui` bridge.

Usage: webapp_test.py RECD RECCTL [SHOTS_DIR]
Ends with the plain line "N passed, M failed"; exit status 0 only when nothing failed.
"""
import os, signal, subprocess, time, urllib.parse, urllib.request, urllib.error

from harness import setup
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

h = setup("recd-webapp-")
RECCTL, env, data, sock, check = h.recctl_path, h.env, h.data, h.sock, h.check
recctl_json, recd_get = h.client.recctl_json, h.client.get


def http(url, headers=None, method="GET"):
    req = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


# Loaded by the test itself: the gate is checked first.
with h.app(load=False) as page:
    recd, browser, downloads, url = h.recd, page.browser, page.downloads, page.url
    wait, text, shot, click = page.wait, page.text, page.shot, page.click

    def stop_recd(p):
        p.send_signal(signal.SIGTERM)
        p.wait(10)

    check("recctl ui prints the address first", url.startswith("http://127.0.0.1:") and "/ui-" in url and "/?token=" in url, url)
    base = page.base   # http://127.0.0.1:PORT/ui-SECRET: the app and its cookie live under it
    port = base.split("/")[2].rsplit(":", 1)[1]
    cookie_name = f"recd_ui_{port}"

    # The gate, before the browser has been anywhere.
    check("no token or cookie: 401", http(base + "/")[0] == 401)
    check("another Host (DNS rebinding): refused", http(url, {"Host": f"evil.example:{port}"})[0] == 403)
    check("localhost (which may be [::1], not listened on) is not a Host it answers", http(url, {"Host": f"localhost:{port}"})[0] == 403)
    check("outside its secret path there is nothing", http(f"http://127.0.0.1:{port}/")[0] == 404)
    other = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "curl", "-s", "-o", "/dev/null",
                            "-w", "%{http_code}", base + "/v1/recordings"], capture_output=True, text=True)
    check("another local user without the token gets nothing", other.stdout == "401", other.stdout + other.stderr)

    def click_first(pick):
        """Clicks what `pick` finds, again if the page re-rendered it in between (the library redraws
        itself when `library.changed` arrives): a stale element is looked up anew."""
        def attempt(b):
            el = pick(b)
            if el is None:
                return None
            el.click()
            return el
        return wait("a clickable element", attempt)

    def click_text(tag, label):
        return click_first(lambda b: next((e for e in b.find_elements(By.TAG_NAME, tag) if label in e.text and e.is_displayed()), None))

    def page_title():
        return browser.execute_script("return document.title")

    def titled(name):
        """Whether the tab's title becomes `name` (the screen is drawn after the click that asked for it)."""
        try:
            return wait("the tab's title", lambda b: page_title() == name, 3)
        except AssertionError:
            return False

    def focused_in_row(action="main"):
        """The recording id of the row whose button (`action`: its data-action, or 'main' for the row
        itself) has the focus; None when the focus is elsewhere (on <body>, say)."""
        return browser.execute_script("""const a = document.activeElement, li = a && a.closest('li[data-id]');
            if (!li) return null;
            return (arguments[0] === 'main' ? a.classList.contains('row-main') : a.dataset.action === arguments[0]) ? li.dataset.id : null""", action)

    def enter_twice(opener, question):
        """Enter on `opener` opens its confirmation, and Enter again: the focus was on Cancel, so it
        cancels (on the destructive button, Enter twice deleted). Returns [the focus on Cancel, its text]."""
        el = wait(opener, lambda b: next((e for e in b.find_elements(By.CSS_SELECTOR, opener) if e.is_displayed()), None))
        browser.execute_script("arguments[0].focus()", el)
        browser.switch_to.active_element.send_keys(Keys.ENTER)
        wait("the confirmation", lambda b: question in b.find_element(By.CSS_SELECTOR, "dialog[open]").text)
        on = browser.execute_script("const a = document.activeElement; return [a.matches('dialog[open] [data-cancel]'), a.textContent]")
        browser.switch_to.active_element.send_keys(Keys.ENTER)
        wait("the dialog to close", lambda b: not b.find_elements(By.CSS_SELECTOR, "dialog[open]"))
        time.sleep(0.3)   # a confirmation would have sent its request by now
        return on

    browser.get(url)
    wait("the empty state", lambda b: "No recordings yet" in text())
    check("the token is exchanged for a cookie and dropped from the address", "token" not in browser.current_url, browser.current_url)
    check("empty state has the seed's words", "Create motivational content to play during cravings" in text())
    # The printed link opened again in the same browser: let in (it has the cookie), not 401.
    browser.get(url)
    wait("the page again from the used link", lambda b: "No recordings yet" in text())
    check("the used link opened again in the browser that redeemed it shows the page",
          "token" not in browser.current_url and "Run `recctl ui` again" not in text(), browser.current_url + " " + text()[:200])
    check("the used link without the cookie is still refused", http(url)[0] == 401)
    # The page focuses its main area for screen readers, without drawing a frame across the page.
    frame = browser.execute_script("""const v = document.getElementById('view'), s = getComputedStyle(v);
        return [document.activeElement === v, s.outlineStyle, s.outlineWidth]""")
    check("no focus frame around the page on load", frame[0] and (frame[1] == "none" or frame[2] == "0px"), frame)
    # Toasts are said by screen readers: their live region is in the page (not hidden) while
    # empty; the screen itself is not a live region (each refresh was read out again).
    live = browser.execute_script("""const t = document.getElementById('toast'), v = document.getElementById('view');
        return [t.getAttribute('role'), t.getAttribute('aria-live'), t.hidden, getComputedStyle(t).display, t.textContent, v.getAttribute('aria-live')]""")
    check("the toasts' live region is in the page while empty (role=status, polite); <main> is not live",
          live == ["status", "polite", False, "block", "", None], live)
    check("the library names the tab", titled("Recordings — recd"), page_title())
    shot("01-empty")

    # Record 2 s of the tone and see the meter move.
    click_text("button", "RECORD YOUR FIRST")
    click("[data-mode=audio]")
    check("the record screen names the tab", titled("Record audio — recd"), page_title())
    click("[data-action=record]")
    peak = wait("the meter to move", lambda b: float(b.find_element(By.CSS_SELECTOR, ".meter").get_attribute("data-peak") or "-160") > -20)
    check("the meter shows the tone", bool(peak))
    time.sleep(2)
    shot("02-recording")
    # Pause: the timer stands still and says so; resume goes on. A pause from the shell shows too.
    click("[data-action=pause]")
    wait("recd to pause", lambda b: recd_get("/v1/status")["active"]["paused"])
    time.sleep(0.3)
    frozen = browser.find_element(By.CSS_SELECTOR, ".timer").text
    time.sleep(1.2)
    check("paused: the timer says so and stands still", frozen.startswith("❚❚")
          and browser.find_element(By.CSS_SELECTOR, ".timer").text == frozen, frozen)
    shot("02b-paused")
    click("[data-action=resume]")
    wait("recd to resume", lambda b: not recd_get("/v1/status")["active"]["paused"])
    subprocess.run([RECCTL, "--socket", sock, "record", "pause"], env=env, check=True, capture_output=True)
    wait("the page to show a pause made in the shell", lambda b: b.find_elements(By.CSS_SELECTOR, "[data-action=resume]"))
    subprocess.run([RECCTL, "--socket", sock, "record", "resume"], env=env, check=True, capture_output=True)
    wait("the page to show the resume", lambda b: b.find_elements(By.CSS_SELECTOR, "[data-action=pause]"))
    paused_total = recd_get("/v1/status")["active"]["pausedTotal"]
    check("both pauses counted", paused_total > 1.2, paused_total)
    time.sleep(0.5)
    click("[data-action=stop]")
    wait("the preview", lambda b: b.find_elements(By.CSS_SELECTOR, "[data-action=save]"))
    pending = recctl_json("list", "--state", "pending")["recordings"]
    check("stop leaves a pending take", len(pending) == 1, pending)
    check("the preview names the tab", titled("Save the recording — recd"), page_title())
    take = pending[0]
    # The preview plays the take and never counts.
    click("[data-action=preview]")
    wait("the preview to play", lambda b: b.execute_script("const a = document.querySelector('#player audio'); return a && a.currentTime > 0.3"))
    # The player sheet covers the page's end: scrolled down, the whole form is still above it.
    for width, height in [(390, 844), (1280, 900)]:
        browser.set_window_size(width, height)
        time.sleep(0.4)
        gap = browser.execute_script("""window.scrollTo(0, document.documentElement.scrollHeight);
            const last = Math.max(...[...document.querySelectorAll('form.meta .chips button')].map((c) => c.getBoundingClientRect().bottom));
            return document.getElementById('player').getBoundingClientRect().top - last""")
        check(f"the player sheet leaves the purpose chips reachable at {width} px", gap >= 0, gap)
    browser.set_window_size(390, 844)
    browser.execute_script("window.scrollTo(0, 0)")
    click("[data-action=close]")
    browser.find_element(By.NAME, "title").send_keys("Morning walk")
    browser.find_element(By.NAME, "notes").send_keys("felt strong")
    click("[data-purpose=milestone]")
    shot("03-preview")
    # SAVE is at the form's top: scrolled to just under the sticky header, selenium's click
    # would land on the header's + NEW
    browser.execute_script("window.scrollTo(0, 0)")
    click("[data-action=save]")
    wait("the saved toast", lambda b: "Recording saved ✓" in b.find_element(By.ID, "toast").text)
    wait("the new row", lambda b: "Morning walk" in text())
    saved = recctl_json("show", take["id"])
    check("saved with the title, notes and purpose", saved["state"] == "ready" and saved["title"] == "Morning walk"
          and saved["notes"] == "felt strong" and saved["purpose"] == "milestone", saved)
    check("a preview does not count", saved["playCount"] == 0, saved["playCount"])
    shot("04-library")

    # Play it in the page to the end: the count goes up by one, and the row shows it.
    click(f"li[data-id='{take['id']}'] .row-main")
    wait("the mini-player", lambda b: b.find_element(By.ID, "player").is_displayed())
    time.sleep(0.8)
    shot("05-player")
    aria = browser.execute_script("""const s = document.querySelector('#player [role=slider]');
        return ['aria-valuemin', 'aria-valuemax', 'aria-valuenow', 'aria-valuetext'].map((a) => s.getAttribute(a))""")
    check("the scrub slider says its range and where it is", aria[0] == "0" and aria[1] is not None
          and abs(float(aria[1]) - saved["duration"]) <= 1 and aria[2] is not None and 0 <= float(aria[2]) <= float(aria[1])
          and " of " in (aria[3] or ""), aria)
    hint = lambda: browser.find_element(By.CSS_SELECTOR, "#player [data-count-hint]").text
    before = hint()
    wait("the playback to end and count", lambda b: recctl_json("show", take["id"])["playCount"] == 1, 20)
    wait("the row to show the play", lambda b: "1 play" in b.find_element(By.CSS_SELECTOR, f"li[data-id='{take['id']}']").text)
    after = wait("the hint to change", lambda b: hint() != before and hint(), 5)
    check("the player's hint says when it counts, then that it was counted",
          before == "Counts as a play when you close it or it ends." and after == "Counted as a play ✓", [before, after])
    time.sleep(1)
    check("counted once", recctl_json("show", take["id"])["playCount"] == 1)
    # The player's download link: the file as an attachment named after the title, through the relay.
    got = browser.execute_script("""const a = document.querySelector('#player a[data-action=download]');
        if (!a) return null;
        return fetch(a.href).then(async (r) => [a.hasAttribute('download'), a.getAttribute('aria-label'), r.status,
            r.headers.get('content-disposition'), (await r.arrayBuffer()).byteLength]);""")
    shown = recctl_json("show", take["id"])
    name = urllib.parse.quote(shown["title"] + ".m4a", safe="!#$&+-.^_`|~")
    check("the player downloads the file under its title", got is not None and got[0] and got[1] == f"Download {shown['title']}"
          and got[2] == 200 and (got[3] or "").startswith("attachment; ") and (got[3] or "").endswith(f"filename*=UTF-8''{name}")
          and got[4] == shown["sizeBytes"], got)
    click("[data-action=close]")
    # The row was drawn anew when the play was counted: the focus goes back to it, not to <body>.
    back = wait("the focus back on the row", lambda b: focused_in_row(), 5)
    check("closing the player gives the focus back to the row that opened it", back == take["id"], back)

    # Titles and notes are counted as recd counts them, in graphemes: 40 😀 fit (maxlength, in UTF-16
    # units, stopped at 20), 👍🏽 is one (not two code points). Typed through CDP: chromedriver's
    # send_keys takes no character beyond the BMP.
    click(f"li[data-id='{take['id']}'] [data-action=edit]")
    field = wait("the edit sheet", lambda b: b.find_element(By.CSS_SELECTOR, "dialog[open] input[name=title]"))
    field.clear()
    field.click()
    for _ in range(41):
        browser.execute_cdp_cmd("Input.insertText", {"text": "😀"})
    field = browser.find_element(By.CSS_SELECTOR, "dialog[open] textarea[name=notes]")
    field.clear()
    field.click()
    browser.execute_cdp_cmd("Input.insertText", {"text": "👍🏽" * 201})
    shown = browser.execute_script("""const d = document.querySelector('dialog[open]');
        const n = (t) => [...new Intl.Segmenter().segment(t)].length;
        return [n(d.querySelector('[name=title]').value), n(d.querySelector('[name=notes]').value),
                ...[...d.querySelectorAll('.count')].map((c) => c.textContent)]""")
    check("title and notes take 40 and 200 graphemes, and count them so", shown == [40, 200, "40/40", "200/200"], shown)
    click("[data-action=save-changes]")
    wait("the updated toast", lambda b: "Recording updated ✓" in b.find_element(By.ID, "toast").text)
    edited = recctl_json("show", take["id"])
    check("recd takes what the page allows", edited["title"] == "😀" * 40 and edited["notes"] == "👍🏽" * 200, edited["title"])
    wait("the toast to go", lambda b: not b.find_element(By.ID, "toast").is_displayed())

    # Edit.
    click(f"li[data-id='{take['id']}'] [data-action=edit]")
    title = wait("the edit sheet", lambda b: b.find_element(By.CSS_SELECTOR, "dialog[open] input[name=title]"))
    title.clear()
    title.send_keys("Evening walk")
    shot("06-edit")
    click("[data-action=save-changes]")
    wait("the updated toast", lambda b: "Recording updated ✓" in b.find_element(By.ID, "toast").text)
    check("edit changes the title", recctl_json("show", take["id"])["title"] == "Evening walk")
    back = wait("the focus back on the row", lambda b: focused_in_row("edit"), 5)
    check("after saving an edit the focus is on the row's Edit again", back == take["id"], back)

    # A recording made elsewhere shows without a reload.
    subprocess.run([RECCTL, "--socket", sock, "record", "start", "--title", "From the shell"], env=env, check=True, capture_output=True)
    time.sleep(1)
    subprocess.run([RECCTL, "--socket", sock, "record", "stop", "--save"], env=env, check=True, capture_output=True)
    wait("the other recording to appear", lambda b: "From the shell" in text())
    check("the library follows changes made elsewhere", True)

    # Recording as other clients see it. Each story fails alone: a step that times out fails it,
    # and recd and the page are put back for the next one.
    def story(name, steps):
        try:
            steps()
        except Exception as e:
            check(name, False, repr(e)[:300])
            subprocess.run(["curl", "-s", "--unix-socket", sock, "-X", "POST", "-d", '{"then":"discard"}',
                            "http://recd/v1/record/stop"], capture_output=True, timeout=10)
            for r in recctl_json("list", "--state", "pending")["recordings"]:
                subprocess.run([RECCTL, "--socket", sock, "discard", r["id"], "--yes"], env=env, capture_output=True)
            browser.get(base + "/")
            wait("the library", lambda b: b.find_elements(By.CSS_SELECTOR, "ul.rows"))

    nav_enabled = lambda: [browser.find_element(By.ID, i).is_enabled() for i in ("nav-data", "nav-new")]

    def record_in_page():
        click("#nav-new")
        click("[data-mode=audio]")
        click("[data-action=record]")
        wait("the recording", lambda b: recd_get("/v1/status")["activity"] == "recording")

    def discard_in_page():
        click("[data-action=discard]")
        click("dialog[open] [data-confirm]")
        wait("the discarded toast", lambda b: "Recording discarded" in b.find_element(By.ID, "toast").text)

    def stopped_elsewhere():
        """A take stopped by another client: the page follows it to its preview, as its own STOP does."""
        record_in_page()
        subprocess.run([RECCTL, "--socket", sock, "record", "stop"], env=env, check=True, capture_output=True)
        wait("the preview of the take stopped elsewhere", lambda b: b.find_elements(By.CSS_SELECTOR, "[data-action=save]"), 5)
        kept = recctl_json("list", "--state", "pending")["recordings"]
        check("a stop from the shell: the page shows that take's preview", len(kept) == 1 and nav_enabled() == [True, True]
              and browser.find_element(By.CSS_SELECTOR, "[data-take-title]").text == kept[0]["title"], kept)
        discard_in_page()
    story("a stop from the shell: the page shows that take's preview", stopped_elsewhere)

    def discarded_elsewhere():
        record_in_page()
        subprocess.run([RECCTL, "--socket", sock, "record", "stop", "--discard"], env=env, check=True, capture_output=True)
        wait("the library", lambda b: b.find_elements(By.CSS_SELECTOR, "ul.rows") and nav_enabled() == [True, True], 5)
        check("a discard from the shell: the page returns to the library", True)
    story("a discard from the shell: the page returns to the library", discarded_elsewhere)

    def stays_with_the_take():
        """While a take records, the recording screen is where the app is, after a reload too."""
        record_in_page()
        check("while a take records, the header leads nowhere else", nav_enabled() == [False, False], nav_enabled())
        time.sleep(1)
        browser.refresh()
        wait("the recording screen after a reload", lambda b: b.find_elements(By.CSS_SELECTOR, "[data-action=stop]"), 5)
        before = browser.find_element(By.CSS_SELECTOR, ".timer").text
        time.sleep(1.3)
        after = browser.find_element(By.CSS_SELECTOR, ".timer").text
        check("a reload comes back to the take in progress", before.startswith("⏺ 00:0") and after != before
              and nav_enabled() == [False, False], [before, after, nav_enabled()])
        click("[data-action=stop]")
        discard_in_page()
    story("a reload comes back to the take in progress", stays_with_the_take)

    def started_elsewhere():
        """A take started elsewhere: its row leads to its recording screen, not to Play/Edit/Delete."""
        started = recctl_json("record", "start")["recording"]
        row = wait("the row of the take in progress", lambda b: b.find_element(By.CSS_SELECTOR, f"li[data-id='{started['id']}']"))
        offers = [e.get_attribute("data-action") for e in row.find_elements(By.CSS_SELECTOR, ".row-actions button")]
        check("a row being recorded offers its recording screen only", offers == ["rejoin"], offers)
        click(f"li[data-id='{started['id']}'] [data-action=rejoin]")
        wait("the recording screen", lambda b: b.find_elements(By.CSS_SELECTOR, "[data-action=stop]"), 5)
        check("the row leads to the take in progress", nav_enabled() == [False, False])
        click("[data-action=stop]")
        discard_in_page()
    story("a row being recorded offers its recording screen only", started_elsewhere)

    def saved_later():
        """A take left unsaved: its row leads back to its preview (not Play/Edit/Delete as if saved),
        whose SAVE saves it."""
        subprocess.run([RECCTL, "--socket", sock, "record", "start"], env=env, check=True, capture_output=True)
        time.sleep(1)
        kept = recctl_json("record", "stop")["recording"]
        row = wait("the pending row", lambda b: next((e for e in b.find_elements(By.CSS_SELECTOR, f"li[data-id='{kept['id']}']")
                                                      if "not saved" in e.get_attribute("textContent")), None))
        offers = [e.get_attribute("data-action") for e in row.find_elements(By.CSS_SELECTOR, ".row-actions button")]
        check("a pending row offers its preview, to save it", offers == ["review"], offers)
        shot("12-pending-row")
        click(f"li[data-id='{kept['id']}'] [data-action=review]")
        wait("the preview again", lambda b: b.find_elements(By.CSS_SELECTOR, "[data-action=save]"), 5)
        browser.find_element(By.NAME, "title").send_keys("Saved later")
        click("[data-action=save]")
        wait("the saved toast", lambda b: "Recording saved ✓" in b.find_element(By.ID, "toast").text)
        later = recctl_json("show", kept["id"])
        check("a pending take is saved from its row", later["state"] == "ready" and later["title"] == "Saved later", later)
    story("a pending take is saved from its row", saved_later)

    def many_tabs():
        """Hidden tabs close their event stream (a browser opens 6 connections to a host, and each
        stream holds one): an 8th tab still loads, and a tab shown again reads what changed meanwhile."""
        first = browser.current_window_handle
        browser.set_page_load_timeout(15)
        loaded = 0
        try:
            for _ in range(7):
                browser.switch_to.new_window("tab")
                browser.get(base + "/")
                wait("the tab's library", lambda b: b.find_elements(By.CSS_SELECTOR, "ul.rows"), 10)
                loaded += 1
        except Exception:
            pass
        check("eight tabs at once all load", loaded == 7, f"{loaded + 1} of 8")
        subprocess.run([RECCTL, "--socket", sock, "record", "start", "--title", "While hidden"], env=env, check=True, capture_output=True)
        time.sleep(1)
        subprocess.run([RECCTL, "--socket", sock, "record", "stop", "--save"], env=env, check=True, capture_output=True)
        for handle in browser.window_handles:
            if handle != first:
                browser.switch_to.window(handle)
                browser.close()
        browser.switch_to.window(first)
        browser.set_page_load_timeout(300)
        wait("the first tab to show what changed while hidden", lambda b: "While hidden" in text())
        check("a tab shown again is up to date", True)
    story("a tab shown again is up to date", many_tabs)

    # Delete one: file and row go. Enter twice (open, then by habit) cancels: Cancel has the focus.
    path = os.path.join(data, recctl_json("show", take["id"])["file"])
    on = enter_twice(f"li[data-id='{take['id']}'] [data-action=delete]", "Delete 'Evening walk'?")
    check("delete's question focuses Cancel: Enter twice deletes nothing", on == [True, "Cancel"]
          and os.path.exists(path) and recctl_json("show", take["id"])["state"] == "ready", on)
    click(f"li[data-id='{take['id']}'] [data-action=delete]")
    wait("the seed's question", lambda b: "Delete 'Evening walk'?" in b.find_element(By.CSS_SELECTOR, "dialog[open]").text)
    shot("07-delete")
    click("dialog[open] [data-confirm]")
    wait("the row to go", lambda b: "Evening walk" not in text())
    check("delete removes file and row", not os.path.exists(path) and
          all(r["id"] != take["id"] for r in recctl_json("list")["recordings"]))
    after = wait("the focus on a row", lambda b: focused_in_row(), 5)
    check("after a delete the focus is on the row that took its place", after in [r["id"] for r in recctl_json("list")["recordings"]], after)

    # A video (adopted from a file: there is no camera here) plays in a player with its poster.
    mov = os.path.join(data, "Recordings", "camera test.mov")
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=320x180:rate=15:duration=4",
                    "-f", "lavfi", "-i", "sine=frequency=440:duration=4", "-c:v", "libx264", "-pix_fmt", "yuv420p",
                    "-c:a", "aac", "-shortest", mov], check=True)
    video_id = recctl_json("check", "--repair")["repaired"]["adopted"][0]
    subprocess.run([RECCTL, "--socket", sock, "save", video_id, "--title", "Camera test"], env=env, check=True, capture_output=True)
    wait("the video row", lambda b: "Camera test" in text())
    check("a video's row has the camera icon", "🎥" in browser.find_element(By.CSS_SELECTOR, f"li[data-id='{video_id}']").text)
    # By keyboard alone: Tab reaches the row, Enter plays it.
    browser.execute_script("document.activeElement && document.activeElement.blur()")
    body = browser.find_element(By.TAG_NAME, "body")
    for _ in range(40):
        body.send_keys(Keys.TAB)
        label = browser.execute_script("return document.activeElement.getAttribute('aria-label') || ''")
        if label.startswith("Play Camera test,"):
            break
    check("Tab reaches a recording's row", label.startswith("Play Camera test,"), label)
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    video = wait("the video player", lambda b: b.find_element(By.CSS_SELECTOR, "#player video"))
    poster = video.get_attribute("poster") or ""
    check("the video player shows its poster", poster.endswith(f"/v1/recordings/{video_id}/poster"), poster)
    shown = browser.execute_script("""
        const img = new Image(); img.src = arguments[0];
        return img.decode().then(() => [img.naturalWidth, img.naturalHeight], () => null);""", poster)
    check("the poster is the video's first frame (320x180)", shown == [320, 180], shown)
    playing = wait("the video to play", lambda b: b.execute_script(
        "const v = document.querySelector('#player video'); return v && v.currentTime > 0.3 && v.videoWidth"), 20)
    check("the video plays in the page", playing == 320, playing)
    shot("09-video")
    click("[data-action=close]")
    # Closed after being watched: one play, counted by the page's /played after the sheet is gone
    # (read before it lands, the speaker's count below looked like two).
    wait("the video's play to be counted", lambda b: recctl_json("show", video_id)["playCount"] == 1)
    # On recd's own speaker instead: driven from the page through /play and /playback; recd counts it.
    before = recctl_json("show", video_id)["playCount"]
    playing = lambda: recd_get("/v1/playback").get("playback") or {}
    click(f"li[data-id='{video_id}'] button[title=\"Play on recd's speaker\"]")
    wait("recd to play it", lambda b: playing().get("recording", {}).get("id") == video_id)
    click("#player [data-action=pause]")
    wait("recd to pause", lambda b: playing().get("state") == "paused")
    check("the page pauses recd's own playback", True)
    click("#player [data-action=close]")
    wait("recd to stop and count it", lambda b: not playing() and recctl_json("show", video_id)["playCount"] == before + 1)
    check("closing stops recd's playback, counted once by recd", True)

    # A video asked of a machine without a camera: the seed's fallback, then an audio recording.
    click("#nav-new")
    click("[data-mode=video]")
    click("[data-action=record]")
    banner = wait("the fallback", lambda b: next((e.text for e in b.find_elements(By.CSS_SELECTOR, ".record .banner")
                                                 if e.is_displayed() and e.text), None))
    check("no camera: the seed's words and its offer", "Camera required for video recordings. Record audio-only instead." in banner
          and "RECORD AUDIO" in banner, banner)
    click_text("button", "RECORD AUDIO")
    wait("the audio recording", lambda b: recd_get("/v1/status")["activity"] == "recording")
    check("the offer records audio", recd_get("/v1/status")["active"]["recording"]["type"] == "audio")
    check("...and the header says so", browser.find_element(By.ID, "title").text == "Record audio",
          browser.find_element(By.ID, "title").text)
    time.sleep(1)
    click("[data-action=stop]")
    wait("the preview", lambda b: b.find_elements(By.CSS_SELECTOR, "[data-action=discard]"))
    on = enter_twice("[data-action=discard]", "Discard recording?")
    check("discard's question focuses Cancel: Enter twice discards nothing", on == [True, "Cancel"]
          and recctl_json("list", "--state", "pending")["total"] == 1, on)
    click("[data-action=discard]")
    wait("the seed's question", lambda b: "Discard recording?" in b.find_element(By.CSS_SELECTOR, "dialog[open]").text)
    click("dialog[open] [data-confirm]")
    wait("the discarded toast", lambda b: "Recording discarded" in b.find_element(By.ID, "toast").text)
    check("discard leaves nothing pending", recctl_json("list", "--state", "pending")["total"] == 0)

    # Every control has a name a screen reader can say.
    unnamed = browser.execute_script("""return [...document.querySelectorAll('button, [role=slider], input, textarea')]
        .filter(e => e.offsetParent !== null)
        .filter(e => !((e.getAttribute('aria-label') || '').trim() || (e.textContent || '').trim() || (e.labels && e.labels.length)))
        .map(e => e.outerHTML.slice(0, 80))""")
    check("every control has a name", unnamed == [], unnamed)

    # Opus and FLAC recordings (issue 15) play in the browser from /media as AAC ones do: Chromium
    # reads both from MP4, and plays them to past a second of their sound.
    for fmt in ("opus", "flac"):
        recctl_json("record", "start", "--format", fmt)
        time.sleep(2)
        made = recctl_json("record", "stop", "--save")["recording"]
        check(f"a {fmt} recording is {fmt}", made["format"] == fmt, made)
        browser.execute_script("""window.formatProbe = new Audio('v1/recordings/' + arguments[0] + '/media');
            window.formatProbe.muted = true; window.formatProbe.play();""", made["id"])
        played = wait(f"the {fmt} recording to play in the page",
                      lambda b: b.execute_script("const a = window.formatProbe; return a.error ? 'error ' + a.error.code"
                                                 " : (a.currentTime > 1.0 && [a.duration, a.currentTime])"))
        check(f"Chromium plays the {fmt} recording", isinstance(played, list) and abs(played[0] - made["duration"]) < 0.1,
              f"{played} of {made['duration']}")
        browser.execute_script("window.formatProbe.pause(); window.formatProbe = null;")

    # Most Played chosen, then the library emptied: the empty state, as in Recent.
    click_text("button", "Most Played")
    wait("Most Played", lambda b: "Most Played" in b.find_element(By.CSS_SELECTOR, ".tabs [aria-pressed=true]").text)

    # Export a CSV.
    click("#nav-data")
    check("the Data screen names the tab", titled("Data — recd"), page_title())
    shot("08-data")
    click("[data-action=export]")
    csv = wait("the download", lambda b: next((os.path.join(downloads, f) for f in os.listdir(downloads) if f.endswith(".csv")), None))
    with open(csv) as f:
        first = f.readline().strip()
    check("export downloads a CSV", first == "id,title,timestamp,duration,type,purpose,playCount,loudnessLUFS,loudnessRangeLU,truePeakDBTP,transcript,notes,sizeBytes,lastPlayedAt,markers", first)

    # Delete All Data. Enter twice cancels (it deleted the library: the focus was on Delete).
    kept = recctl_json("list")["total"]
    on = enter_twice("[data-action=delete-all]", "Delete All Data?")
    check("Delete All's question focuses Cancel: Enter twice deletes nothing", on == [True, "Cancel"]
          and kept > 0 and recctl_json("list")["total"] == kept, [on, kept])
    click("[data-action=delete-all]")
    wait("the confirmation", lambda b: "Delete All Data?" in b.find_element(By.CSS_SELECTOR, "dialog[open]").text)
    click("dialog[open] [data-confirm]")
    wait("all deleted", lambda b: recctl_json("list")["total"] == 0)
    check("delete all empties the library", True)
    click_text("button", "Back to Recordings")
    wait("the library", lambda b: b.find_elements(By.CSS_SELECTOR, ".empty, ul.rows"))
    check("an empty library shows its empty state in Most Played too", "No recordings yet" in text(), text()[:200])

    # A change from another origin is refused even with the cookie (CSRF).
    cookie = browser.get_cookie(cookie_name)["value"]
    status, _ = http(base + "/v1/record/start", {"Cookie": f"{cookie_name}={cookie}", "Origin": "http://evil.example",
                                                 "Content-Type": "application/json"}, "POST")
    check("a foreign Origin's change is refused", status == 403, status)
    check("cookie is HttpOnly, SameSite=Strict and kept to the secret path", browser.get_cookie(cookie_name).get("httpOnly") and
          browser.get_cookie(cookie_name).get("sameSite") == "Strict" and
          browser.get_cookie(cookie_name).get("path") == base.split(port, 1)[1] + "/", browser.get_cookie(cookie_name))

    # Errors a person can act on, each in the record screen's banner with a way on.
    def refusal_after_record():
        browser.get(base + "/")
        click("#nav-new")
        click("[data-mode=audio]")
        click("[data-action=record]")
        return wait("the banner", lambda b: next((e.text for e in b.find_elements(By.CSS_SELECTOR, ".record .banner")
                                                  if e.is_displayed() and e.text), None))
    stop_recd(recd)
    recd = h.start_recd("--min-free-mb", "100000000")
    banner = refusal_after_record()
    check("a full disk is said as such", banner.startswith("The disk is full:") and "Try again" in banner, banner)
    shot("10-disk-full")
    stop_recd(recd)
    recd = h.start_recd("--capture-device", "hw:CARD=NoSuchCard,DEV=0")
    banner = refusal_after_record()
    check("a missing microphone is said as such", banner.startswith("The microphone is not available:")
          and "NoSuchCard" in banner and "Try again" in banner, banner)
    # recd going away under an open page, and a page loaded while it is away.
    browser.get(base + "/")
    wait("the library", lambda b: b.find_elements(By.ID, "nav-new"))
    stop_recd(recd)
    click("#nav-new")
    click("[data-mode=audio]")
    click("[data-action=record]")
    gone = wait("the banner", lambda b: next((e.text for e in b.find_elements(By.CSS_SELECTOR, ".record .banner")
                                             if e.is_displayed() and e.text), None))
    check("recd stopping under the page is said as such", "recd is not reachable" in gone and "Try again" in gone, gone)
    browser.get(base + "/")
    gone = wait("the bridge's page", lambda b: next((e.text for e in b.find_elements(By.CSS_SELECTOR, ".banner")
                                                    if e.is_displayed() and e.text), None))
    check("a page loaded while recd is away says how to start it",
          "recd is not reachable" in gone and "systemctl --user start recd" in text() and "errno" not in text(), text())
    shot("11-unreachable")
    # ...and comes back by itself once recd answers (it said "reload this page" and stayed).
    recd = h.start_recd()
    back = time.time()
    wait("the app without a reload by hand", lambda b: "No recordings yet" in text(), 15)
    check(f"a page loaded while recd is away opens the app by itself once recd is back ({time.time() - back:.1f} s)", True)
