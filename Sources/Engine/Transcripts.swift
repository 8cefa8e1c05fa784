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
        let (rows, suggestions) = try await blockingCatalogCall { [catalog] in
            let rows = try catalog.search(terms, limit: limit)
            guard rows.isEmpty else { return (rows, [SearchSuggestion]()) }
            // Nothing found: the words nothing holds, each with the library's closest words.
            var suggestions: [SearchSuggestion] = []
            for spellings in terms where !spellings[0].allSatisfy(\.isNumber) {
                guard try !catalog.anyMatch(spellings) else { continue }
                let word = SearchTerms.folded(spellings[0])
                suggestions.append(SearchSuggestion(word: spellings[0], closest: try catalog.closestWords(to: word, limit: 3)))
            }
            return (rows, suggestions)
        }
        return SearchResults(query: text, results: rows.map { row in
            SearchHit(recording: row.recording, field: row.field, snippet: row.snippet,
                      time: row.field == "transcript" ? SearchTerms.firstTime(of: terms, in: row.segments) : nil)
        }, suggestions: suggestions)
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
            return [word] + forgiving(word).filter { $0 != word }
        }
    }

    /// The spellings a search forgives (issue 47): British and American ("harbor" finds "harbour",
    /// "colour" "color", "organize" "organise", "centre" "center", "catalog" "catalogue", "defense"
    /// "defence", "traveled" "travelled") and a plural's singular ("apples" finds "apple", "berries"
    /// "berry", "boxes" "box"; a word already finds its plural, as every spelling counts as the start
    /// of a longer word). A spelling that is no word (`motour`) costs nothing: it matches nothing.
    static func forgiving(_ word: String) -> [String] {
        guard word.count >= 4, word.allSatisfy(\.isLetter) else { return [] }
        var out: [String] = []
        func swap(_ from: String, _ to: String, minLength: Int = 5) {
            guard word.count >= minLength else { return }
            for suffix in ["", "s", "ed", "ing", "ite", "ites", "able", "al", "ation", "ations", "er", "ers", "ly"] where word.hasSuffix(from + suffix) {
                out.append(String(word.dropLast(from.count + suffix.count)) + to + suffix)
                return
            }
        }
        if !["flour", "scour", "detour", "devour", "contour", "velour"].contains(where: word.hasPrefix) { swap("our", "or") }
        if !word.hasSuffix("our") { swap("or", "our") }
        swap("ise", "ize", minLength: 6); swap("ize", "ise", minLength: 6)
        swap("isation", "ization", minLength: 8); swap("ization", "isation", minLength: 8)
        swap("yse", "yze"); swap("yze", "yse")
        // centre, theatre, metre, litre, fibre (a vowel or n before -ter: not "after", "better").
        for (a, b, before) in [("tre", "ter", "aeioun"), ("bre", "ber", "i"), ("ter", "tre", "aeioun"), ("ber", "bre", "i")]
        where word.hasSuffix(a) && word.count >= 5 && before.contains(word.dropLast(3).last!) {
            out.append(String(word.dropLast(3)) + b)
        }
        if word.hasSuffix("ogue") { out.append(String(word.dropLast(2))) } else if word.hasSuffix("og") { out.append(word + "ue") }
        if word.hasSuffix("ence") { out.append(String(word.dropLast(2)) + "se") } else if word.hasSuffix("ense") { out.append(String(word.dropLast(2)) + "ce") }
        for (a, b) in [("lled", "led"), ("lling", "ling"), ("ller", "ler")] {
            if word.hasSuffix(a) { out.append(String(word.dropLast(a.count)) + b) } else if word.hasSuffix(b) && word.count >= 6 { out.append(String(word.dropLast(b.count)) + a) }
        }
        // The singular (the plural is found by the singular's prefix).
        if word.hasSuffix("ies") && word.count >= 5 {
            out.append(String(word.dropLast(3)) + "y")
        } else if ["ses", "xes", "zes", "ches", "shes"].contains(where: word.hasSuffix) {
            out.append(String(word.dropLast(2)))
        } else if word.hasSuffix("s") && !["ss", "us", "is"].contains(where: word.hasSuffix) {
            out.append(String(word.dropLast()))
        }
        var seen: Set<String> = [word]
        return out.filter { seen.insert($0).inserted }
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
