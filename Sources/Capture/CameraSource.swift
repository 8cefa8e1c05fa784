// What a video recording needs of a camera: V4L2's (V4L2CaptureSource), or memory (MemoryCamera, for
// the engine's unit tests).

/// A source of camera frames, opened (by its initializer, which negotiates `format`) and used once:
/// `start`, then `stop`, then `close`.
///
/// Threads: the source owns the thread that delivers frames; `deliver` and `onEnd` run on it. A
/// delivered frame's bytes stay the consumer's until it calls `requeue` with the frame's index (any
/// thread); while it holds every buffer, the camera drops frames (counted in `stats`).
public protocol CameraSource: AnyObject, Sendable {
    /// The device's name, for messages and errors (`/dev/video0`).
    var device: String { get }
    /// What the camera agreed to deliver.
    var format: V4L2NegotiatedFormat { get }
    /// Counters so far.
    var stats: VideoCaptureCounters { get }
    /// Starts the delivering thread: `deliver` gets each frame; `onEnd` is called once when capture
    /// ends: nil after `stop()`, else the error that ended it. Throws when streaming cannot start.
    func start(deliver: @escaping @Sendable (V4L2Frame) -> Void,
               onEnd: @escaping @Sendable ((any Error)?) -> Void) throws(CaptureError)
    /// Gives a delivered frame's buffer back. After `close()` it does nothing.
    func requeue(_ index: Int)
    /// Ends capture and joins the thread; buffers stay readable until `close()`. Blocking; idempotent.
    func stop()
    /// `stop()`, then the device and its buffers released. Idempotent.
    func close()
}

extension V4L2CaptureSource: CameraSource {
    public var device: String { settings.device }
}
