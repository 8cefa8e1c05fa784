// Routes libav*'s log output (av_log) into swift-log instead of stderr.
import MediaWire
import CFFmpeg
import CFFmpegShim
import Foundation
import Logging
import Synchronization

public enum FFmpegLog {
    private static let target = Mutex<Logger?>(nil)

    /// Installs the callback; later libav* messages at `AV_LOG_WARNING` or worse become warnings or
    /// errors of `logger`, everything down to `AV_LOG_VERBOSE` becomes debug output.
    public static func route(to logger: Logger) {
        target.withLock { $0 = logger }
        // Below debug, libav*'s chatter is not wanted: do not even have it formatted.
        av_log_set_level(logger.logLevel <= .debug ? AV_LOG_VERBOSE : AV_LOG_WARNING)
        av_log_set_callback { _, level, format, args in
            guard let format, let args, level <= AV_LOG_VERBOSE else { return }
            var buffer = [CChar](repeating: 0, count: 1024)
            _ = vsnprintf(&buffer, buffer.count, format, args)
            let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
                .trimmingCharacters(in: .whitespacesAndNewlines)
            guard !text.isEmpty, let logger = FFmpegLog.target.withLock({ $0 }) else { return }
            let swiftLevel: Logger.Level = level <= AV_LOG_ERROR ? .error : level <= AV_LOG_WARNING ? .warning : .debug
            logger.log(level: swiftLevel, "ffmpeg: \(text)")
        }
    }
}
