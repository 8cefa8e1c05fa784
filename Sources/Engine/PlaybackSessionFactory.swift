// Where the Player's sessions come from: a decoder in a media worker and an ALSA device in recd
// (`PlaybackSession`), an in-memory stand-in in the unit tests of its state machine.
import Foundation
import MediaWorker
import Playback

/// What the Player drives of one playback: `PlaybackSession` in recd. A session is used once:
/// `start` begins it, the transport calls are applied before they return, `stop` ends it (and
/// waits for it). Blocking calls: the Player makes them through `runBlocking`, off its actor.
package protocol PlayerSession: AnyObject, Sendable {
    var device: String { get }
    /// Seconds; nil when the file does not say.
    var duration: Double? { get }
    var progress: PlaybackProgress { get }
    /// The stretches to skip (Skip Silence), before `start`.
    func skip(_ stretches: [(start: Double, end: Double)])
    /// The speed to start at (0.5-2, the pitch kept), before `start`.
    func startSpeed(_ speed: Double)
    /// Starts from `position` seconds; returns the uptime (ns) of the first audio written. `onEnd`
    /// is called once when the playback ends by itself (completed or failed), never after `stop`.
    func start(at position: Double, meterIntervalMs: Int, observer: @escaping @Sendable (PlaybackObservation) -> Void,
               onEnd: @escaping @Sendable (PlaybackEnd) -> Void) throws(PlaybackError) -> UInt64
    func setSpeed(_ speed: Double)
    func pause()
    func resume()
    func seek(to seconds: Double)
    /// Ends the playback and waits for it; idempotent.
    func stop()
}

extension PlaybackSession: PlayerSession {}

/// One playback the Player asks a factory for.
package struct PlaybackSessionRequest: Sendable {
    /// The file to play (absolute).
    var path: String
    package var device: String
    /// dB applied (level-matched playback).
    var gainDB: Double
    /// A worker that already probed the file (a video's), to decode it too.
    var lease: MediaWorkerLease?
}

/// Makes the Player's sessions.
package protocol PlaybackSessionFactory: Sendable {
    /// Opens the file's decoder and the device (so a missing file or device is said at once); nothing
    /// plays until the session's `start`. Blocking. Throws `PlaybackError`, or what the decoder threw.
    func makeSession(for playback: PlaybackSessionRequest) throws -> any PlayerSession
}

/// recd's sessions: the file decoded by a media worker, played on an ALSA device.
struct DevicePlaybackFactory: PlaybackSessionFactory {
    func makeSession(for playback: PlaybackSessionRequest) throws -> any PlayerSession {
        try PlaybackSession(path: playback.path, device: playback.device, gainDB: playback.gainDB, lease: playback.lease)
    }
}
