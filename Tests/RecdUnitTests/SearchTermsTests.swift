// What a search's text becomes (SearchTerms), and where in a transcript a hit is said; and a trim's
// cut of a transcript segment (TranscriptSegment.cut).
import Catalog
import Engine
import RecdAPI
import XCTest

final class SearchTermsTests: XCTestCase {
    func testWordsAreLowerCaseLettersAndDigitsWithNumbersBothWays() {
        XCTAssertEqual(SearchTerms.parse("Morning, AFTER!"), [["morning"], ["after"]])
        XCTAssertEqual(SearchTerms.parse("three 3 twenty 40 100 21"),
                       [["three", "3"], ["3", "three"], ["twenty", "20"], ["40", "forty"], ["100", "hundred"], ["21"]])
        XCTAssertEqual(SearchTerms.parse("!! -- «»"), [])
        XCTAssertEqual(SearchTerms.parse("café naïve"), [["café"], ["naïve"]], "accents are the index's to fold")
        XCTAssertEqual(SearchTerms.parse(Array(repeating: "a", count: 40).joined(separator: " ")).count, 16)
    }

    /// Issue 47: a search forgives British and American spellings and finds a plural's singular.
    func testSpellingsAreForgivenBothWaysAndPluralsFindTheirSingular() {
        func spellings(_ word: String) -> [String] { SearchTerms.parse(word)[0] }
        XCTAssertEqual(spellings("harbor"), ["harbor", "harbour"])
        XCTAssertEqual(spellings("harbour"), ["harbour", "harbor"])
        XCTAssertEqual(spellings("colours"), ["colours", "colors", "colour"])
        XCTAssertEqual(spellings("favorite"), ["favorite", "favourite"])
        XCTAssertEqual(spellings("organize"), ["organize", "organise"])
        XCTAssertEqual(spellings("realisation"), ["realisation", "realization"])
        XCTAssertEqual(spellings("analyse"), ["analyse", "analyze"])
        XCTAssertEqual(spellings("centre"), ["centre", "center"])
        XCTAssertEqual(spellings("theater"), ["theater", "theatre"])
        XCTAssertEqual(spellings("catalog"), ["catalog", "catalogue"])
        XCTAssertEqual(spellings("defence"), ["defence", "defense"])
        XCTAssertEqual(spellings("traveled"), ["traveled", "travelled"])
        XCTAssertEqual(spellings("apples"), ["apples", "apple"])
        XCTAssertEqual(spellings("berries"), ["berries", "berry"])
        XCTAssertEqual(spellings("boxes"), ["boxes", "box"])
        // Short and common words stay as they are: "four" is not "for", "hour" not "hor".
        XCTAssertEqual(spellings("four"), ["four", "4"])
        for word in ["hour", "your", "for", "bus", "glass", "flour", "the", "after", "better"] { XCTAssertEqual(spellings(word), [word]) }
    }

    func testTheEditDistanceCountsASwapOnceAndStopsPastItsLimit() {
        func d(_ a: String, _ b: String, _ most: Int = 2) -> Int? { Catalog.editDistance(Array(a.unicodeScalars), Array(b.unicodeScalars), atMost: most) }
        XCTAssertEqual(d("harbr", "harbour"), 2)
        XCTAssertEqual(d("hte", "the"), 1)
        XCTAssertEqual(d("dentist", "dentist"), 0)
        XCTAssertNil(d("dentist", "tooth"))
        XCTAssertNil(d("cat", "dog", 1))
    }

    func testTheTimeOfAHitIsItsFirstMatchingWordByPrefixCaseAndAccentsAside() {
        func w(_ word: String, _ start: Double) -> TranscriptWord { TranscriptWord(word: word, start: start, end: start + 0.3, probability: 0.9) }
        let segments = [TranscriptSegment(start: 0, end: 2, text: " We met at the Harbor.", words: [w(" We", 0), w(" met", 0.3), w(" at", 0.6), w(" the", 0.8), w(" Harbor.", 1.1)]),
                        TranscriptSegment(start: 5, end: 6, text: " Café at 3.", words: [w(" Café", 5), w(" at", 5.4), w(" 3.", 5.7)])]
        XCTAssertEqual(SearchTerms.firstTime(of: [["harb"]], in: segments), 1.1)
        XCTAssertEqual(SearchTerms.firstTime(of: [["cafe"]], in: segments), 5)
        XCTAssertEqual(SearchTerms.firstTime(of: SearchTerms.parse("three"), in: segments), 5.7)
        XCTAssertNil(SearchTerms.firstTime(of: [["boat"]], in: segments))
    }

    func testACutKeepsTheWordsThatStartInsideMovedToItsStart() {
        func w(_ word: String, _ start: Double, _ end: Double) -> TranscriptWord { TranscriptWord(word: word, start: start, end: end, probability: 1) }
        let s = TranscriptSegment(start: 1, end: 4, text: " one two three", words: [w(" one", 1, 1.5), w(" two", 2, 2.5), w(" three", 3.5, 4.2)])
        let cut = s.cut(from: 1.8, to: 4)
        XCTAssertEqual(cut?.words.map(\.word), [" two", " three"])
        XCTAssertEqual(cut?.text, " two three")
        XCTAssertEqual(cut?.words.map(\.start) ?? [], [0.2, 1.7], accuracy: 1e-9)
        XCTAssertEqual(cut?.words.last?.end ?? 0, 2.2, accuracy: 1e-9, "a word's end is cut at the cut's end")
        XCTAssertNil(s.cut(from: 5, to: 9))
    }
}

private func XCTAssertEqual(_ a: [Double], _ b: [Double], accuracy: Double, file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(a.count, b.count, file: file, line: line)
    for (x, y) in zip(a, b) { XCTAssertEqual(x, y, accuracy: accuracy, file: file, line: line) }
}

/// Skip Silence's pauses from a waveform (issue 47).
final class SilenceFinderTests: XCTestCase {
    /// A waveform of 256-sample pixels at 48 kHz: `loud` or quiet stretches (seconds) in turn.
    func waveform(_ stretches: [(seconds: Double, peak: Int16)]) -> WaveformData {
        var data: [Int16] = []
        for s in stretches { for _ in 0..<Int(s.seconds * 48000 / 256) { data += [-s.peak, s.peak] } }
        return WaveformData(sampleRate: 48000, samplesPerPixel: 256, channels: 1, bits: 16, data: data)
    }

    func testPausesOfASecondOrMoreAreFoundLessAMarginAtEachEnd() {
        let w = waveform([(2, 16000), (3, 20), (2, 16000), (0.6, 20), (2, 16000), (1.5, 30), (1, 9000)])
        let found = SilenceList.find(in: w)
        XCTAssertEqual(found.count, 2, "\(found)")
        XCTAssertEqual(found[0].start, 2.2, accuracy: 0.01)
        XCTAssertEqual(found[0].end, 4.8, accuracy: 0.01)
        XCTAssertEqual(found[1].start, 9.8, accuracy: 0.01)
        XCTAssertEqual(found[1].end, 10.9, accuracy: 0.01)
        // Quiet speech is not a pause: the threshold stays at or under -30 dBFS.
        XCTAssertEqual(SilenceList.find(in: waveform([(2, 16000), (3, 1200), (2, 16000)])), [])
        // A noisy room's floor raises it: the pauses over its hiss are found.
        XCTAssertEqual(SilenceList.find(in: waveform([(20, 400), (2, 16000), (3, 400), (2, 16000)])).count, 2)
    }
}

