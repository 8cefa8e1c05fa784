// Markers (issue 47): a moment of a recording worth coming back to, with an optional label — added
// while recording or playing ("now") or at a time given, listed, renamed, moved, deleted; shifted and
// cut by a trim, kept with the take across pause, kill -9 and a power cut.
import FoundationEssentials

/// One marker: where in the recording (seconds from its start) and what it says ("" for none).
public struct Marker: Codable, Sendable, Equatable {
    public var id: UUID
    public var time: Double
    public var label: String
    public var createdAt: Date
    public init(id: UUID, time: Double, label: String, createdAt: Date) {
        self.id = id; self.time = time; self.label = label; self.createdAt = createdAt
    }

    /// The longest label, in characters (a chip's worth: the seed's title is 40).
    public static let labelLimit = 60
    /// The most markers one recording holds (a client stuck in a loop stops here).
    public static let perRecordingLimit = 1000
}

/// `GET /v1/recordings/{id}/markers`: a recording's markers, earliest first.
public struct MarkerList: Codable, Sendable, Equatable {
    public var recordingID: UUID
    public var markers: [Marker]
    public init(recordingID: UUID, markers: [Marker]) { self.recordingID = recordingID; self.markers = markers }
}

/// `POST /v1/recordings/{id}/markers`: `time` absent means now — the take's time while it is being
/// recorded, the player's position while recd plays it; `label` absent or "" means none.
public struct MarkerRequest: Codable, Sendable, Equatable, APIRequestBody {
    public static let fields = CodingKeys.allCases.map(\.rawValue)
    public var time: Double?
    public var label: String?
    public init(time: Double? = nil, label: String? = nil) { self.time = time; self.label = label }
    enum CodingKeys: String, CodingKey, CaseIterable { case time, label }
}

/// `PATCH /v1/recordings/{id}/markers/{markerID}`: a new label, a new time, or both.
public struct MarkerPatch: Codable, Sendable, Equatable, APIRequestBody {
    public static let fields = CodingKeys.allCases.map(\.rawValue)
    public var time: Double?
    public var label: String?
    public init(time: Double? = nil, label: String? = nil) { self.time = time; self.label = label }
    enum CodingKeys: String, CodingKey, CaseIterable { case time, label }
}

extension Marker {
    /// The markers of `markers` inside `from..<to` of a recording, moved to start at 0 (a trim); the
    /// end itself is kept too, as the cut's last instant.
    public static func cut(_ markers: [Marker], from: Double, to: Double) -> [Marker] {
        markers.filter { $0.time >= from && $0.time <= to }.map {
            Marker(id: $0.id, time: $0.time - from, label: $0.label, createdAt: $0.createdAt)
        }
    }

}
