// Video capture from a V4L2 camera: mmap streaming I/O on a thread of its own.
import CV4L2
import Foundation
import Logging
import Synchronization

/// What to ask the camera for. The camera answers with what it can do (`V4L2CaptureSource.format`).
public struct V4L2CaptureSettings: Sendable, Equatable {
    /// Device node (`/dev/video0`).
    public var device: String
    public var width: Int
    public var height: Int
    public var fps: Int
    /// Raw pixel formats the consumer can take, best first. MJPEG is used only when the camera offers
    /// none of these (and `acceptMJPEG`).
    public var rawFormats: [FourCC]
    public var acceptMJPEG: Bool
    /// mmap buffers shared with the driver. Frames the consumer holds are not available to the driver;
    /// when it has none left it drops frames (counted from the sequence numbers).
    public var bufferCount: Int

    public init(device: String, width: Int = 1280, height: Int = 720, fps: Int = 30,
                rawFormats: [FourCC], acceptMJPEG: Bool = true, bufferCount: Int = 8) {
        self.device = device; self.width = width; self.height = height; self.fps = fps
        self.rawFormats = rawFormats; self.acceptMJPEG = acceptMJPEG; self.bufferCount = bufferCount
    }
}

/// The format the camera agreed to.
public struct V4L2NegotiatedFormat: Sendable, Equatable {
    public var pixelFormat: FourCC
    public var width: Int
    public var height: Int
    /// Bytes per line of the first plane (may be more than width × bytes per pixel).
    public var bytesPerLine: Int
    /// Largest frame in bytes.
    public var sizeImage: Int
    public var rate: FrameRate
}

/// One captured frame, still in the driver's mmap buffer. The consumer must hand it back with
/// `V4L2CaptureSource.requeue(_:)` once it is done with the bytes (and must not touch them after).
public struct V4L2Frame: @unchecked Sendable {
    public var index: Int
    public var bytes: UnsafeRawBufferPointer
    /// Capture time on CLOCK_MONOTONIC, nanoseconds (the driver's timestamp when it is monotonic,
    /// else the time it was dequeued).
    public var timestampNs: UInt64
}

/// Counters of a video capture, safe to read from any thread.
public struct VideoCaptureCounters: Sendable, Equatable {
    public var frames: Int64 = 0
    /// Frames the driver dropped (gaps in its sequence numbers): no buffer was free, or the
    /// camera's own overflow.
    public var droppedFrames: Int64 = 0
}

/// Owns one V4L2 capture device: its descriptor, its mmap buffers and the capture thread.
///
/// `init` opens the node, checks it captures and streams (VIDIOC_QUERYCAP), negotiates format, size
/// and rate, requests and maps the buffers and queues them, so a missing, busy or unsuitable camera
/// is reported at once. `start` turns streaming on and runs the loop on its own thread: poll(2), then
/// VIDIOC_DQBUF, then `deliver` with the frame still in its buffer (no copy). `stop` ends the loop;
/// `close` turns streaming off, unmaps the buffers and closes the node. A source is used once.
public final class V4L2CaptureSource: @unchecked Sendable {
    public let settings: V4L2CaptureSettings
    public let format: V4L2NegotiatedFormat
    private let node: V4L2Device
    private let buffers: [UnsafeMutableRawBufferPointer]
    private let stopRequested = Atomic<Bool>(false)
    private let counters = Mutex(VideoCaptureCounters())
    private let finished = DispatchSemaphore(value: 0)
    private let state = Mutex<(started: Bool, closed: Bool)>((false, false))
    /// Buffers the driver holds (queued, to be filled). With none, no frame can come: a consumer
    /// that holds them all (a stalled disk) is not a camera that stopped.
    private let driverBuffers = Atomic<Int>(0)

    /// No frame for this long while streaming means the camera is gone or stuck.
    static let stallLimitMs = 5000

    public init(settings: V4L2CaptureSettings) throws(CaptureError) {
        self.settings = settings
        let device = try V4L2Device(path: settings.device)
        do throws(CaptureError) {
            let caps = try device.capabilities()
            guard caps.canCapture else {
                let detail = caps.caps & UInt32(V4L2_CAP_VIDEO_CAPTURE_MPLANE) != 0
                    ? "'\(caps.card)' (\(caps.driver)) captures only multi-planar video (V4L2_CAP_VIDEO_CAPTURE_MPLANE), which recd does not take"
                    : "'\(caps.card)' (\(caps.driver)) cannot capture video"
                throw CaptureError.videoUnsupported(device: settings.device, detail: detail)
            }
            guard caps.canStream else {
                throw CaptureError.videoUnsupported(device: settings.device, detail: "'\(caps.card)' (\(caps.driver)) has no streaming I/O")
            }
            format = try Self.negotiate(device, settings)
            buffers = try Self.mapBuffers(device, count: settings.bufferCount)
        } catch {
            device.close()
            throw error
        }
        self.node = device
        // Every buffer goes to the driver; from here on each is either queued or held by a consumer.
        for index in buffers.indices {
            do { try queue(index) } catch {
                // deinit runs too (every property is set): mark closed so it does not release again.
                state.withLock { $0.closed = true }
                release()
                throw error
            }
        }
    }

    // The capture thread holds this source until it ends, so a source released without `close()`
    // is not streaming any more: it is released here, never a crash in a deinit.
    deinit {
        if !state.withLock({ $0.closed }) { release() }
    }

    /// Chooses the pixel format (first of `rawFormats` the camera has; MJPEG only when it has none),
    /// the size nearest the one asked for, sets both (VIDIOC_S_FMT) and the rate (VIDIOC_S_PARM), and
    /// returns what the driver actually set.
    private static func negotiate(_ device: V4L2Device, _ s: V4L2CaptureSettings) throws(CaptureError) -> V4L2NegotiatedFormat {
        let offered = device.formats()
        var chosen: FourCC?
        for want in s.rawFormats where offered.contains(where: { $0.fourcc == want }) { chosen = want; break }
        if chosen == nil, s.acceptMJPEG {
            chosen = offered.first(where: { $0.fourcc == .mjpeg })?.fourcc ?? offered.first(where: { $0.fourcc == .jpeg })?.fourcc
        }
        guard let pixelFormat = chosen else {
            let names = offered.map(\.fourcc.description).joined(separator: " ")
            throw .videoUnsupported(device: s.device, detail: "it offers no pixel format recd can encode (it has: \(names.isEmpty ? "none" : names))")
        }
        let (width, height) = nearestSize(device.sizes(pixelFormat), width: s.width, height: s.height)

        var fmt = v4l2_format()
        fmt.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        fmt.fmt.pix.width = UInt32(width)
        fmt.fmt.pix.height = UInt32(height)
        fmt.fmt.pix.pixelformat = pixelFormat.rawValue
        fmt.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        try device.check(CV4L2_VIDIOC_S_FMT, &fmt, "VIDIOC_S_FMT")
        let got = fmt.fmt.pix
        guard got.pixelformat == pixelFormat.rawValue else {
            throw .videoUnsupported(device: s.device, detail: "it refused pixel format \(pixelFormat) (it set \(FourCC(rawValue: got.pixelformat)))")
        }
        if got.field != V4L2_FIELD_NONE.rawValue && got.field != V4L2_FIELD_ANY.rawValue {
            throw .videoUnsupported(device: s.device, detail: "it delivers interlaced fields (field order \(got.field)); recd records progressive video")
        }

        var parm = v4l2_streamparm()
        parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        parm.parm.capture.timeperframe = v4l2_fract(numerator: 1, denominator: UInt32(max(1, s.fps)))
        var rate = FrameRate(s.fps)
        if device.ioctl(CV4L2_VIDIOC_S_PARM, &parm) == nil,
           parm.parm.capture.timeperframe.numerator > 0, parm.parm.capture.timeperframe.denominator > 0 {
            let tpf = parm.parm.capture.timeperframe
            rate = FrameRate(Int(tpf.denominator), Int(tpf.numerator))
        }
        return V4L2NegotiatedFormat(pixelFormat: pixelFormat, width: Int(got.width), height: Int(got.height),
                                    bytesPerLine: Int(got.bytesperline), sizeImage: Int(got.sizeimage), rate: rate)
    }

    /// The size to use of those the camera offers: the smallest that covers the one asked for
    /// (same aspect ratio first), else the largest it has (a camera asked for more than it can give
    /// gives its best). A camera that lists no sizes keeps the one asked for (the driver adjusts it
    /// in VIDIOC_S_FMT).
    public static func nearestSize(_ sizes: [(width: Int, height: Int)], width: Int, height: Int) -> (Int, Int) {
        guard !sizes.isEmpty else { return (width, height) }
        let aspect = Double(width) / Double(max(1, height))
        func sameAspect(_ s: (width: Int, height: Int)) -> Bool {
            abs(Double(s.width) / Double(max(1, s.height)) - aspect) / aspect < 0.01
        }
        let covering = sizes.filter { $0.width >= width && $0.height >= height }
        if !covering.isEmpty {
            let pool = covering.contains(where: sameAspect) ? covering.filter(sameAspect) : covering
            let best = pool.min { $0.width * $0.height < $1.width * $1.height }!
            return (best.width, best.height)
        }
        let best = sizes.max { a, b in
            a.width * a.height != b.width * b.height ? a.width * a.height < b.width * b.height : !sameAspect(a) && sameAspect(b)
        }!
        return (best.width, best.height)
    }

    private static func mapBuffers(_ device: V4L2Device, count: Int) throws(CaptureError) -> [UnsafeMutableRawBufferPointer] {
        var req = v4l2_requestbuffers()
        req.count = UInt32(count)
        req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        req.memory = V4L2_MEMORY_MMAP.rawValue
        // EBUSY here: another process is streaming from the camera.
        try device.check(CV4L2_VIDIOC_REQBUFS, &req, "VIDIOC_REQBUFS")
        guard req.count >= 2 else {
            throw .videoUnsupported(device: device.path, detail: "it granted \(req.count) buffer(s); at least 2 are needed")
        }
        var mapped: [UnsafeMutableRawBufferPointer] = []
        for index in 0..<Int(req.count) {
            var buf = v4l2_buffer()
            buf.index = UInt32(index)
            buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            buf.memory = V4L2_MEMORY_MMAP.rawValue
            do throws(CaptureError) {
                try device.check(CV4L2_VIDIOC_QUERYBUF, &buf, "VIDIOC_QUERYBUF")
                guard let p = CV4L2_mmap(device.fd, Int(buf.length), off_t(buf.m.offset)) else {
                    throw CaptureError.videoUnavailable(device: device.path, call: "mmap", errno: errno)
                }
                mapped.append(UnsafeMutableRawBufferPointer(start: p, count: Int(buf.length)))
            } catch {
                for m in mapped { unmap(m, device: device.path) }
                throw error
            }
        }
        return mapped
    }

    private func queue(_ index: Int) throws(CaptureError) {
        var buf = v4l2_buffer()
        buf.index = UInt32(index)
        buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        buf.memory = V4L2_MEMORY_MMAP.rawValue
        if let e = node.ioctl(CV4L2_VIDIOC_QBUF, &buf) {
            throw .videoFailed(device: settings.device, call: "VIDIOC_QBUF", errno: e)
        }
        driverBuffers.add(1, ordering: .relaxed)
    }

    /// Gives a delivered frame's buffer back to the driver. Any thread. After `stop()` it does nothing.
    public func requeue(_ index: Int) {
        // Under the state lock so that a requeue cannot race the unmapping in stop().
        state.withLock { s in
            guard !s.closed else { return }
            do { try queue(index) } catch {
                // The camera goes on with one buffer fewer (frames it cannot fill are dropped and counted).
                Self.logger.warning("\(error): buffer \(index) is lost to this recording")
            }
        }
    }

    /// Counters so far.
    public var stats: VideoCaptureCounters { counters.withLock { $0 } }

    /// Turns streaming on and starts the capture thread. `deliver` gets each frame on that thread;
    /// it may keep the frame (its buffer) until it calls `requeue`. `onEnd` is called once on that
    /// thread when capture ends: nil after `stop()`, else the error that ended it.
    public func start(deliver: @escaping @Sendable (V4L2Frame) -> Void,
                      onEnd: @escaping @Sendable ((any Error)?) -> Void) throws(CaptureError) {
        let already = state.withLock { s -> Bool in defer { s.started = true }; return s.started }
        precondition(!already, "V4L2CaptureSource.start called twice")
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        if let e = node.ioctl(CV4L2_VIDIOC_STREAMON, &type) {
            state.withLock { $0.started = false }
            throw .videoUnavailable(device: settings.device, call: "VIDIOC_STREAMON", errno: e)
        }
        let thread = Thread { [self] in
            onEnd(self.captureLoop(deliver: deliver))
            self.finished.signal()
        }
        thread.name = "recd-video \(settings.device)"
        thread.qualityOfService = .userInteractive
        thread.start()
    }

    /// Ends capture (seen within one 200 ms poll) and joins the thread: no frame is delivered after
    /// it returns. The buffers stay mapped, so frames a consumer still holds stay readable until
    /// `close()`. Blocking; idempotent.
    public func stop() {
        stopRequested.store(true, ordering: .relaxed)
        let started = state.withLock { $0.started }
        if started { finished.wait(); finished.signal() }
    }

    /// `stop()`, then streaming off, buffers unmapped, device closed. Frames still held by a consumer
    /// must not be read afterwards. Idempotent.
    public func close() {
        stop()
        state.withLock { s in
            guard !s.closed else { return }
            s.closed = true
            release()
        }
    }

    /// STREAMOFF (which also takes every buffer back from the driver), munmap, close.
    /// Failures are logged with the device and the call (an unplugged camera answers STREAMOFF with
    /// ENODEV: the kernel has already stopped it), and the rest is released anyway.
    private func release() {
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        if let e = node.ioctl(CV4L2_VIDIOC_STREAMOFF, &type) {
            Self.logger.warning("camera '\(settings.device)': VIDIOC_STREAMOFF failed: \(String(cString: strerror(e))) (errno \(e))")
        }
        for m in buffers { Self.unmap(m, device: settings.device) }
        node.close()
    }

    private static func unmap(_ m: UnsafeMutableRawBufferPointer, device: String) {
        if CV4L2_munmap(m.baseAddress, m.count) != 0 {
            let e = errno
            logger.warning("camera '\(device)': munmap of a \(m.count)-byte buffer failed: \(String(cString: strerror(e))) (errno \(e))")
        }
    }

    static let logger = Logger(label: "recd.v4l2")

    private func captureLoop(deliver: (V4L2Frame) -> Void) -> CaptureError? {
        let path = settings.device
        var pfd = pollfd(fd: node.fd, events: Int16(POLLIN), revents: 0)
        var lastFrameAt = DispatchTime.now().uptimeNanoseconds
        var lastSequence: UInt32?
        let stallLimitNs = UInt64(Self.stallLimitMs) * 1_000_000
        while !stopRequested.load(ordering: .relaxed) {
            let ready = poll(&pfd, 1, 200)
            if ready < 0 {
                if errno == EINTR { continue }
                return .videoFailed(device: path, call: "poll", errno: errno)
            }
            if ready == 0 || pfd.revents & Int16(POLLIN) == 0 {
                // POLLERR without POLLIN: the device is gone (unplugged: ioctls answer ENODEV) or
                // streaming stopped under us; DQBUF below tells which.
                if ready > 0 && pfd.revents & Int16(POLLERR | POLLHUP) != 0 {
                    var buf = v4l2_buffer()
                    buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
                    buf.memory = V4L2_MEMORY_MMAP.rawValue
                    let e = node.ioctl(CV4L2_VIDIOC_DQBUF, &buf) ?? EIO
                    if e != EAGAIN { return .videoFailed(device: path, call: "VIDIOC_DQBUF", errno: e) }
                    usleep(10_000)
                }
                if driverBuffers.load(ordering: .relaxed) == 0 {
                    lastFrameAt = DispatchTime.now().uptimeNanoseconds
                } else if DispatchTime.now().uptimeNanoseconds &- lastFrameAt >= stallLimitNs {
                    return .videoNoData(device: path, waitedMs: Self.stallLimitMs)
                }
                continue
            }
            var buf = v4l2_buffer()
            buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            buf.memory = V4L2_MEMORY_MMAP.rawValue
            if let e = node.ioctl(CV4L2_VIDIOC_DQBUF, &buf) {
                if e == EAGAIN { continue }
                return .videoFailed(device: path, call: "VIDIOC_DQBUF", errno: e)
            }
            driverBuffers.add(-1, ordering: .relaxed)
            let index = Int(buf.index)
            // A buffer the driver marks as damaged goes straight back (its sequence number is seen, so
            // the next frame does not count it again as a gap).
            if buf.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 || buf.bytesused == 0 {
                requeue(index)
                lastSequence = buf.sequence
                counters.withLock { $0.droppedFrames += 1 }
                continue
            }
            lastFrameAt = DispatchTime.now().uptimeNanoseconds
            let gap: Int64
            if let last = lastSequence, buf.sequence > last &+ 1 { gap = Int64(buf.sequence &- last &- 1) } else { gap = 0 }
            lastSequence = buf.sequence
            counters.withLock { $0.frames += 1; $0.droppedFrames += gap }
            let monotonic = buf.flags & UInt32(V4L2_BUF_FLAG_TIMESTAMP_MASK) == UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
            let ts: UInt64
            if monotonic && (buf.timestamp.tv_sec != 0 || buf.timestamp.tv_usec != 0) {
                ts = UInt64(buf.timestamp.tv_sec) * 1_000_000_000 + UInt64(buf.timestamp.tv_usec) * 1000
            } else {
                ts = MonotonicClock.nowNs()
            }
            let bytes = UnsafeRawBufferPointer(start: buffers[index].baseAddress, count: min(Int(buf.bytesused), buffers[index].count))
            deliver(V4L2Frame(index: index, bytes: bytes, timestampNs: ts))
        }
        return nil
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the clock V4L2 and ALSA timestamps are on.
public enum MonotonicClock {
    public static func nowNs() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
    }
}
