// The web app (issue 19) in a real browser: Tests/browser/webapp_test.py drives Debian's chromium with
// selenium against the real recd and the real `recctl ui` bridge; here it runs as part of the suite.
import Foundation
import XCTest

final class WebAppTests: XCTestCase {
    func testTheScreensInARealBrowserThroughRecctlUI() throws {
        try BrowserScript.requireBrowser()
        try BrowserScript.run("webapp_test.py", timeout: 300)
    }

    /// Issue 37: recd going away under a take and coming back, a slow start, the widest titles at four
    /// widths, the player's waveform fitted to its canvas, and the seed's details, in Chromium.
    func testThePageFollowsRecdAndHoldsAnyTitle() throws {
        try BrowserScript.requireBrowser()
        // Without a CJK font Chromium draws fallback boxes, whose widths are not the glyphs' own.
        let cjk = try Tools.run("fc-list", [":lang=ja", "family"])
        if cjk.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            throw Skip.because("no CJK font: scripts/install-deps.sh --test installs fonts-noto-cjk")
        }
        try BrowserScript.run("app_details_test.py", timeout: 240)
    }

    /// Issue 35 §2 in Chromium: the cookie reaches no other local port, two `recctl ui` coexist, and
    /// `--open` hands xdg-open a private redirecting file rather than the token.
    func testTheCredentialStaysWithItsRelayInChromium() throws {
        try BrowserScript.requireBrowser()
        try BrowserScript.run("relay_credential_test.py", shots: false, timeout: 120)
    }

    /// recd serves the page itself on its socket, with its assets under the daemon's version.
    func testRecdServesThePageAndItsAssets() throws {
        let pulse = try PulseAudioServer()
        defer { pulse.stop() }
        let daemon = try Daemon(environment: pulse.environment)
        defer { daemon.cleanUp() }
        try daemon.start()
        let page = try Tools.run("curl", ["-s", "-i", "--unix-socket", daemon.socket, "http://recd/"])
        XCTAssertTrue(page.stdout.hasPrefix("HTTP/1.1 200"), page.stdout)
        XCTAssertTrue(page.stdout.lowercased().contains("content-security-policy: default-src 'self'"), page.stdout)
        XCTAssertTrue(page.stdout.lowercased().contains("cache-control: no-cache"), page.stdout)
        let version = try daemon.recctlJSON(RecdAPIStatus.self, "status").version
        XCTAssertTrue(page.stdout.contains("\"app/\(version)/app.js\""), page.stdout)   // relative: recctl ui serves it under a path of its own
        let asset = try Tools.run("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code} %{content_type}", "--unix-socket", daemon.socket,
                                           "http://recd/app/\(version)/app.js"])
        XCTAssertEqual(asset.stdout, "200 text/javascript; charset=utf-8")
        let stale = try Tools.run("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", daemon.socket,
                                           "http://recd/app/0.0.0-old/app.js"])
        XCTAssertEqual(stale.stdout, "404")
        // The page and its code stay small (issue 19's budget: 100 KB uncompressed).
        let dir = Tools.packageRoot.appendingPathComponent("Sources/Server/webapp")
        let bytes = try FileManager.default.contentsOfDirectory(atPath: dir.path)
            .reduce(0) { $0 + ((try? FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent($1).path)[.size] as? Int) ?? 0) }
        XCTAssertLessThan(bytes, 100_000)
    }

    /// Issue 48: the Data page's Backups with the real restic — off (and issue 47's Export card naming
    /// every column of recd's CSV header), none yet, a run under way (a progress bar from recd's
    /// backup.progress events, no reads of its state; none once the page is left), the check, the
    /// last good backup, a wrong password, and recd's warning.
    func testTheDataPageShowsTheBackups() throws {
        try BrowserScript.requireBrowser()
        try Skip.if(Tools.which("restic") == nil, "restic is missing: scripts/install-deps.sh --test installs it")
        try BrowserScript.run("backup_test.py", timeout: 240)
    }

    /// Issue 49: the Listen mode in Chromium — off, the settings and their limits (one out of them
    /// refused), armed (recd's level gate and its note), speech into the microphone (the level, "Hearing
    /// speech", the recording listed and played), the header's indicator on every screen while armed
    /// ("Listening paused" under a recording made by hand; a dot alone at phone width, the header as
    /// high as unarmed), another client arming and disarming, stop; every control named, 320 and
    /// 1280 px, axe-core.
    func testTheListenModeShowsListeningAndEachRecording() throws {
        try BrowserScript.requireBrowser()
        try Skip.if(Tools.which("espeak-ng") == nil, "espeak-ng is missing: scripts/install-deps.sh --test installs it")
        try BrowserScript.run("listen_test.py", timeout: 240)
    }

    /// Issue 47: markers in Chromium — ticks on the player's waveform (buttons, named and titled),
    /// ⚑ Mark and m at the <audio>'s time, the list's label field, seek and delete, one made with
    /// `recctl mark` showing at once; on the record screen a take marked at its own time; every
    /// control named; 320 and 1280 px.
    func testThePlayerAndTheRecordScreenMarkMoments() throws {
        try BrowserScript.requireBrowser()
        try BrowserScript.run("markers_test.py", timeout: 180)
    }

    /// Issue 47 in Chromium: Skip Silence in the player (a sox memo with three 3 s pauses plays to its
    /// end in about 9 s, no frame inside a pause; "saves 7.8 s"; kept across a reload; skipSilence on
    /// recd's speaker), search's "did you mean" buttons, the order as toggle buttons, Quick Play's
    /// list items, the level meter's aria-valuenow, 3:1 borders and waveform; 320 and 1280 px.
    func testThePlayerSkipsSilenceAndSearchSuggestsWords() throws {
        try BrowserScript.requireBrowser()
        try BrowserScript.run("silence_search_test.py", timeout: 180)
    }

    /// Issue 47's Enhance in Chromium: a noisy espeak-ng memo's player offers Enhance ("Enhancing…",
    /// aria-busy), then Original | Enhanced (aria-pressed) swapping the <audio>'s src at the same time,
    /// playing and speed, no play counted; the loudness change; the copy's download; removed after a
    /// confirmation (Cancel focused), recd's copy null after; recd's refusal in a toast; 320 and 1280 px, axe.
    func testEnhanceMakesACopyToCompareAndRemove() throws {
        try BrowserScript.requireBrowser()
        try Skip.if(Tools.which("espeak-ng") == nil, "espeak-ng is missing: scripts/install-deps.sh --test installs it")
        try BrowserScript.run("enhance_test.py", timeout: 240)
    }

    /// Issue 47: axe-core (from PyPI, installed by scripts/install-deps.sh --test) on every screen:
    /// no critical or serious violation.
    func testEveryScreenPassesAxe() throws {
        try BrowserScript.requireBrowser()
        // axe.min.js as the pinned axe-playwright-python wheel ships it, in .build/axe-venv/lib/python3.*/site-packages.
        let lib = Tools.packageRoot.appendingPathComponent(".build/axe-venv/lib")
        let axe = ((try? FileManager.default.contentsOfDirectory(atPath: lib.path)) ?? []).contains {
            FileManager.default.fileExists(atPath: lib.appendingPathComponent("\($0)/site-packages/axe_playwright_python/axe.min.js").path)
        }
        try Skip.if(!axe, "axe-core is missing: scripts/install-deps.sh --test installs it in .build/axe-venv")
        try BrowserScript.run("axe_test.py", shots: false, timeout: 180)
    }
}

/// The browser scripts of Tests/browser, run as part of the suite.
enum BrowserScript {
    /// Debian's python (selenium is Debian's python3-selenium, so not a python earlier on PATH).
    static let python = "/usr/bin/python3"

    /// Chromium, its driver and that python, or a skip that says what installs them.
    static func requireBrowser() throws {
        for needed in [python, "/usr/bin/chromium", "/usr/bin/chromedriver"] where !FileManager.default.isExecutableFile(atPath: needed) {
            throw Skip.because("\(needed) is missing: scripts/install-deps.sh --test installs chromium, chromium-driver and python3-selenium")
        }
    }

    /// Tests/browser/`name` against the real recd and recctl (and the screenshots' folder, with
    /// `shots`); the script's own lines (and its "N passed, M failed") only in a failure's message.
    static func run(_ name: String, shots: Bool = true, timeout: Double, file: StaticString = #filePath, line: UInt = #line) throws {
        let script = Tools.packageRoot.appendingPathComponent("Tests/browser/\(name)").path
        var args = [script, Tools.recd, Tools.recctl]
        if shots { args.append(Tools.packageRoot.appendingPathComponent(".build/webapp-shots").path) }
        let r = try Tools.run(python, args, timeout: timeout)
        XCTAssertEqual(r.status, 0, "browser test failed:\n\(r.stdout)\n\(r.stderr)", file: file, line: line)
    }
}

/// Only what the test above reads of the status.
struct RecdAPIStatus: Decodable { var version: String }
