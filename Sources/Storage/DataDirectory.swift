// Layout of the data directory and the file operations on recordings.
import CFileOps
import Foundation
import RecdAPI

/// `<data>/catalog.sqlite` and `<data>/Recordings/`.
public struct DataDirectory: Sendable {
    public let root: URL
    /// Serializes every change that touches both `Recordings/` and the catalog (discard, delete,
    /// delete all, recovery/repair): their protocols are crash-safe one at a time, not interleaved
    /// (a repair must not "undo" a delete in flight, a delete-all must not move a file a discard has
    /// moved aside). Recursive: recovery removes empty takes through the same protocol. Copies of
    /// this value share the one lock.
    public let mutations = MutationLock()
    public var catalogPath: String { root.appendingPathComponent("catalog.sqlite").path }
    public var recordings: URL { root.appendingPathComponent("Recordings", isDirectory: true) }
    /// Imports being received or converted: never part of the library (start-up empties it; a
    /// file reaches `Recordings/` only through `FileReplacement`).
    public var uploads: URL { root.appendingPathComponent(".uploads", isDirectory: true) }
    /// Enhanced copies (`<UUID>.m4a`): made from recordings, never one themselves, so outside
    /// `Recordings/` (recovery there adopts any media file it finds).
    public var enhanced: URL { root.appendingPathComponent("Enhanced", isDirectory: true) }

    /// `Enhanced/<UUID>.m4a`, recording `id`'s enhanced copy.
    public func enhancedPath(_ id: UUID) -> String { enhanced.appendingPathComponent("\(id.uuidString).m4a").path }

    public init(root: URL) { self.root = root }

    /// Creates the directories (mode 0700: recordings are private), and makes sure recd may write in
    /// them: a folder it can only read fails here, at start-up, and not at the first take.
    public func create() throws(StorageError) {
        for dir in [root, recordings, uploads, enhanced] {
            do {
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw .storage(file: dir.path, operation: "create directory",
                               underlying: Self.whyNotWritable(dir.path) ?? error.localizedDescription)
            }
            if let why = Self.whyNotWritable(dir.path) { throw .storage(file: dir.path, operation: "write in", underlying: why) }
        }
    }

    /// Why this process cannot write in `path` (or in its nearest existing parent, where it would be
    /// created), in words a person can act on; nil when it can. A read-only file system under systemd
    /// is most often the unit's sandbox (ProtectSystem=strict, ProtectHome=read-only), which lets
    /// recd write only the folders its unit names: the remedy is a drop-in naming this one.
    static func whyNotWritable(_ path: String) -> String? {
        var existing = path
        while access(existing, F_OK) != 0 && existing != "/" { existing = (existing as NSString).deletingLastPathComponent }
        guard access(existing, W_OK) != 0 else { return nil }
        let code = errno
        var text = "\(existing) is " + (code == EROFS ? "on a read-only file system" : "not writable by uid \(getuid())")
            + (code == EROFS ? " (EROFS)" : " (\(String(cString: strerror(code))))")
        if code == EROFS && ProcessInfo.processInfo.environment["INVOCATION_ID"] != nil {
            let cgroup = (try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8)) ?? ""
            let edit = cgroup.contains("/user@") ? "systemctl --user edit recd" : "systemctl edit recd"
            text += "; recd's systemd unit lets it write only the folders named by its ReadWritePaths=:"
                + " add this one with `\(edit)` ([Service] ReadWritePaths=\(path))"
        }
        return text
    }

    /// Removes what interrupted imports left in `.uploads/` (at start-up, before anything is
    /// received). Returns the names removed.
    @discardableResult
    public func clearUploads() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: uploads.path)) ?? []
        // (An import's folder, or a file an older recd left there.)
        for name in names { try? FileManager.default.removeItem(at: uploads.appendingPathComponent(name)) }
        return names
    }

    /// The entries of `Recordings/`: its regular visible files (recordings), its hidden entries
    /// (recd's own: temporaries, aside files, trash and quarantine folders), and the other visible
    /// ones (folders, links: not recd's, never moved or deleted by it). Unsorted. Read with
    /// readdir's d_type: no lstat per file (with 100,000 files that is most of start-up).
    public func listRecordings() throws(StorageError) -> (files: [String], hidden: [String], other: [String]) {
        let dir = recordings.path
        guard let handle = opendir(dir) else {
            throw .storage(file: dir, operation: "list", underlying: FileOps.errnoText())
        }
        defer { closedir(handle) }
        var files: [String] = [], hidden: [String] = [], other: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if name == "." || name == ".." { continue }
            if name.hasPrefix(".") { hidden.append(name); continue }
            var isRegular = entry.pointee.d_type == UInt8(DT_REG)
            if entry.pointee.d_type == UInt8(DT_UNKNOWN) {   // filesystems without d_type
                var st = stat()
                isRegular = lstat(dir + "/" + name, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
            }
            if isRegular { files.append(name) } else { other.append(name) }
        }
        return (files, hidden, other)
    }

    /// `Recordings/audio_<UUID>.m4a`, relative to the data directory (as stored in the catalog).
    public static func relativePath(id: UUID, type: RecordingType) -> String {
        "Recordings/\(type.rawValue)_\(id.uuidString).\(type.fileExtension)"
    }

    public func absolute(_ relative: String) -> String { root.appendingPathComponent(relative).path }

    /// The path of a recording's file, from the catalog's `file` value — only when it has the shape
    /// recd gives it, `Recordings/NAME` with NAME one visible component: the catalog lies where a
    /// compromised worker once could write, so a value that would lead elsewhere (`../`, a folder, an
    /// absolute path) is refused, never used.
    public func recordingPath(_ file: String) throws(StorageError) -> String {
        guard let name = Self.recordingName(file) else {
            throw .storage(file: file, operation: "use",
                           underlying: "it is not the name of a file in Recordings/ (the catalog was changed outside recd): recd does not follow it")
        }
        return recordings.appendingPathComponent(String(name)).path
    }

    /// NAME of `Recordings/NAME` (no copy) when NAME is one visible component: no slash, no leading
    /// dot (recd's own temporaries, `..`), no NUL; nil otherwise. By UTF-8 bytes: Character by
    /// Character (`hasPrefix`, `contains("/")`) this was most of a 100,000-row start-up.
    public static func recordingName(_ file: String) -> Substring? {
        let prefix = "Recordings/".utf8
        let utf8 = file.utf8
        guard utf8.starts(with: prefix) else { return nil }
        let start = utf8.index(utf8.startIndex, offsetBy: prefix.count)
        guard start < utf8.endIndex, utf8[start] != UInt8(ascii: "."),
              !utf8[start...].contains(where: { $0 == UInt8(ascii: "/") || $0 == 0 }) else { return nil }
        return file[start...]
    }

    /// A recording's file opened for reading beneath `Recordings/` without following a link
    /// (`CFileOps_open_beneath`), and only when it is a regular file: what recd serves or reads
    /// itself. A link, a pipe or a device there is refused with a storage error (logged as a server
    /// error), never opened through.
    public func openFile(of r: Recording) throws(StorageError) -> OpenedFile {
        let path = try recordingPath(r.file)
        return try open(String(Self.recordingName(r.file)!), beneath: recordings.path, path: path, missing: .fileMissing(id: r.id, file: r.file))
    }

    /// Opens recording `id`'s enhanced copy, as `openFile` a recording's.
    public func openEnhancedFile(of id: UUID) throws(StorageError) -> OpenedFile {
        try open("\(id.uuidString).m4a", beneath: enhanced.path, path: enhancedPath(id),
                 missing: .noMedia(id: id, detail: EnhancedCopies.fileGone))
    }

    private func open(_ name: String, beneath dir: String, path: String, missing: StorageError) throws(StorageError) -> OpenedFile {
        let fd = CFileOps_open_beneath(dir, name, O_RDONLY | O_NONBLOCK)
        guard fd >= 0 else {
            if errno == ENOENT { throw missing }
            let why = errno == ELOOP || errno == EXDEV ? "it is a symbolic link: recd never follows one in \((dir as NSString).lastPathComponent)/" : FileOps.errnoText()
            throw .storage(file: path, operation: "open", underlying: why)
        }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw .storage(file: path, operation: "open", underlying: "it is not a regular file: recd opens only recordings' files")
        }
        return OpenedFile(fd: fd, path: path, size: Int(st.st_size), modified: Int(st.st_mtim.tv_sec))
    }

    /// Where a file is finalized before it atomically replaces the original.
    public func finalizingPath(for path: String) -> String { sibling(of: path, suffix: Self.finalizingSuffix) }

    /// Where a file waits, moved aside, while its row is deleted (discard).
    public func discardingPath(for path: String) -> String { sibling(of: path, suffix: Self.discardingSuffix) }

    /// Where a recording's new file (a trim) is written before it is committed and renamed over
    /// the row's file (see `FileReplacement`).
    public func replacingPath(for path: String) -> String { sibling(of: path, suffix: Self.replacingSuffix) }

    public static let finalizingSuffix = ".final.tmp"
    public static let discardingSuffix = ".discarding"
    public static let replacingSuffix = ".replacing"

    /// A path under the data directory, relative to it (as the catalog and the journal store them).
    public func relative(_ absolute: String) -> String {
        let prefix = root.path.hasSuffix("/") ? root.path : root.path + "/"
        return absolute.hasPrefix(prefix) ? String(absolute.dropFirst(prefix.count)) : absolute
    }

    private func sibling(of path: String, suffix: String) -> String {
        let url = URL(fileURLWithPath: path)
        return url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent)\(suffix)").path
    }

    /// The recording file a hidden sibling belongs to: `.audio_X.m4a.final.tmp` → `audio_X.m4a`.
    public static func original(ofHidden name: String, suffix: String) -> String? {
        guard name.hasPrefix("."), name.hasSuffix(suffix), name.count > suffix.count + 1 else { return nil }
        return String(name.dropFirst().dropLast(suffix.count))
    }
}

/// A file opened for reading, closed when the last reference goes: reads by offset (pread), so
/// several readers may share it.
public final class OpenedFile: Sendable {
    public let fd: Int32
    public let path: String
    /// Its size and modification time (seconds) when it was opened.
    public let size: Int
    public let modified: Int

    init(fd: Int32, path: String, size: Int, modified: Int) {
        self.fd = fd
        self.path = path
        self.size = size
        self.modified = modified
    }

    /// Up to `count` bytes at `offset` (fewer only at the end of the file). Blocking: call it on a
    /// thread meant for disk I/O.
    public func read(at offset: Int, count: Int) throws(StorageError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw .storage(file: path, operation: "read", underlying: FileOps.errnoText()) }
            if n == 0 { break }
            done += n
        }
        bytes.removeLast(count - done)
        return bytes
    }

    deinit { close(fd) }
}

/// A recursive lock for blocking, short critical sections on files and the catalog.
public final class MutationLock: @unchecked Sendable {
    private let recursive = NSRecursiveLock()
    public func run<T>(_ body: () -> T) -> T {
        recursive.lock()
        defer { recursive.unlock() }
        return body()
    }
    // For typed-throws callers (a typed-throws closure through a generic crashed swift-frontend 6.3.1).
    public func lock() { recursive.lock() }
    public func unlock() { recursive.unlock() }
}

/// Small POSIX file helpers whose failures carry the file and the call.
public enum FileOps {
    public static func size(_ path: String) -> Int64? {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : nil
    }

    public static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// Bytes available to unprivileged users on the filesystem holding `path`.
    public static func freeBytes(_ path: String) -> Int64? {
        var st = statvfs()
        guard statvfs(path, &st) == 0 else { return nil }
        let (bytes, overflow) = Int64(clamping: st.f_bavail).multipliedReportingOverflow(by: Int64(clamping: st.f_frsize))
        return overflow ? Int64.max : bytes
    }

    /// Refuses (`insufficientStorage`) when the filesystem holding `path` has less than `needed`
    /// bytes free; one whose free space cannot be read passes.
    public static func requireFree(_ needed: Int64, in path: String) throws(StorageError) {
        if let free = freeBytes(path), free < needed {
            throw .insufficientStorage(path: path, freeBytes: free, requiredBytes: needed)
        }
    }

    /// fsync of a file or directory, so a rename or a finished file survives power loss.
    public static func sync(_ path: String) throws(StorageError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .storage(file: path, operation: "open (for fsync)", underlying: errnoText()) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw .storage(file: path, operation: "fsync", underlying: errnoText()) }
    }

    public static func rename(_ from: String, _ to: String) throws(StorageError) {
        guard Glibc.rename(from, to) == 0 else {
            throw .storage(file: from, operation: "rename", underlying: "\(errnoText()) (renaming it to \(to))")
        }
    }

    /// Swaps two directories (or files) of one filesystem atomically: see `CFileOps_exchange`.
    public static func exchange(_ a: String, _ b: String) throws(StorageError) {
        guard CFileOps_exchange(a, b) == 0 else {
            throw .storage(file: b, operation: "exchange", underlying: "\(errnoText()) (swapping it with \(a))")
        }
    }

    /// Removes a directory and everything in it (readdir's d_type, no stat per file); what is
    /// already gone is not an error. Returns the files it could not remove (they stay, and so does
    /// their directory).
    @discardableResult
    public static func removeTree(_ path: String) -> Int {
        guard let handle = opendir(path) else { return errno == ENOENT ? 0 : 1 }
        var stuck = 0
        var subdirectories: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if name == "." || name == ".." { continue }
            let child = path + "/" + name
            var isDirectory = entry.pointee.d_type == UInt8(DT_DIR)
            if entry.pointee.d_type == UInt8(DT_UNKNOWN) {
                var st = stat()
                isDirectory = lstat(child, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
            }
            if isDirectory { subdirectories.append(child) }
            else if unlink(child) != 0 && errno != ENOENT { stuck += 1 }
        }
        closedir(handle)
        for child in subdirectories { stuck += removeTree(child) }
        if rmdir(path) != 0 && errno != ENOENT && stuck == 0 { stuck = 1 }
        return stuck
    }

    /// Removes a file; a file that is already gone is not an error.
    public static func remove(_ path: String) throws(StorageError) {
        guard unlink(path) == 0 || errno == ENOENT else {
            throw .storage(file: path, operation: "delete", underlying: errnoText())
        }
    }

    public static func errnoText() -> String { String(cString: strerror(errno)) }
}
