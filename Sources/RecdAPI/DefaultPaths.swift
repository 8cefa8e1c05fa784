import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Where recd and recctl look when `--socket` / `--data-dir` and their variables are not given.
/// Shared so the client always finds the daemon the daemon's own defaults describe.
public enum DefaultPaths {
    /// `environment` nil: the process's own, read with getenv (building `ProcessInfo`'s dictionary of
    /// every variable was a twentieth of `recctl --version`, which evaluates this default).
    public static func socket(environment: [String: String]? = nil, uid: uid_t = getuid()) -> String {
        let env = Variables(environment)
        if let s = env["RECD_SOCKET"], !s.isEmpty { return s }
        if uid == 0 { return "/run/recd/recd.sock" }
        if let r = env["XDG_RUNTIME_DIR"], !r.isEmpty { return r + "/recd/recd.sock" }
        // No runtime directory (a session without logind): a per-user folder in /tmp.
        return "/tmp/recd-\(uid)/recd.sock"
    }

    public static func dataDirectory(environment: [String: String]? = nil, uid: uid_t = getuid()) -> String {
        let env = Variables(environment)
        if let d = env["RECD_DATA_DIR"], !d.isEmpty { return d }
        if uid == 0 { return "/var/lib/recd" }
        if let x = env["XDG_DATA_HOME"], !x.isEmpty { return x + "/recd" }
        let home = env["HOME"] ?? homeDirectory(of: uid)
        return home + "/.local/share/recd"
    }

    /// The given variables, or the process's.
    private struct Variables {
        let given: [String: String]?
        init(_ given: [String: String]?) { self.given = given }
        subscript(_ name: String) -> String? {
            if let given { return given[name] }
            return getenv(name).map { String(cString: $0) }
        }
    }

    /// The user's home from the password database (what `NSHomeDirectory()` answers without `HOME`);
    /// "/" when there is no entry.
    static func homeDirectory(of uid: uid_t) -> String {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &found) == 0, found != nil, let dir = entry.pw_dir else { return "/" }
        return String(cString: dir)
    }
}
