// Errors from libav*: every case names the C call and the file it was working on.
import CFFmpeg
import CFFmpegShim
import Foundation
import MediaWire

extension FFmpegError {
    public init(call: String, code: Int32, file: String? = nil) {
        self.init(call: call, code: code, file: file, message: FFmpegError.describe(code))
    }

    static func describe(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        av_strerror(code, &buffer, buffer.count)
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Throws unless `rc` is >= 0.
    @discardableResult
    static func check(_ rc: Int32, _ call: String, file: String? = nil) throws(FFmpegError) -> Int32 {
        if rc < 0 { throw FFmpegError(call: call, code: rc, file: file) }
        return rc
    }
}
