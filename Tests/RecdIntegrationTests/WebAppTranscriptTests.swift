// Issue 38's web app in a real browser: Tests/browser/transcript_test.py drives Debian's chromium with
// selenium against the real recd, its real transcriber (Whisper base) and the real `recctl ui`.
import Foundation
import XCTest

final class WebAppTranscriptTests: XCTestCase {
    /// The transcript under the player (words marked as heard, a click seeking there, on the browser
    /// and on recd's speaker), search as one types with its hits, and recd without the transcriber.
    func testTheTranscriptUnderThePlayerAndSearchInTheLibrary() throws {
        try BrowserScript.requireBrowser()
        try Skip.if(Tools.which("espeak-ng") == nil, "espeak-ng is missing: scripts/install-deps.sh --test installs it")
        // The script finds the transcriber where install-deps.sh puts it: <repo>/.build/transcribe.
        let transcriber = Tools.packageRoot.appendingPathComponent(".build/transcribe").path
        try Skip.if(!FileManager.default.fileExists(atPath: transcriber + "/.installed"),
                    "the transcriber is not installed in \(transcriber): scripts/install-deps.sh --transcribe")
        try BrowserScript.run("transcript_test.py", timeout: 420)
    }
}
