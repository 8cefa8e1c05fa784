// The files of enhanced copies, kept in agreement with their catalog rows.
import Catalog
import Foundation
import Logging

/// `Enhanced/<UUID>.m4a` files are made from recordings and are never one: a file whose row is
/// gone (its recording deleted or trimmed, a crash between the file's rename and the row's commit)
/// is removed, and a row whose file is gone (a restore: backups hold recordings, not copies made
/// from them) is forgotten. Nothing here can lose a recording. Called under `data.mutations`.
public enum EnhancedCopies {
    /// What a copy whose row is there but whose file is gone says (a file removed by hand).
    public static let fileGone = "has lost its enhanced copy's file: make the copy again (recctl enhance)"
    /// What a recording without a copy says where one is asked for.
    public static func none(_ id: UUID) -> String { "has no enhanced copy (recctl enhance \(id.uuidString.prefix(8)) makes one)" }

    /// A copy's file being written: `.<UUID>.<random>.making` (one per request, so two at once do
    /// not write the same file).
    public static func makingPath(for id: UUID, in data: DataDirectory) -> String {
        data.enhanced.appendingPathComponent(".\(id.uuidString).\(UInt32.random(in: 0...UInt32.max)).making").path
    }

    /// Removes the files no row names. At start-up (`startUp`) also the half-written ones and the
    /// rows without a file; otherwise those may be a copy being made right now. Returns the names
    /// removed and the rows forgotten.
    @discardableResult
    public static func sweep(catalog: Catalog, data: DataDirectory, startUp: Bool, logger: Logger) -> (files: [String], rows: [UUID]) {
        let dir = data.enhanced.path
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir),
              let kept = try? catalog.enhancedRecordingIDs() else { return ([], []) }
        var removed: [String] = [], forgotten: [UUID] = []
        var present = Set<UUID>()
        for name in names {
            if name.hasPrefix(".") {
                guard startUp, name.hasSuffix(".making") || name.hasSuffix(".making.fragmented") else { continue }
            } else if name.hasSuffix(".m4a"), let id = UUID(uuidString: String(name.dropLast(4))), kept.contains(id) {
                present.insert(id)
                continue
            } else if !(name.hasSuffix(".m4a") && UUID(uuidString: String(name.dropLast(4))) != nil) {
                continue   // not recd's: left alone
            }
            if (try? FileOps.remove(dir + "/" + name)) != nil { removed.append(name) }
        }
        if startUp {
            for id in kept.subtracting(present) where (try? catalog.deleteEnhancedCopy(of: id)) == true { forgotten.append(id) }
        }
        if !removed.isEmpty || !forgotten.isEmpty {
            logger.info("enhanced copies: \(removed.count) file(s) without their recording removed, \(forgotten.count) row(s) without their file forgotten")
        }
        return (removed, forgotten)
    }
}
