// A camera that delivers frames made in memory instead of a device's: for unit tests of what sits
// behind a camera (the video recording session), without V4L2 or a VM.
import Foundation
import Synchronization

/// Delivers `YU12` (planar 4:2:0) frames of `width`×`height` at `fps`, paced, on a thread of its own,
/// from `bufferCount` buffers as a driver does: a frame for which no buffer is free (the consumer
/// holds them all) is dropped and counted. Each frame's luma is one level, stepping by 8 per frame,
/// so a frame can be told from the next. It can lose its "device" at a frame given up front
/// (`failAtFrame`): capture then ends with the error a V4L2 camera's does when it is unplugged.
public final class MemoryCamera: CameraSource, @unchecked Sendable {
    public let device: String
    public let format: V4L2NegotiatedFormat
    private let failAtFrame: Int64?
    private let buffers: [UnsafeMutableRawBufferPointer]

    private struct Control {
        var started = false
        var stopRequested = false
        var closed = false
        var free: [Int]
        var counters = VideoCaptureCounters()
    }
    private let control: Mutex<Control>
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    public init(device: String = "memory-camera", width: Int = 64, height: Int = 48, fps: Int = 15, bufferCount: Int = 4,
                failAtFrame: Int64? = nil) {
        precondition(width % 2 == 0 && height % 2 == 0 && fps > 0 && bufferCount > 0)
        let size = width * height * 3 / 2
        self.device = device
        format = V4L2NegotiatedFormat(pixelFormat: FourCC("YU12"), width: width, height: height, bytesPerLine: width,
                                      sizeImage: size, rate: FrameRate(fps))
        self.failAtFrame = failAtFrame
        buffers = (0..<bufferCount).map { _ in
            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 64)
            b.initializeMemory(as: UInt8.self, repeating: 128)   // chroma: grey
            return b
        }
        control = Mutex(Control(free: Array(0..<bufferCount)))
    }

    deinit { for b in buffers { b.deallocate() } }

    public var stats: VideoCaptureCounters { control.withLock { $0.counters } }

    public func start(deliver: @escaping @Sendable (V4L2Frame) -> Void,
                      onEnd: @escaping @Sendable ((any Error)?) -> Void) throws(CaptureError) {
        let already = control.withLock { c -> Bool in defer { c.started = true }; return c.started }
        precondition(!already, "MemoryCamera.start called twice")
        let thread = Thread { [self] in
            onEnd(self.deliverLoop(deliver))
            self.finished.signal()
        }
        thread.name = "recd-video \(device)"
        thread.start()
    }

    public func requeue(_ index: Int) {
        control.withLock { c in if !c.closed { c.free.append(index) } }
    }

    public func stop() {
        let started = control.withLock { c -> Bool in c.stopRequested = true; return c.started }
        wake.signal()
        if started { finished.wait(); finished.signal() }
    }

    public func close() {
        stop()
        control.withLock { $0.closed = true }
    }

    private enum Next { case stop, fail, drop, frame(Int) }

    private func deliverLoop(_ deliver: (V4L2Frame) -> Void) -> CaptureError? {
        let periodNs = 1_000_000_000 / UInt64(format.rate.numerator)
        let startNs = MonotonicClock.nowNs()
        var n: UInt64 = 0
        while true {
            let due = startNs + n * periodNs
            let now = MonotonicClock.nowNs()
            if due > now { _ = wake.wait(timeout: .now() + .nanoseconds(Int(due - now))) }
            n += 1
            let next: Next = control.withLock { c in
                if c.stopRequested { return .stop }
                if let failAtFrame, c.counters.frames + c.counters.droppedFrames >= failAtFrame { return .fail }
                guard !c.free.isEmpty else { c.counters.droppedFrames += 1; return .drop }
                c.counters.frames += 1
                return .frame(c.free.removeFirst())
            }
            switch next {
            case .stop: return nil
            // What a V4L2 camera answers once it is unplugged.
            case .fail: return .videoFailed(device: device, call: "VIDIOC_DQBUF", errno: ENODEV)
            case .drop: continue
            case .frame(let index):
                let buffer = buffers[index]
                buffer.prefix(format.width * format.height).initializeMemory(as: UInt8.self, repeating: UInt8(truncatingIfNeeded: n &* 8))
                deliver(V4L2Frame(index: index, bytes: UnsafeRawBufferPointer(buffer), timestampNs: MonotonicClock.nowNs()))
            }
        }
    }
}
