// alsa-lib prints its errors to stderr unless told otherwise; route them into the daemon's log.
import CAlsaShim
import Foundation
import Logging
import Synchronization

public enum AlsaLog {
    private static let target = Mutex<Logger?>(nil)

    /// From now on, alsa-lib's error messages (e.g. "Unknown PCM foo") become warnings of `logger`.
    public static func route(to logger: Logger) {
        target.withLock { $0 = logger }
        recd_alsa_set_error_callback { file, line, function, err, message in
            guard let message, !AlsaLog.isQuiet, let logger = AlsaLog.target.withLock({ $0 }) else { return }
            let fn = function.map { String(cString: $0) } ?? "?"
            logger.warning("alsa-lib: \(String(cString: message))", metadata: [
                "alsa.function": "\(fn)", "alsa.err": "\(err)",
                "alsa.source": "\(file.map { String(cString: $0) } ?? "?"):\(line)",
            ])
        }
    }

    /// Runs `body` with alsa-lib's messages on this thread dropped. alsa-lib calls its error handler
    /// on the thread that hit the error, so other threads' messages still get through. For
    /// enumerating devices, where alsa-lib reports every PCM definition a card does not have (`aplay
    /// -L` prints the same pages of "Unknown parameter CARD" to stderr).
    static func quietly<T>(_ body: () throws -> T) rethrows -> T {
        Thread.current.threadDictionary[quietKey] = true
        defer { Thread.current.threadDictionary[quietKey] = nil }
        return try body()
    }

    private static let quietKey = "recd.alsa.quiet"
    private static var isQuiet: Bool { Thread.current.threadDictionary[quietKey] != nil }
}
