// recd under systemd: readiness, status lines, watchdog pings, stopping notice.
import Engine
import Foundation
import RecdAPI
import ServiceLifecycle

/// Keeps the service manager's `STATUS=` line saying what recd does (idle / recording '…' /
/// playing '…'), and pings the watchdog at half of `WatchdogSec=` — only when the recorder and the
/// player both answer, so a wedged engine gets the unit restarted.
struct SystemdStatusService: Service {
    let engine: Engine
    let notifier: SystemdNotifier

    func run() async throws {
        // A service that returns before shutdown takes the whole group down: idle until then.
        guard notifier.isActive else { try? await gracefulShutdown(); return }
        let (id, events) = engine.events.subscribe(types: [.recordingStarted, .recordingStopped, .recordingPaused,
                                                                     .recordingResumed, .playbackStarted, .playbackEnded, .listenStatus],
                                                          heartbeats: false)
        let watchdog = notifier.watchdogInterval
        try? await cancelWhenGracefulShutdown {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    var recording: String?, playing: String?, paused = false, listening = false
                    for await delivery in events {
                        guard case .event(let e) = delivery else { continue }
                        switch e.payload {
                        case .recordingStarted(let r): recording = r.title; paused = false
                        case .recordingStopped: recording = nil
                        case .recordingPaused: paused = true
                        case .recordingResumed: paused = false
                        case .playbackStarted(let p): playing = p.recording.title
                        case .playbackEnded: playing = nil
                        case .listenStatus(let l): listening = l.armed
                        default: continue
                        }
                        notifier.notify(SystemdNotifier.statusLine(Self.status(recording: recording, paused: paused, playing: playing,
                                                                               listening: listening)))
                    }
                }
                if let watchdog {
                    group.addTask {
                        while !Task.isCancelled {
                            // Both actors answer: the engine is alive.
                            _ = await engine.recorder.active()
                            _ = await engine.player.status()
                            notifier.notify("WATCHDOG=1")
                            try await Task.sleep(for: watchdog)
                        }
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        }
        engine.events.unsubscribe(id)
        // The event streams end when the sessions stop, the shutdown's first step, before it is this
        // service's turn: a service that returns before it is asked to fails the group (recd exited 1
        // on every SIGTERM under a manager, and the repeated STOPPING=1 was skipped).
        try? await gracefulShutdown()
    }

    /// `listening`: armed (a person's privacy: said at all times while it is).
    static func status(recording: String?, paused: Bool = false, playing: String?, listening: Bool = false) -> String {
        var parts: [String] = listening ? ["listening for speech"] : []
        if let recording { parts.append("\(paused ? "paused recording" : "recording") '\(recording)'") }
        if let playing { parts.append("playing '\(playing)'") }
        return parts.isEmpty ? "idle" : parts.joined(separator: "; ")
    }
}

/// The engine's background loudness measurement, for as long as recd runs.
struct LoudnessPassService: Service {
    let engine: Engine
    func run() async throws {
        await cancelWhenGracefulShutdown { await engine.loudnessPass.run() }
    }
}

/// The engine's chapter pass (markers into saved files), for as long as recd runs.
struct ChapterPassService: Service {
    let engine: Engine
    func run() async throws {
        await cancelWhenGracefulShutdown { await engine.chapterPass.run() }
    }
}

/// The engine's background transcription, for as long as recd runs.
struct TranscriptionPassService: Service {
    let engine: Engine
    func run() async throws {
        await cancelWhenGracefulShutdown { await engine.transcriptionPass.run() }
    }
}

/// Listening armed again at start-up when recd stopped while armed (or `--listen` asks for it).
struct ListenResumeService: Service {
    let engine: Engine
    func run() async throws {
        await engine.listener.resumeIfArmed(always: engine.config.listenAtStart)
        try? await gracefulShutdown()
    }
}

/// The engine's backups (`--backup`), for as long as recd runs: recd's stop interrupts a restic
/// under way (it removes its lock; the next run starts over).
struct BackupsService: Service {
    let engine: Engine
    func run() async throws {
        await cancelWhenGracefulShutdown { await engine.backups.run() }
    }
}
