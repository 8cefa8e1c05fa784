// Markers (issue 47): added at a time given, or "now" — the take's time while it is recorded, the
// player's position while recd plays it — then listed, renamed, moved and deleted. The catalog keeps
// them (a take's are written at once: they survive what the take survives) and a trim cuts them.
import Catalog
import Foundation
import RecdAPI
import Storage

extension Engine {
    public func markers(_ idOrPrefix: String) async throws(EngineError) -> MarkerList {
        let id = try library.resolve(idOrPrefix).id
        return MarkerList(recordingID: id, markers: try await blockingCatalogCall { [catalog] in try catalog.markers(of: id) })
    }

    /// Adds a marker to a recording being recorded, pending or saved.
    public func addMarker(_ idOrPrefix: String, _ request: MarkerRequest) async throws(EngineError) -> Marker {
        let r = try library.resolve(idOrPrefix)
        let label = try MarkerRules.label(request.label ?? "")
        let take = await recorder.active().flatMap { $0.id == r.id ? $0.pause : nil }
        let time: Double
        if let t = request.time {
            time = try MarkerRules.time(t)
        } else if let take {
            time = take.elapsed
        } else if let playing = await player.current, playing.recording.id == r.id {
            time = playing.position
        } else {
            throw .invalidValue(field: "time", detail: "give the marker's time: recording \(r.id.uuidString) is neither being recorded nor playing in recd")
        }
        let marker = Marker(id: UUID(), time: time, label: label, createdAt: Date())
        let states: Set<String> = [RecordingState.recording.rawValue, RecordingState.pending.rawValue, RecordingState.ready.rawValue]
        // A take's end is its time so far (a second's grace for a clock read just before); a file's, its duration.
        let takeEnd = take.map { $0.elapsed + 1 }
        do {
            try await runBlocking { [catalog] in
                try catalog.addMarker(marker, to: r.id, states: states) { now throws(EngineError) in
                    try MarkerRules.within(time, now, takeEnd: takeEnd)
                }
            }
        } catch {
            throw MarkerRules.engineError(error, id: r.id, action: "mark")
        }
        logger.info("recording \(r.id): marker \(marker.id) at \(String(format: "%.3f", time)) s")
        events.publish(.libraryChanged(LibraryChangedEvent(recordingID: r.id, change: .edited)))
        return marker
    }

    public func editMarker(_ idOrPrefix: String, marker markerID: String, _ patch: MarkerPatch) async throws(EngineError) -> Marker {
        let r = try library.resolve(idOrPrefix)
        let mid = try MarkerRules.markerID(markerID, of: r.id)
        guard patch.time != nil || patch.label != nil else {
            throw .invalidValue(field: "body", detail: "give a label, a time, or both")
        }
        let label = try patch.label.map(MarkerRules.label)
        let time = try patch.time.map(MarkerRules.time)
        let takeEnd = await recorder.active().flatMap { $0.id == r.id ? $0.pause.map { $0.elapsed + 1 } : nil }
        let changed: Marker
        do {
            changed = try await runBlocking { [catalog] in
                try catalog.modifyMarker(mid, of: r.id) { m, now throws(EngineError) in
                    if let time { try MarkerRules.within(time, now, takeEnd: takeEnd); m.time = time }
                    if let label { m.label = label }
                }
            }
        } catch {
            throw MarkerRules.engineError(error, id: r.id, action: "change a marker of")
        }
        events.publish(.libraryChanged(LibraryChangedEvent(recordingID: r.id, change: .edited)))
        return changed
    }

    public func deleteMarker(_ idOrPrefix: String, marker markerID: String) async throws(EngineError) {
        let r = try library.resolve(idOrPrefix)
        let mid = try MarkerRules.markerID(markerID, of: r.id)
        try await blockingCatalogCall { [catalog] in try catalog.deleteMarker(mid, of: r.id) }
        logger.info("recording \(r.id): marker \(mid) deleted")
        events.publish(.libraryChanged(LibraryChangedEvent(recordingID: r.id, change: .edited)))
    }
}

/// What a marker may be: a label of one line without controls, at most `Marker.labelLimit`
/// characters; a time inside the recording.
enum MarkerRules {
    static func label(_ raw: String) throws(EngineError) -> String {
        guard !raw.contains(where: { $0.isNewline }) else { throw .invalidValue(field: "label", detail: "a label is one line") }
        if let c = MetadataRules.firstControl(in: raw, allowingNewlines: false) {
            throw .invalidValue(field: "label", detail: "\(MetadataRules.kind(c)) \(MetadataRules.name(c)) is not allowed")
        }
        let label = raw.trimmingCharacters(in: .whitespaces)
        guard label.count <= Marker.labelLimit else { throw .fieldTooLong(field: "label", limit: Marker.labelLimit, count: label.count) }
        return label
    }

    static func time(_ t: Double) throws(EngineError) -> Double {
        guard t.isFinite, t >= 0 else { throw .invalidValue(field: "time", detail: "\(t) is not a number of seconds from the start") }
        return t
    }

    /// `time` inside `r`: up to its duration (a file's), or up to `takeEnd` while it is being recorded.
    static func within(_ time: Double, _ r: Recording, takeEnd: Double?) throws(EngineError) {
        let end = r.state == .recording ? takeEnd : r.duration
        guard let end else {
            throw .invalidState(id: r.id, state: r.state, action: "mark", allowed: [.pending, .ready])
        }
        guard time <= end else {
            throw .invalidValue(field: "time", detail: "\(time) s is past the end of recording \(r.id.uuidString) (0 to \(String(format: "%.3f", end)) s)")
        }
    }

    static func markerID(_ text: String, of recording: UUID) throws(EngineError) -> UUID {
        guard let id = UUID(uuidString: text) else {
            throw .markerNotFound(recording: recording.uuidString, marker: String(text.prefix(64)))
        }
        return id
    }

    /// A catalog call's error: a state not taking markers as `invalidState` for `action`.
    static func engineError(_ error: any Error, id: UUID, action: String) -> EngineError {
        if case CatalogError.unexpectedState(_, let s) = error, let state = RecordingState(rawValue: s) {
            return .invalidState(id: id, state: state, action: action, allowed: [.recording, .pending, .ready])
        }
        return .from(error)
    }
}
