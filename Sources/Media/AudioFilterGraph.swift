// One owner for a libavfilter graph of audio filters: interleaved S16 in, interleaved S16 out.
import CFFmpeg
import CFFmpegShim
import Foundation
import MediaWire

/// libavfilter, loaded by the first graph (`dlopen`), not linked: it brings 32 more libraries
/// (rubberband, flite, zimg, zmq, …) that every media worker would otherwise load at each start —
/// 20–35 ms and 12 MB more per worker here — for a job that only Enhance runs.
struct AVFilterLibrary: @unchecked Sendable {
    typealias Graph = UnsafeMutablePointer<AVFilterGraph>
    typealias Context = UnsafeMutablePointer<AVFilterContext>
    typealias InOut = UnsafeMutablePointer<AVFilterInOut>
    let graphAlloc: @convention(c) () -> Graph?
    let graphFree: @convention(c) (UnsafeMutablePointer<Graph?>?) -> Void
    let getByName: @convention(c) (UnsafePointer<CChar>?) -> UnsafePointer<AVFilter>?
    let createFilter: @convention(c) (UnsafeMutablePointer<Context?>?, UnsafePointer<AVFilter>?, UnsafePointer<CChar>?,
                                      UnsafePointer<CChar>?, UnsafeMutableRawPointer?, Graph?) -> Int32
    let inOutAlloc: @convention(c) () -> InOut?
    let inOutFree: @convention(c) (UnsafeMutablePointer<InOut?>?) -> Void
    let parse: @convention(c) (Graph?, UnsafePointer<CChar>?, UnsafeMutablePointer<InOut?>?, UnsafeMutablePointer<InOut?>?,
                               UnsafeMutableRawPointer?) -> Int32
    let config: @convention(c) (Graph?, UnsafeMutableRawPointer?) -> Int32
    let addFrame: @convention(c) (Context?, UnsafeMutablePointer<AVFrame>?) -> Int32
    let getFrame: @convention(c) (Context?, UnsafeMutablePointer<AVFrame>?) -> Int32

    /// The library of the major version recd was built with (its headers' ABI).
    static let soname = "libavfilter.so.\(LIBAVFILTER_VERSION_MAJOR)"

    static let shared: Result<AVFilterLibrary, FFmpegError> = {
        // First beside the libavcodec this worker loaded (the same FFmpeg, found however it was:
        // a job's sandbox no longer reads the loader's cache, so a library found only through
        // ld.so.conf, such as /usr/local/lib, would not be found by its name alone), then by name.
        let beside = recd_avcodec_library_path().map { (String(cString: $0) as NSString).deletingLastPathComponent + "/" + soname }
        guard let handle = beside.flatMap({ dlopen($0, RTLD_NOW | RTLD_LOCAL) }) ?? dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
            let why = dlerror().map { String(cString: $0) } ?? "not found"
            return .failure(FFmpegError(call: "dlopen", code: -ENOENT, file: soname, message: why))
        }
        func load<T>(_ name: String, _: T.Type) throws(FFmpegError) -> T {
            guard let symbol = dlsym(handle, name) else { throw FFmpegError(call: "dlsym", code: -ENOENT, file: soname, message: "no \(name)") }
            return unsafeBitCast(symbol, to: T.self)
        }
        do throws(FFmpegError) {
            return .success(AVFilterLibrary(
                graphAlloc: try load("avfilter_graph_alloc", (@convention(c) () -> Graph?).self),
                graphFree: try load("avfilter_graph_free", (@convention(c) (UnsafeMutablePointer<Graph?>?) -> Void).self),
                getByName: try load("avfilter_get_by_name", (@convention(c) (UnsafePointer<CChar>?) -> UnsafePointer<AVFilter>?).self),
                createFilter: try load("avfilter_graph_create_filter", (@convention(c) (UnsafeMutablePointer<Context?>?, UnsafePointer<AVFilter>?, UnsafePointer<CChar>?,
                                                                                        UnsafePointer<CChar>?, UnsafeMutableRawPointer?, Graph?) -> Int32).self),
                inOutAlloc: try load("avfilter_inout_alloc", (@convention(c) () -> InOut?).self),
                inOutFree: try load("avfilter_inout_free", (@convention(c) (UnsafeMutablePointer<InOut?>?) -> Void).self),
                parse: try load("avfilter_graph_parse_ptr", (@convention(c) (Graph?, UnsafePointer<CChar>?, UnsafeMutablePointer<InOut?>?, UnsafeMutablePointer<InOut?>?,
                                                                             UnsafeMutableRawPointer?) -> Int32).self),
                config: try load("avfilter_graph_config", (@convention(c) (Graph?, UnsafeMutableRawPointer?) -> Int32).self),
                addFrame: try load("av_buffersrc_add_frame", (@convention(c) (Context?, UnsafeMutablePointer<AVFrame>?) -> Int32).self),
                getFrame: try load("av_buffersink_get_frame", (@convention(c) (Context?, UnsafeMutablePointer<AVFrame>?) -> Int32).self)))
        } catch {
            return .failure(error)
        }
    }()
}

/// Runs `description` (filters as `ffmpeg -af` takes them, e.g. `highpass=f=80,afftdn`) over
/// interleaved S16 frames at one rate and channel count; what comes out has the same rate, channels
/// and sample format (the graph ends in an `aformat` that says so, so a filter that resamples inside
/// is brought back). The graph and its frames are freed in `deinit`.
///
/// Not thread-safe: one thread calls every method.
public final class AudioFilterGraph {
    public let description: String
    public let rate: Int
    public let channels: Int
    private let lib: AVFilterLibrary
    private var graph: UnsafeMutablePointer<AVFilterGraph>?
    private let source: UnsafeMutablePointer<AVFilterContext>
    private let sink: UnsafeMutablePointer<AVFilterContext>
    private var pulled: UnsafeMutablePointer<AVFrame>?
    private var framesIn: Int64 = 0
    private var drained = false

    public init(description: String, rate: Int, channels: Int) throws(FFmpegError) {
        guard (1...2).contains(channels), (8000...192_000).contains(rate) else {
            throw FFmpegError(call: "avfilter_graph_config", code: -EINVAL, file: nil, message: "\(channels) channel(s) at \(rate) Hz: 1 or 2 channels at 8–192 kHz")
        }
        self.description = description; self.rate = rate; self.channels = channels
        let lib = try AVFilterLibrary.shared.get()
        self.lib = lib
        var made: UnsafeMutablePointer<AVFilterGraph>? = lib.graphAlloc()
        guard let graph = made else { throw FFmpegError(call: "avfilter_graph_alloc", code: -ENOMEM) }
        // Until the graph is owned, a throw frees it (its filters with it).
        var built = false
        defer { if !built { lib.graphFree(&made) } }
        let layout = channels == 1 ? "mono" : "stereo"
        var src: UnsafeMutablePointer<AVFilterContext>?
        try FFmpegError.check(lib.createFilter(&src, lib.getByName("abuffer"), "in",
                                                           "time_base=1/\(rate):sample_rate=\(rate):sample_fmt=s16:channel_layout=\(layout)", nil, graph),
                              "avfilter_graph_create_filter (abuffer)")
        var snk: UnsafeMutablePointer<AVFilterContext>?
        try FFmpegError.check(lib.createFilter(&snk, lib.getByName("abuffersink"), "out", nil, nil, graph),
                              "avfilter_graph_create_filter (abuffersink)")
        guard let src, let snk else { throw FFmpegError(call: "avfilter_graph_create_filter", code: -ENOMEM) }
        // The graph's open ends, as `avfilter_graph_parse_ptr` names them: its input is fed by "in",
        // its output feeds "out".
        var outputs = lib.inOutAlloc()
        var inputs = lib.inOutAlloc()
        defer { lib.inOutFree(&outputs); lib.inOutFree(&inputs) }
        guard let o = outputs, let i = inputs else { throw FFmpegError(call: "avfilter_inout_alloc", code: -ENOMEM) }
        o.pointee.name = av_strdup("in"); o.pointee.filter_ctx = src; o.pointee.pad_idx = 0; o.pointee.next = nil
        i.pointee.name = av_strdup("out"); i.pointee.filter_ctx = snk; i.pointee.pad_idx = 0; i.pointee.next = nil
        let whole = "\(description),aformat=sample_fmts=s16:sample_rates=\(rate):channel_layouts=\(layout)"
        try FFmpegError.check(lib.parse(graph, whole, &inputs, &outputs, nil), "avfilter_graph_parse_ptr", file: description)
        try FFmpegError.check(lib.config(graph, nil), "avfilter_graph_config", file: description)
        guard let frame = av_frame_alloc() else { throw FFmpegError(call: "av_frame_alloc", code: -ENOMEM) }
        self.graph = graph; source = src; sink = snk; pulled = frame
        built = true
    }

    deinit {
        av_frame_free(&pulled)
        lib.graphFree(&graph)
    }

    /// Filters `frames` interleaved frames; returns what the graph gave out so far (filters that
    /// look ahead give it later: `drain` returns the rest).
    public func process(_ samples: UnsafeBufferPointer<Int16>, frames: Int) throws(FFmpegError) -> [Int16] {
        guard !drained else { throw FFmpegError(call: "av_buffersrc_add_frame", code: recd_averror_eof(), file: description) }
        guard frames > 0 else { return [] }
        guard samples.count >= frames * channels else { throw FFmpegError(call: "av_buffersrc_add_frame", code: -EINVAL, file: description) }
        var frame = av_frame_alloc()
        guard let f = frame else { throw FFmpegError(call: "av_frame_alloc", code: -ENOMEM) }
        defer { av_frame_free(&frame) }
        f.pointee.format = AV_SAMPLE_FMT_S16.rawValue
        f.pointee.sample_rate = Int32(rate)
        f.pointee.nb_samples = Int32(frames)
        f.pointee.pts = framesIn
        av_channel_layout_default(&f.pointee.ch_layout, Int32(channels))
        try FFmpegError.check(av_frame_get_buffer(f, 0), "av_frame_get_buffer", file: description)
        memcpy(f.pointee.data.0!, samples.baseAddress!, frames * channels * 2)
        framesIn += Int64(frames)
        try FFmpegError.check(lib.addFrame(source, f), "av_buffersrc_add_frame", file: description)
        return try pull()
    }

    /// Ends the input and returns what the graph still held.
    public func drain() throws(FFmpegError) -> [Int16] {
        guard !drained else { return [] }
        drained = true
        try FFmpegError.check(lib.addFrame(source, nil), "av_buffersrc_add_frame (end)", file: description)
        return try pull()
    }

    private func pull() throws(FFmpegError) -> [Int16] {
        var out: [Int16] = []
        let frame = pulled!
        while true {
            let rc = lib.getFrame(sink, frame)
            if rc == recd_averror_eagain() || rc == recd_averror_eof() { return out }
            try FFmpegError.check(rc, "av_buffersink_get_frame", file: description)
            let count = Int(frame.pointee.nb_samples) * channels
            frame.pointee.data.0!.withMemoryRebound(to: Int16.self, capacity: count) {
                out.append(contentsOf: UnsafeBufferPointer(start: $0, count: count))
            }
            av_frame_unref(frame)
        }
    }
}
