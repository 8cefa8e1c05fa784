// alsa-lib prints its errors to stderr unless told otherwise; route them into the daemon's log.
import CAlsaShim
import Logging
import Synchronization

public enum AlsaLog {
    private static let target = Mutex<Logger?>(nil)

    /// From now on, alsa-lib's error messages (e.g. "Unknown PCM foo") become warnings of `logger`.
    public static func route(to logger: Logger) {
        target.withLock { $0 = logger }
        recd_alsa_set_error_callback { file, line, function, err, message in
            guard let message, let logger = AlsaLog.target.withLock({ $0 }) else { return }
            let fn = function.map { String(cString: $0) } ?? "?"
            logger.warning("alsa-lib: \(String(cString: message))", metadata: [
                "alsa.function": "\(fn)", "alsa.err": "\(err)",
                "alsa.source": "\(file.map { String(cString: $0) } ?? "?"):\(line)",
            ])
        }
    }
}
