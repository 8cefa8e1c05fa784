// The /v1 HTTP API (documented in openapi.yaml, served at /v1/openapi.yaml).
import Dispatch
import Engine
import Foundation
import HTTPTypes
import Hummingbird
import RecdAPI
import ServiceLifecycle
import Storage

/// Facts about the running daemon that status reports.
public struct DaemonIdentity: Sendable {
    public var socketPath: String
    public var startedAt: Date
    public init(socketPath: String, startedAt: Date = Date()) { self.socketPath = socketPath; self.startedAt = startedAt }
}

public enum RecdRoutes {
    /// Largest request body accepted: metadata is small; anything bigger is a mistake or an attack.
    public static let maxBodyBytes = 64 * 1024

    public static func router(engine: Engine, identity: DaemonIdentity,
                              policy: AccessPolicy = AccessPolicy()) -> Router<RecdRequestContext> {
        let router = Router(context: RecdRequestContext.self)
        router.add(middleware: ServerTimingMiddleware())
        router.add(middleware: JSONErrorMiddleware())
        router.add(middleware: PeerAccessMiddleware(policy: policy))
        router.add(middleware: SingleHostMiddleware())
        let methods = RouteMethods()
        router.add(middleware: MethodNotAllowedMiddleware(index: methods))
        WebApp.add(to: router)
        let v1 = APIGroup(group: router.group("v1"), prefix: "/v1", index: methods)

        addDaemonRoutes(to: v1, engine: engine, identity: identity)
        addRecordingRoutes(to: v1, engine: engine)
        addLibraryRoutes(to: v1, engine: engine)
        addPlaybackRoutes(to: v1, engine: engine)
        addEventRoutes(to: v1, engine: engine)
        TranscriptRoutes.add(to: v1, engine: engine)
        MarkerRoutes.add(to: v1, engine: engine)
        EnhanceRoutes.add(to: v1, engine: engine)
        addBackupRoutes(to: v1, engine: engine)
        addListenRoutes(to: v1, engine: engine)
        return router
    }

    /// Hands-free listening (issue 49): arm, disarm, where it stands.
    static func addListenRoutes(to v1: APIGroup, engine: Engine) {
        v1.get("listen") { _, _ in JSONResponse.make(await engine.listener.status) }
        v1.post("listen") { request, _ in
            let body = try await decode(ListenRequest.self, request)
            return JSONResponse.make(try await engine.listener.arm(body), status: .created)
        }
        v1.delete("listen") { _, _ in JSONResponse.make(try await engine.listener.disarm()) }
    }

    /// Backups (issue 48): their state, a run now, the repository's snapshots, making the repository.
    static func addBackupRoutes(to v1: APIGroup, engine: Engine) {
        v1.get("backup") { _, _ in JSONResponse.make(await engine.backups.status) }
        v1.post("backup") { _, _ in JSONResponse.make(try await engine.backups.runNow(), status: .accepted) }
        v1.get("backup/snapshots") { _, _ in JSONResponse.make(try await engine.backups.snapshots()) }
        v1.post("backup/init") { _, _ in JSONResponse.make(try await engine.backups.initialize(), status: .created) }
        v1.post("backup/restore") { request, _ in
            let body = try await decode(BackupRestoreRequest.self, request)
            guard !body.recording.isEmpty, body.snapshot.map({ !$0.isEmpty && !$0.hasPrefix("-") && $0.count <= 64 }) ?? true else {
                throw RequestError(status: .badRequest, code: .malformedRequest, message: "recording is the id (or a prefix) of a recording of the snapshot; snapshot is restic's id of one")
            }
            return JSONResponse.make(try await engine.restoreFromBackup(body.recording, snapshot: body.snapshot), status: .created)
        }
    }

    /// The daemon: status, capture devices, consistency check and repair, this API's document.
    static func addDaemonRoutes(to v1: APIGroup, engine: Engine, identity: DaemonIdentity) {
        v1.get("status") { _, _ in
            let (activity, active, counts) = try await engine.status()
            let lastFault = await engine.recorder.lastFault
            let playback = await engine.player.current
            let c = engine.config
            return JSONResponse.make(DaemonStatus(
                version: RecdVersion.current, pid: getpid(), uptime: Date().timeIntervalSince(identity.startedAt),
                activity: activity, active: active,
                captureDevice: c.captureDevice, playbackDevice: c.playbackDevice,
                sampleRate: c.sampleRate, channels: c.channels,
                dataDirectory: c.dataDirectory.root.path, socket: identity.socketPath, counts: counts,
                lastFault: lastFault, recovery: engine.lastRecoveryReport, playback: playback,
                loudnessPass: await engine.loudnessPass.status, transcription: await engine.transcriptionPass.status,
                listening: await engine.listener.status))
        }

        v1.get("devices") { _, _ in
            JSONResponse.make(await engine.library.devices())
        }

        v1.get("check") { _, _ in
            JSONResponse.make(try await engine.check())
        }

        v1.post("check/repair") { _, _ in
            JSONResponse.make(try await engine.repair())
        }

        v1.get("openapi.yaml") { _, _ in
            guard let yaml = OpenAPIDocument.yaml else {
                throw HTTPError(.notFound, message: "openapi.yaml is not installed beside recd")
            }
            return JSONResponse.raw(yaml, contentType: "application/yaml")
        }
    }

    /// Recording: start, pause, resume and stop.
    static func addRecordingRoutes(to v1: APIGroup, engine: Engine) {
        v1.post("record/start") { request, _ in
            let receivedAt = DispatchTime.now().uptimeNanoseconds
            let body = try await decode(StartRecordingRequest.self, request)
            return JSONResponse.make(try await engine.recorder.start(body, receivedAt: receivedAt), status: .created)
        }

        v1.post("record/stop") { request, _ in
            let body = try await decode(StopRecordingRequest.self, request)
            return JSONResponse.make(try await engine.recorder.stop(body))
        }

        v1.post("record/pause") { _, _ in
            JSONResponse.make(try await engine.recorder.setPaused(true))
        }

        v1.post("record/resume") { _, _ in
            JSONResponse.make(try await engine.recorder.setPaused(false))
        }
    }

    /// The library: listings (list, Quick Play, export), one recording and its changes, delete all,
    /// and a recording's media, waveform and poster.
    static func addLibraryRoutes(to v1: APIGroup, engine: Engine) {
        addListingRoutes(to: v1, engine: engine)
        addOneRecordingRoutes(to: v1, engine: engine)
        addDeleteAllRoute(to: v1, engine: engine)
        MediaRoute.add(to: v1, engine: engine)
        WaveformRoute.add(to: v1, engine: engine)
        v1.get("recordings/:id/poster") { _, context in
            let jpeg = try await engine.library.poster(try context.recordingID())
            return JSONResponse.raw(jpeg, contentType: "image/jpeg")
        }
    }

    /// GET /v1/recordings (a page, filtered and ordered), /v1/top (Quick Play), /v1/export.
    static func addListingRoutes(to v1: APIGroup, engine: Engine) {
        v1.get("recordings") { request, _ in
            JSONResponse.json(try engine.library.listJSON(try listQuery(request)))
        }
        v1.get("top") { request, _ in
            let limit = try request.uri.queryParameters["limit"].map { try intValue(String($0), field: "limit") } ?? 3
            return JSONResponse.json(try engine.library.topJSON(limit: limit))
        }
        v1.get("export") { request, _ in
            let format = try request.uri.queryParameters["format"].map {
                try enumValue(ExportFormat.self, String($0), field: "format")
            } ?? .csv
            return try export(format, engine: engine)
        }
    }

    static func listQuery(_ request: Request) throws -> ListQuery {
        let q = request.uri.queryParameters
        var query = ListQuery()
        if let by = q["by"] { query.order = try enumValue(ListOrder.self, String(by), field: "by") }
        if let s = q["state"] { query.state = try enumValue(RecordingState.self, String(s), field: "state") }
        if let t = q["type"] { query.type = try enumValue(RecordingType.self, String(t), field: "type") }
        if let l = q["limit"] { query.limit = try intValue(String(l), field: "limit") }
        if let o = q["offset"] { query.offset = try intValue(String(o), field: "offset") }
        return query
    }

    /// The seed's "Export Data": every saved recording's metadata as a dated attachment.
    static func export(_ format: ExportFormat, engine: Engine) throws -> Response {
        let rows = try engine.library.export()
        let now = Date()
        let name = MetadataExport.fileName(format: format, date: now, timeZone: engine.config.timeZone ?? .current)
        let disposition: HTTPFields = [.contentDisposition: "attachment; filename=\"\(name)\""]
        switch format {
        case .csv:
            return JSONResponse.raw(Data(MetadataExport.csv(rows).utf8), contentType: "text/csv; charset=utf-8",
                                    extraHeaders: disposition)
        case .json:
            return JSONResponse.raw(try MetadataExport.json(rows, exportedAt: now) + Data("\n".utf8),
                                    contentType: "application/json", extraHeaders: disposition)
        }
    }

    /// One recording: read, edit, import, trim, save, discard, delete.
    static func addOneRecordingRoutes(to v1: APIGroup, engine: Engine) {
        v1.get("recordings/:id") { _, context in
            JSONResponse.make(try engine.library.resolve(try context.recordingID()))
        }
        v1.patch("recordings/:id") { request, context in
            let id = try context.recordingID()
            let patch = try await decode(MetadataPatch.self, request)
            return JSONResponse.make(try await engine.library.edit(id, patch))
        }
        v1.post("recordings/import") { request, _ in
            try await importFile(request, engine: engine)
        }
        v1.post("recordings/:id/trim") { request, context in
            let id = try context.recordingID()
            let body = try await decode(TrimRequest.self, request)
            return JSONResponse.make(try await engine.library.trim(id, body), status: body.asNew ? .created : .ok)
        }
        v1.post("recordings/:id/save") { request, context in
            let id = try context.recordingID()
            let patch = try await decode(MetadataPatch.self, request)
            return JSONResponse.make(try await engine.library.save(id, patch))
        }
        v1.post("recordings/:id/discard") { _, context in
            JSONResponse.make(try await engine.library.discard(try context.recordingID()))
        }
        v1.delete("recordings/:id") { _, context in
            JSONResponse.make(try await engine.library.delete(try context.recordingID()))
        }
    }

    /// DELETE /v1/recordings?confirm=all: the seed's "Delete All Data".
    static func addDeleteAllRoute(to v1: APIGroup, engine: Engine) {
        v1.delete("recordings") { request, _ in
            // A deliberate act: a bare DELETE on the collection (a mistyped id, an empty variable in
            // a script) must not wipe the library. Nor may an ambiguous one: `?confirm=all&confirm=no`
            // says both, so it is refused.
            let confirms = request.uri.queryParameters.getAll("confirm")
            guard confirms == ["all"] else {
                throw RequestError(status: .badRequest, code: .malformedRequest,
                                   message: confirms.count > 1 ? "give confirm once: ?confirm=all" : "deleting every recording needs ?confirm=all")
            }
            return JSONResponse.make(try await engine.deleteAll())
        }
    }

    /// Playback on recd's device, and plays counted from elsewhere.
    static func addPlaybackRoutes(to v1: APIGroup, engine: Engine) {
        v1.post("recordings/:id/play") { request, context in
            let receivedAt = DispatchTime.now().uptimeNanoseconds
            let recording = try engine.library.resolve(try context.recordingID())
            let body = try await decode(PlayRequest.self, request)
            let skipping = body.skipSilence == true ? try await engine.library.silences(recording.id.uuidString).silences : nil
            let enhanced = body.enhanced == true ? try engine.library.enhancedCopy(of: recording) : nil
            let reply = try await engine.player.play(recording, from: body.position, normalize: body.normalize ?? true,
                                                     skipping: skipping, speed: body.speed ?? 1, enhanced: enhanced, receivedAt: receivedAt)
            return JSONResponse.make(reply, status: .created)
        }

        v1.get("recordings/:id/silences") { _, context in
            JSONResponse.make(try await engine.library.silences(try context.recordingID()))
        }

        v1.post("recordings/:id/played") { _, context in
            JSONResponse.make(try await engine.library.played(try context.recordingID()))
        }

        v1.get("playback") { _, _ in
            JSONResponse.make(await engine.player.status())
        }

        v1.post("playback/pause") { _, _ in
            JSONResponse.make(try await engine.player.pause())
        }

        v1.post("playback/resume") { _, _ in
            JSONResponse.make(try await engine.player.resume())
        }

        v1.post("playback/speed") { request, _ in
            let body = try await decode(SpeedRequest.self, request)
            return JSONResponse.make(try await engine.player.setSpeed(body.speed))
        }

        v1.post("playback/seek") { request, _ in
            let body = try await decode(SeekRequest.self, request)
            return JSONResponse.make(try await engine.player.seek(body))
        }

        v1.post("playback/stop") { _, _ in
            JSONResponse.make(try await engine.player.stop())
        }
    }

    /// The event stream (Server-Sent Events).
    static func addEventRoutes(to v1: APIGroup, engine: Engine) {
        v1.get("events") { request, _ in
            var types: Set<EventType>?
            if let raw = request.uri.queryParameters["type"] {
                types = []
                for name in raw.split(separator: ",") {
                    types!.insert(try enumValue(EventType.self, String(name), field: "type"))
                }
            }
            let (id, stream) = engine.events.subscribe(types: types)
            let headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-cache"]
            return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                defer { engine.events.unsubscribe(id) }
                let encoder = APIJSON.encoder()
                try await writer.write(ByteBuffer(string: ": recd \(RecdVersion.current) events\n\n"))
                // The server's graceful shutdown waits for responses to end: a stream ends when it begins.
                try await withGracefulShutdownHandler {
                    for await delivery in stream {
                        switch delivery {
                        case .heartbeat:
                            try await writer.write(ByteBuffer(string: ": heartbeat\n\n"))
                        case .event(let event):
                            let json = String(decoding: try encoder.encode(event), as: UTF8.self)
                            try await writer.write(ByteBuffer(string: "id: \(event.seq)\nevent: \(event.type.rawValue)\ndata: \(json)\n\n"))
                        }
                    }
                } onGracefulShutdown: {
                    engine.events.unsubscribe(id)
                }
                try await writer.finish(nil)
            })
        }
    }

    /// Reads and decodes a JSON body; an empty body is `{}`. A key the body does not take is 400.
    static func decode<T: APIRequestBody>(_ type: T.Type, _ request: Request) async throws -> T {
        var request = request
        let buffer = try await request.collectBody(upTo: maxBodyBytes)
        let data = buffer.readableBytes == 0 ? Data("{}".utf8) : Data(buffer.readableBytesView)
        if let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
           let unknown = object.keys.filter({ !T.fields.contains($0) }).sorted().first {
            let shown = unknown.unicodeScalars.count > 40 ? String(unknown.prefix(40)) + "…" : unknown
            throw RequestError(status: .badRequest, code: .malformedRequest,
                               message: "unknown field '\(shown)': this body takes \(T.fields.joined(separator: ", "))")
        }
        return try APIJSON.decoder().decode(T.self, from: data)
    }

    /// `POST /v1/recordings/import?name=…[&title=…&notes=…&purpose=…&modified=…&format=…]`, the file's bytes
    /// as the body: refused before a byte is stored when the query or the announced size is wrong,
    /// received into `.uploads/` (written and hashed on `BlockingPool`, a MiB at a time), then
    /// stored by the engine (`Importer`). The upload is removed whatever happens.
    static func importFile(_ request: Request, engine: Engine) async throws -> Response {
        let q = request.uri.queryParameters
        // (Hummingbird hands query values over percent-decoded.)
        guard let name = q["name"].map({ String($0) }), !name.isEmpty,
              !name.contains("/"), name.unicodeScalars.count <= 255,
              MetadataRules.firstControl(in: name, allowingNewlines: false) == nil else {
            throw EngineError.invalidValue(field: "name", detail: "give the file's name (no path, no control characters or bidirectional overrides, at most 255 characters), e.g. ?name=memo.wav")
        }
        func text(_ key: Substring) -> String? { q[key].map { String($0) } }
        let patch = MetadataPatch(title: PatchField(text("title")), notes: PatchField(text("notes")), purpose: PatchField(text("purpose")))
        let metadata = try MetadataRules.validate(patch)
        var modified: Date?
        if let m = text("modified") {
            guard let seconds = Double(m), seconds.isFinite, abs(seconds) < 1e11 else {
                throw EngineError.invalidValue(field: "modified", detail: "\(m) is not a time in seconds since 1970")
            }
            modified = Date(timeIntervalSince1970: seconds)
        }
        let config = engine.config
        // Checked now, before a byte is stored; it decides only what a file that is encoded becomes.
        let format = try text("format").map { f throws(EngineError) in try config.format(f, video: false) }
        let limit = config.maxImportBytes
        let announced = request.headers[.contentLength].flatMap { Int64($0) }
        try engine.library.checkImportRoom(name: name, announcedBytes: announced)
        let upload = try UploadFile(in: config.dataDirectory)
        defer { upload.remove() }
        var pending = Data()
        for try await buffer in request.body {
            pending.append(contentsOf: buffer.readableBytesView)
            if upload.bytes + Int64(pending.count) > limit { throw EngineError.tooLarge(name: name, limitBytes: limit) }
            if pending.count >= 1 << 20 {
                try await upload.append(pending)
                pending.removeAll(keepingCapacity: true)
                try engine.library.checkImportRoom(name: name, receivedBytes: upload.bytes)
            }
        }
        if !pending.isEmpty { try await upload.append(pending) }
        try engine.library.checkImportRoom(name: name, receivedBytes: upload.bytes)
        guard upload.bytes > 0 else { throw EngineError.unsupportedMedia(name: name, detail: "the body is empty: send the file's bytes") }
        let r = try await engine.library.importFile(upload: upload.path, contentHash: await upload.digest(), worker: upload.worker,
                                                    ImportRequest(name: name, metadata: metadata, modified: modified, format: format))
        return JSONResponse.make(r, status: .created)
    }

    static func enumValue<E: RawRepresentable & CaseIterable>(_ type: E.Type, _ raw: String, field: String) throws -> E
    where E.RawValue == String {
        guard let v = E(rawValue: raw) else {
            throw RequestError(status: .badRequest, code: .malformedRequest,
                               message: "\(field)=\(raw) is not one of \(E.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return v
    }

    /// A whole-number query parameter: not one is 400; outside `range` (what the document declares as
    /// its minimum and maximum) is 422, so that arithmetic on it cannot overflow.
    static func intValue(_ raw: String, field: String, range: ClosedRange<Int> = Int.min...Int.max) throws -> Int {
        guard let v = Int(raw) else {
            throw RequestError(status: .badRequest, code: .malformedRequest, message: "\(field)=\(raw) is not a whole number")
        }
        guard v <= range.upperBound else { throw EngineError.invalidValue(field: field, detail: "\(v) is more than \(range.upperBound)") }
        guard v >= range.lowerBound else { throw EngineError.invalidValue(field: field, detail: "\(v) is less than \(range.lowerBound)") }
        return v
    }
}

/// The OpenAPI document (Sources/Server/openapi.yaml). SwiftPM copies it into `recd_Server.resources/`
/// beside the binary; `make install` puts it in `<prefix>/share/recd/`. Looked up by hand because the
/// generated `Bundle.module` traps when the bundle is missing, which must not take the daemon down.
enum OpenAPIDocument {
    static let yaml: Data? = {
        // /proc/self/exe, not argv[0]: recd started from PATH has a bare "recd" there.
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let candidates = [
            exe.appendingPathComponent("recd_Server.resources/openapi.yaml"),
            exe.deletingLastPathComponent().appendingPathComponent("share/recd/openapi.yaml"),
        ]
        return candidates.lazy.compactMap { try? Data(contentsOf: $0) }.first
    }()
}

extension RequestContext {
    /// The `{id}` of the path as the client meant it: Hummingbird hands path parameters over still
    /// percent-encoded, so an id typed with a space came back in errors as `zz%20zz`.
    func recordingID() throws -> String {
        let raw = try parameters.require("id")
        return raw.removingPercentEncoding ?? raw
    }
}
