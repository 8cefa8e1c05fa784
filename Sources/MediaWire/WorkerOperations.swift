// Every operation a media worker serves, each written once: its fields and the type of its reply
// (`WorkerOperation`). Objects (a decoder, a writer, a hash, a converter, a video writer) live in
// the worker between calls, one of each kind at a time; `Reset` drops them all (a worker going back
// to the pool). Raw bytes go beside the header: "the payload" below. A reply not named is `Done`.
public enum WorkerOp {
    /// `MediaProbe.probe`.
    public struct Probe: WorkerOperation {
        public typealias Reply = MediaInfo
        public var path: String
        public var fileRead: String? { path }
        public init(path: String) { self.path = path }
    }

    /// `MP4Finalizer.remux`.
    public struct Remux: WorkerOperation {
        public typealias Reply = RemuxResult
        public var source, destination: String, streams: [Int]?, container: String?, hidePriming: Bool
        public var fileRead: String? { source }
        public init(source: String, destination: String, streams: [Int]?, container: String?, hidePriming: Bool) {
            self.source = source; self.destination = destination; self.streams = streams; self.container = container; self.hidePriming = hidePriming
        }
    }

    /// `MP4Trimmer.trim`: `end` nil copies to the end; `chapters` are written into the copy.
    public struct Trim: WorkerOperation {
        public typealias Reply = TrimResult
        public var source, destination: String, start: Double, end: Double?, chapters: [MediaChapter]
        public var fileRead: String? { source }
        public init(source: String, destination: String, start: Double, end: Double?, chapters: [MediaChapter] = []) {
            self.source = source; self.destination = destination; self.start = start; self.end = end; self.chapters = chapters
        }
    }

    /// `PosterExtractor.poster`: the JPEG is the reply's payload.
    public struct Poster: WorkerOperation {
        public var path: String
        public var fileRead: String? { path }
        public init(path: String) { self.path = path }
    }

    /// Bytes to hash (SHA-256): the payload.
    public struct HashUpdate: WorkerOperation { public init() {} }
    /// The digest as 64 lower-case hex digits; the next update starts a new hash.
    public struct HashFinish: WorkerOperation { public typealias Reply = String; public init() {} }

    /// Opens the decoder (`AudioFileDecoder`).
    public struct OpenDecoder: WorkerOperation {
        public struct Reply: Codable, Sendable {
            public var sampleRate, channels: Int, duration: Double?
            public init(sampleRate: Int, channels: Int, duration: Double?) { self.sampleRate = sampleRate; self.channels = channels; self.duration = duration }
        }
        public var path: String
        public var fileRead: String? { path }
        public init(path: String) { self.path = path }
    }

    public struct DecoderSetOutput: WorkerOperation {
        public var rate, channels: Int
        public init(rate: Int, channels: Int) { self.rate = rate; self.channels = channels }
    }
    public struct DecoderSeek: WorkerOperation { public var seconds: Double; public init(seconds: Double) { self.seconds = seconds } }

    /// Decoded blocks joined until they hold `atLeast` frames (or the stream ends): one round trip
    /// per block of an hour's AAC (1024 frames) made its waveform 5× slower than ffmpeg's decode.
    /// The reply: where the first block starts and the frames joined (in the payload); nil at the end.
    public struct DecoderRead: WorkerOperation {
        public struct Block: Codable, Sendable {
            public var start: Double, frames: Int
            public init(start: Double, frames: Int) { self.start = start; self.frames = frames }
        }
        public typealias Reply = Block?
        public var atLeast: Int
        public init(atLeast: Int) { self.atLeast = atLeast }
    }

    /// Opens the audio writer (`AudioFileWriter`).
    public struct OpenWriter: WorkerOperation {
        public var path: String, encoding: AudioEncoding
        public init(path: String, encoding: AudioEncoding) { self.path = path; self.encoding = encoding }
    }

    /// Interleaved S16 frames: the payload. The reply: the samples written so far.
    public struct WriterAppend: WorkerOperation { public typealias Reply = Int64; public var frames: Int; public init(frames: Int) { self.frames = frames } }

    public struct WriterFlush: WorkerOperation { public init() {} }
    /// The reply: the samples written.
    public struct WriterFinish: WorkerOperation { public typealias Reply = Int64; public init() {} }

    /// Opens the converter of captured sound (`CapturedPCMConverter`).
    public struct OpenConverter: WorkerOperation {
        public var format: CapturedSampleFormat, rate, channels, toRate, toChannels: Int
        public init(format: CapturedSampleFormat, rate: Int, channels: Int, toRate: Int, toChannels: Int) {
            self.format = format; self.rate = rate; self.channels = channels; self.toRate = toRate; self.toChannels = toChannels
        }
    }

    /// Captured frames in the converter's input format: the payload; converted, the reply's.
    public struct Convert: WorkerOperation { public var frames: Int; public init(frames: Int) { self.frames = frames } }

    /// Opens the audio filter graph (`AudioFilterGraph`): `description` over interleaved S16 at
    /// `rate` and `channels`, out in the same form (an enhanced copy's denoise and level).
    public struct OpenFilter: WorkerOperation {
        public var description: String, rate, channels: Int
        public init(description: String, rate: Int, channels: Int) { self.description = description; self.rate = rate; self.channels = channels }
    }

    /// Interleaved S16 frames: the payload; what the graph gave out, the reply's.
    public struct Filter: WorkerOperation { public var frames: Int; public init(frames: Int) { self.frames = frames } }
    /// Ends the graph's input: what it still held is the reply's payload.
    public struct FilterDrain: WorkerOperation { public init() {} }

    /// Opens the video writer (`VideoFileWriter`).
    public struct OpenVideoWriter: WorkerOperation {
        public var path: String, video: VideoEncoding, camera: CameraFrameFormat, audio: AudioEncoding?
        public init(path: String, video: VideoEncoding, camera: CameraFrameFormat, audio: AudioEncoding?) {
            self.path = path; self.video = video; self.camera = camera; self.audio = audio
        }
    }

    /// Interleaved S16 frames for the video file's sound: the payload.
    public struct VideoAppendAudio: WorkerOperation { public var frames: Int; public init(frames: Int) { self.frames = frames } }

    public struct VideoFinishAudio: WorkerOperation { public init() {} }
    public struct VideoFlush: WorkerOperation { public init() {} }

    /// A memory file the camera frames will come in (`VideoAppendFrame` with `shared`): the
    /// descriptor passed with this request (SCM_RIGHTS), `bytes` long.
    public struct VideoShareFrames: WorkerOperation { public var bytes: Int; public init(bytes: Int) { self.bytes = bytes } }

    /// A camera frame: the payload, or when `shared` > 0 the first `shared` bytes of the memory file
    /// of `VideoShareFrames` (written by recd before the call, not touched until its reply). The
    /// reply: false when the frame was skipped (not later than the one before). `poster`: the
    /// reply's payload is the frame as a JPEG.
    public struct VideoAppendFrame: WorkerOperation {
        public typealias Reply = Bool
        public var pts: Int64, poster: Bool, shared: Int
        public init(pts: Int64, poster: Bool, shared: Int) { self.pts = pts; self.poster = poster; self.shared = shared }
    }

    public struct VideoFinishFrames: WorkerOperation { public init() {} }
    public struct VideoClose: WorkerOperation { public init() {} }

    /// A library job's worker (`recd-media … --one-job`), before its job: from now on it may read
    /// only `reading` and read and write only `writing` (files recd made for it), beside the code
    /// it has mapped (`WorkerSandbox.enterForJob`). Its first request, and only its first.
    public struct Confine: WorkerOperation {
        public var reading, writing: [String]
        public init(reading: [String], writing: [String]) { self.reading = reading; self.writing = writing }
    }

    /// Drops every object the worker holds.
    public struct Reset: WorkerOperation { public init() {} }
}
