// The transcriber's protocol on both sides (issue 46): the Python script's own messages, printed by
// `recd-transcribe.py --protocol-samples` through the functions that send them, decode with recd's
// `TranscriberWire` types, and the operations it reads are recd's. Needs python3 only (no model).
import Foundation
import MediaWorker
import RecdAPI
import XCTest

final class TranscriberWireTests: XCTestCase {
    static let script = ModuleRulesTests.root.appendingPathComponent("transcribe/recd-transcribe.py").path

    func samples() throws -> [String] {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", Self.script, "--protocol-samples"]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    func testTheScriptsMessagesAreRecdsTypes() throws {
        let lines = try samples()
        XCTAssertEqual(lines.count, 6, "\(lines)")
        struct Operations: Decodable { var operations: [String] }
        let ops = try JSONDecoder().decode(Operations.self, from: Data(lines[0].utf8)).operations
        XCTAssertEqual(ops, TranscriberWire.Operation.allCases.map(\.rawValue))
        let replies = try lines.dropFirst().map { try JSONDecoder().decode(TranscriberWire.Reply.self, from: Data($0.utf8)) }
        let word = TranscriptWord(word: " Hello", start: 0, end: 0.482, probability: 0.912)
        XCTAssertEqual(replies, [
            .ready(model: "base"),
            .segment(TranscriptSegment(start: 0, end: 0.482, text: " Hello", words: [word])),
            .segment(TranscriptSegment(start: 1, end: 2, text: " …", words: [])),
            .done(language: "en", duration: 2.5),
            .error("could not load the model in /nowhere: it is not one"),
        ])
    }

    /// recd's requests, as the script reads them: `{"op": NAME}`.
    func testRequestsAreAnOperationByName() throws {
        for op in TranscriberWire.Operation.allCases {
            let json = try JSONSerialization.jsonObject(with: Data(TranscriberWire.Request(op).header)) as? [String: String]
            XCTAssertEqual(json, ["op": op.rawValue])
        }
    }

    /// A reply of another shape is refused, not guessed at: none of the keys, two of them, an unknown one.
    func testRepliesOfAnotherShapeAreRefused() {
        for bad in [#"{}"#, #"{"ready": {"model": "base"}, "error": "x"}"#, #"{"progress": 0.5}"#, #"{"done": 3}"#] {
            XCTAssertThrowsError(try JSONDecoder().decode(TranscriberWire.Reply.self, from: Data(bad.utf8)), bad)
        }
    }
}
