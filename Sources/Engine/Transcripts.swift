// A recording's transcript, and search by words over transcripts, titles and notes (issue 38).
import Catalog
import Foundation
import RecdAPI
import Storage

extension Engine {
    /// The transcript of a recording (id or prefix): made, pending, failed, or none and why.
    public func transcript(_ idOrPrefix: String) async throws(EngineError) -> Transcript {
        let r = try library.resolve(idOrPrefix)
        do { return try await transcriptionPass.transcript(of: r) } catch { throw .from(error) }
    }

    /// The recordings whose title, notes or transcript hold every word of `text`, best first (at most
    /// `limit`), each with the text around the words and, in a transcript, the time they are said.
    public func search(_ text: String, limit: Int) async throws(EngineError) -> SearchResults {
        guard (1...100).contains(limit) else { throw .invalidValue(field: "limit", detail: "must be 1...100") }
        let terms = SearchTerms.parse(text)
        guard !terms.isEmpty else {
            throw .invalidValue(field: "q", detail: "give at least one word to search for (letters or digits)")
        }
        let rows = try await blockingCatalogCall { [catalog] in try catalog.search(terms, limit: limit) }
        return SearchResults(query: text, results: rows.map { row in
            SearchHit(recording: row.recording, field: row.field, snippet: row.snippet,
                      time: row.field == "transcript" ? SearchTerms.firstTime(of: terms, in: row.segments) : nil)
        })
    }
}

/// What a search's text becomes: its words (letters and digits, lower case, accents kept for the
/// index's tokenizer to fold), each with the other spellings that count for it — a number said as a
/// word or written in digits ("three" finds "3": Whisper writes most numbers as digits).
public enum SearchTerms {
    static let numbers = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                          "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
                          "nineteen", "twenty"]
    static let tens = [30: "thirty", 40: "forty", 50: "fifty", 60: "sixty", 70: "seventy", 80: "eighty", 90: "ninety",
                       100: "hundred", 1000: "thousand"]

    /// At most 16 words; each a list of spellings, the word itself first.
    public static func parse(_ text: String) -> [[String]] {
        let words = text.lowercased().split { !($0.isLetter || $0.isNumber) }.map(String.init).prefix(16)
        return words.map { word in
            if let n = Int(word), let spoken = spoken(n) { return [word, spoken] }
            if let n = value(of: word) { return [word, String(n)] }
            return [word]
        }
    }

    static func spoken(_ n: Int) -> String? { n >= 0 && n < numbers.count ? numbers[n] : tens[n] }

    static func value(of word: String) -> Int? {
        numbers.firstIndex(of: word) ?? tens.first { $0.value == word }?.key
    }

    /// When the first word of `segments` that the search matched is said: a word that starts with one
    /// of the terms' spellings, as the index matches it (case and accents aside: "harb" finds "Harbor").
    public static func firstTime(of terms: [[String]], in segments: [TranscriptSegment]) -> Double? {
        let wanted = terms.flatMap { $0 }.map(folded)
        for segment in segments {
            for word in segment.words {
                let plain = folded(word.word).split { !($0.isLetter || $0.isNumber) }
                if plain.contains(where: { token in wanted.contains { token.hasPrefix($0) } }) { return word.start }
            }
        }
        return nil
    }

    static func folded(_ text: String) -> String { text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil) }
}
