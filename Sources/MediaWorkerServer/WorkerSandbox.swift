// The media worker's filesystem sandbox: FFmpeg parses files from anywhere (an import is any bytes a
// socket-group member sends), so the process that runs it may touch only what its jobs need.
import CProcessShim
import Foundation

/// Landlock, entered once at a worker's start, before its first request: from then on the worker,
/// whatever FFmpeg is made to do, can read and write only beneath recd's data directory (the
/// recordings, the uploads it is handed, the files it writes) and read the directories of the code
/// it has mapped (its own binary, FFmpeg's and the Swift runtime's libraries: what a lazy symbol
/// lookup or a codec's plug-in may still open). Everything else — other users' files, recd's
/// configuration, /proc of other processes — answers EACCES, even where the file's mode would
/// allow it. It needs no privilege, so the user unit has it as much as the system one.
public enum WorkerSandbox {
    public enum Failure: Error, CustomStringConvertible {
        /// Landlock cannot be used here (`errno`: ENOSYS, not built; EOPNOTSUPP, not enabled at boot;
        /// EPERM, refused by a seccomp filter).
        case unsupported(code: Int32)
        /// seccomp cannot be used here (a kernel without it, or a unit's filter refusing the call).
        case unsupportedSeccomp(code: Int32)
        /// A rule or the restriction failed.
        case failed(call: String, path: String?, code: Int32)

        public var description: String {
            switch self {
            case .unsupported(let code):
                return "Landlock is not available (\(String(cString: strerror(code)))): media workers run without a filesystem sandbox"
            case .unsupportedSeccomp(let code):
                return "seccomp is not available (\(String(cString: strerror(code)))): this worker may open sockets and signal other processes"
            case .failed(let call, let path, let code):
                return "could not enter the media worker's sandbox: \(call)\(path.map { " on \($0)" } ?? ""): \(String(cString: strerror(code)))"
            }
        }
    }

    /// Restricts this process to `writable` (and beneath) for everything, and to the directories of
    /// its mapped files for reading (or to `readable`, for a process that execs another program).
    public static func enter(writable: [String], readable: [String]? = nil) throws(Failure) {
        let readable = readable ?? mappedDirectories()
        var failed: UnsafePointer<CChar>?
        var path: UnsafePointer<CChar>?
        let rc = withCStrings(writable) { w in
            withCStrings(readable) { r in
                recd_landlock_enter(w.baseAddress, Int32(writable.count), r.baseAddress, Int32(readable.count), &failed, &path)
            }
        }
        guard rc != 0 else { return }
        let call = failed.map { String(cString: $0) } ?? "landlock"
        // ENOSYS: not built in; EOPNOTSUPP: not enabled at boot; EPERM: a seccomp filter (a unit's
        // SystemCallFilter without the Landlock calls) refuses it.
        if call == "landlock_create_ruleset" && [ENOSYS, EOPNOTSUPP, EPERM].contains(-rc) { throw .unsupported(code: -rc) }
        throw .failed(call: call, path: path.map { String(cString: $0) }, code: -rc)
    }

    /// A library job's walls (`recd-media --one-job`, at its `WorkerOp.Confine`): `reading` for
    /// reading, `writing` (made by recd beforehand) for reading and writing, as single files — no
    /// folder, so no other recording, no new file, no link —, and the folders of the code mapped.
    /// A file of `reading` that does not exist gets no rule (opening it then fails as it would).
    /// `mapped`: those folders, when read before (a take's job process, whose parent's walls closed /proc).
    public static func enterForJob(reading: [String], writing: [String], mapped: [String]? = nil) throws(Failure) {
        try enter(writable: writing, readable: (mapped ?? mappedDirectories()) + reading)
    }

    /// Beyond files (seccomp-bpf, `recd_seccomp_enter`): no new socket of any family — so neither
    /// recd's socket nor PulseAudio's, an abstract socket or TCP —, no signal but to itself, no
    /// ptrace or other process's memory, no namespaces, mounts, io_uring, BPF or keys, and unless
    /// `allowExec` no execve: what a parser bug could use to reach past the job. Inherited by every
    /// thread and across exec. Throws `unsupported` where the kernel (or a unit's own filter) has
    /// no seccomp; the caller goes on then, as without Landlock.
    public static func refuseBeyondFiles(allowExec: Bool) throws(Failure) {
        let rc = recd_seccomp_enter(allowExec ? 1 : 0)
        guard rc != 0 else { return }
        if [ENOSYS, EINVAL, EPERM, EACCES].contains(-rc) { throw .unsupportedSeccomp(code: -rc) }
        throw .failed(call: "seccomp", path: nil, code: -rc)
    }

    /// The directories of the files this process has mapped (/proc/self/maps), read before the
    /// sandbox closes /proc.
    static func mappedDirectories() -> [String] {
        guard let maps = try? String(decoding: FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/self/maps")).readToEnd() ?? Data(),
                                     as: UTF8.self) else { return [] }
        var directories = Set<String>()
        for line in maps.split(separator: "\n") {
            // address perms offset dev inode path
            guard let slash = line.firstIndex(of: "/") else { continue }
            let file = String(line[slash...])
            guard !file.hasSuffix(" (deleted)"), !file.hasPrefix("/memfd:"), !file.hasPrefix("/dev/") else { continue }
            directories.insert((file as NSString).deletingLastPathComponent)
        }
        return directories.sorted()
    }

    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafeBufferPointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let pointers = copies.map { UnsafePointer($0) }
        return pointers.withUnsafeBufferPointer(body)
    }
}
