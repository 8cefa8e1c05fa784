// Logging under systemd: stderr lines with syslog priority prefixes, which journald understands.
import Foundation
import Logging

/// A swift-log handler writing `<N>[label] message key=value` lines to stderr, where N is the
/// syslog priority (sd-daemon(3)): journald stores each line at that priority, so `journalctl -p
/// warning` filters work. No timestamp: the journal has its own.
public struct JournalLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    let label: String

    public init(label: String, level: Logger.Level) { self.label = label; self.logLevel = level }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    public func log(level: Logger.Level, message: Logger.Message, metadata extra: Logger.Metadata?,
                    source: String, file: String, function: String, line: UInt) {
        var all = metadata
        if let extra { all.merge(extra) { $1 } }
        let tail = all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        // One write per line, each line prefixed (a message with newlines keeps its priority).
        let text = "\(message)\(tail)".split(separator: "\n", omittingEmptySubsequences: false)
            .map { "<\(Self.priority(level))>[\(source)] \($0)" }.joined(separator: "\n")
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// Whether stderr is the journal stream systemd connected (`JOURNAL_STREAM=dev:inode` matches fd 2).
    public static func stderrIsJournal(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":").compactMap { UInt64($0) }
        guard parts.count == 2 else { return false }
        var st = stat()
        guard fstat(STDERR_FILENO, &st) == 0 else { return false }
        return UInt64(st.st_dev) == parts[0] && UInt64(st.st_ino) == parts[1]
    }
}
