// One owner for libswresample's SwrContext.
import MediaWire
import CFFmpeg
import Glibc

/// Owns one SwrContext: allocated with its options, given a channel matrix when asked, initialized,
/// and freed in `deinit` — also when a step after the allocation throws.
final class FFmpegResampler {
    let pointer: OpaquePointer

    /// `matrix`: `outChannels` rows of `inChannels` gains (a downmix or an upmix recd chooses itself).
    init(from inLayout: inout AVChannelLayout, _ inFormat: AVSampleFormat, rate inRate: Int,
         to outLayout: inout AVChannelLayout, _ outFormat: AVSampleFormat, rate outRate: Int,
         matrix: [Double]? = nil, file: String? = nil) throws(FFmpegError) {
        var ctx: OpaquePointer?
        _ = try FFmpegError.check(swr_alloc_set_opts2(&ctx, &outLayout, outFormat, Int32(outRate),
                                                      &inLayout, inFormat, Int32(inRate), 0, nil),
                                  "swr_alloc_set_opts2", file: file)
        guard let ctx else { throw FFmpegError(call: "swr_alloc_set_opts2", code: -ENOMEM, file: file) }
        pointer = ctx
        if var matrix {
            _ = try FFmpegError.check(swr_set_matrix(ctx, &matrix, inLayout.nb_channels), "swr_set_matrix", file: file)
        }
        _ = try FFmpegError.check(swr_init(ctx), "swr_init", file: file)
    }

    deinit {
        var p: OpaquePointer? = pointer
        swr_free(&p)
    }
}
