// A take's fragmented MP4 whose last box was cut short by a full disk or a power cut.
import Foundation

/// Finds and cuts off a torn box at the end of a fragmented MP4 (recd's file while it records).
///
/// FFmpeg's mov demuxer reads every top-level box of a fragmented file while it opens it; a `moof`
/// cut short makes it fail the whole file ("error reading header"), so a disk that fills while a
/// fragment's `moof` is written (1–2 % of its bytes) left a take no program could open. A torn `moof`
/// holds nothing that can be read (its `mdat` comes after it), so cutting the file where it starts
/// loses no sound or picture: the file then ends with its last whole fragment. A torn `mdat` stays:
/// the demuxer reads what is there.
public enum TornFragment {
    /// Where the torn box at the end starts, or nil when the file ends with a whole box (or a torn
    /// `mdat`), or its boxes do not parse as MP4's (then it is not recd's to cut).
    public static func tornTailOffset(of path: String) -> Int64? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        let size = Int64(st.st_size)
        var offset: Int64 = 0
        var header = [UInt8](repeating: 0, count: 16)
        while offset < size {
            let got = pread(fd, &header, 16, off_t(offset))
            guard got >= 0 else { return nil }
            if got < 8 { return offset }   // a box header cut short
            let size32 = header[0..<4].reduce(Int64(0)) { $0 << 8 | Int64($1) }
            // Boxes are named in printable ASCII, and recd's files start with `ftyp`: anything else
            // is not an MP4 recd wrote, and is left as it is.
            guard header[4..<8].allSatisfy({ (0x20...0x7e).contains($0) }) else { return nil }
            let type = String(decoding: header[4..<8], as: UTF8.self)
            if offset == 0 && type != "ftyp" { return nil }
            var boxSize = size32
            if size32 == 0 { return nil }   // "to the end of the file": whole by definition
            if size32 == 1 {
                if got < 16 { return offset }
                boxSize = header[8..<16].reduce(Int64(0)) { $0 << 8 | Int64($1) }
                guard boxSize >= 16 else { return nil }
            } else if size32 < 8 {
                return nil
            }
            let (end, overflow) = offset.addingReportingOverflow(boxSize)
            if overflow || end > size { return type == "mdat" ? nil : offset }
            offset = end
        }
        return nil
    }

    /// Cuts a torn box off the end of `path` (then fsyncs it); returns the bytes cut, 0 when there
    /// was none. Idempotent: a crash before or after the cut leaves a file this handles again.
    @discardableResult
    public static func cut(_ path: String) throws(StorageError) -> Int64 {
        guard let start = tornTailOffset(of: path), let size = FileOps.size(path) else { return 0 }
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .storage(file: path, operation: "open (to cut a torn fragment)", underlying: FileOps.errnoText()) }
        defer { close(fd) }
        guard ftruncate(fd, off_t(start)) == 0 else {
            throw .storage(file: path, operation: "ftruncate to \(start) bytes", underlying: FileOps.errnoText())
        }
        guard fsync(fd) == 0 else { throw .storage(file: path, operation: "fsync", underlying: FileOps.errnoText()) }
        return size - start
    }
}
