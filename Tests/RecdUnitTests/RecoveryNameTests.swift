// How recd tells a row's file in `Recordings/` from a value it must not follow (by UTF-8 bytes).
import Foundation
import RecdAPI
import Storage
import XCTest

final class RecoveryNameTests: XCTestCase {
    func testANameDirectlyInRecordingsIsItsOwnAndAnythingElseIsNot() {
        XCTAssertEqual(DataDirectory.recordingName("Recordings/audio_X.m4a"), "audio_X.m4a")
        XCTAssertEqual(DataDirectory.recordingName("Recordings/copied in.m4a"), "copied in.m4a")
        XCTAssertEqual(DataDirectory.recordingName("Recordings/été à Zürich 🎙️.m4a"), "été à Zürich 🎙️.m4a")
        XCTAssertNil(DataDirectory.recordingName("Recordings/sub/a.m4a"), "a folder inside is not a listing's name")
        XCTAssertNil(DataDirectory.recordingName("Recordings/"))
        XCTAssertNil(DataDirectory.recordingName("Recording/a.m4a"))
        XCTAssertNil(DataDirectory.recordingName("/abs/Recordings/a.m4a"))
        XCTAssertNil(DataDirectory.recordingName(""))
        // What a compromised worker could once write into the catalog: each would lead recd elsewhere.
        XCTAssertNil(DataDirectory.recordingName("Recordings/../../.ssh/id_ed25519"))
        XCTAssertNil(DataDirectory.recordingName("Recordings/.."))
        XCTAssertNil(DataDirectory.recordingName("Recordings/.audio_X.m4a.final.tmp"), "recd's own temporaries are no recording's")
        XCTAssertNil(DataDirectory.recordingName("Recordings/a\u{0}b.m4a"))
        XCTAssertNil(DataDirectory.recordingName("catalog.sqlite"))
        // A composed "é" after the prefix's slash: the byte split does not cut a character.
        let name = DataDirectory.recordingName("Recordings/e\u{301}.m4a")
        XCTAssertEqual(name.map(String.init), "e\u{301}.m4a")
    }
}

final class RecordingPathTests: XCTestCase {
    func testOnlyANameInRecordingsBecomesAPath() throws {
        let data = DataDirectory(root: URL(fileURLWithPath: "/srv/recd"))
        XCTAssertEqual(try data.recordingPath("Recordings/audio_X.m4a"), "/srv/recd/Recordings/audio_X.m4a")
        for hostile in ["Recordings/../catalog.sqlite", "/home/ana/.ssh/id_ed25519", "Recordings/sub/a.m4a", "catalog.sqlite"] {
            XCTAssertThrowsError(try data.recordingPath(hostile), hostile) { error in
                XCTAssertTrue("\(error)".contains("does not follow it"), "\(error)")
            }
        }
    }

    /// A link in Recordings/ (as a worker without Landlock could make) is refused, not opened
    /// through; so are a pipe (whose open would block a reader) and a folder.
    func testOpeningARecordingsFileFollowsNoLinkAndOpensOnlyRegularFiles() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("recd-open-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let data = DataDirectory(root: root)
        try data.create()
        let secret = root.appendingPathComponent("secret").path
        try Data("private".utf8).write(to: URL(fileURLWithPath: secret))
        func recording(_ name: String) -> Recording {
            Recording(id: UUID(), type: .audio, state: .ready, title: "t", notes: "", purpose: nil, createdAt: Date(),
                      duration: 1, sizeBytes: 7, file: "Recordings/" + name, playCount: 0, lastPlayedAt: nil,
                      recovered: false, droppedFrames: 0)
        }
        try Data("sound".utf8).write(to: data.recordings.appendingPathComponent("audio_A.m4a"))
        let opened = try data.openFile(of: recording("audio_A.m4a"))
        XCTAssertEqual(opened.size, 5)
        XCTAssertEqual(try opened.read(at: 1, count: 10), Array("ound".utf8))

        XCTAssertEqual(symlink(secret, data.recordings.appendingPathComponent("audio_L.m4a").path), 0)
        XCTAssertEqual(mkfifo(data.recordings.appendingPathComponent("audio_F.m4a").path, 0o600), 0)
        try FileManager.default.createDirectory(at: data.recordings.appendingPathComponent("audio_D.m4a"), withIntermediateDirectories: false)
        for (name, why) in [("audio_L.m4a", "symbolic link"), ("audio_F.m4a", "not a regular file"), ("audio_D.m4a", "not a regular file")] {
            XCTAssertThrowsError(try data.openFile(of: recording(name)), name) { error in
                XCTAssertTrue("\(error)".contains(why), "\(name): \(error)")
            }
        }
        let gone = recording("audio_G.m4a")
        XCTAssertThrowsError(try data.openFile(of: gone)) { error in
            guard case StorageError.fileMissing(let id, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(id, gone.id)
        }
    }
}
