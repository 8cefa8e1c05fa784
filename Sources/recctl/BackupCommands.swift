// recctl backup (status, now, list, init) and recctl restore (issue 48): the library kept in a restic
// repository, and brought back from it on this machine or a new one.
import ArgumentParser
import Backup
import FoundationEssentials
import Glibc
import RecdAPI

struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "The library's backups to a restic repository (recd --backup): their state, a backup now, the snapshots.",
        subcommands: [Show.self, Now.self, ListSnapshots.self, Init.self], defaultSubcommand: Show.self)

    static func describe(_ s: BackupStatus) -> String {
        guard s.state != .off else { return "backups are off (start recd with --backup REPOSITORY --backup-password-file FILE)" }
        var lines = ["repository: \(Output.text(s.repository ?? ""))"]
        if let r = s.running {
            lines.append("backing up: \(Int(r.fraction * 100))%"
                         + " (\(r.filesDone)/\(r.totalFiles) files, \(r.bytesDone / 1_000_000)/\(r.totalBytes / 1_000_000) MB), started \(Output.date(r.startedAt))")
        }
        if let last = s.lastSuccess {
            lines.append("last good backup: \(Output.date(last.finishedAt)), snapshot \(last.snapshotID), \(last.recordings) recording(s), "
                         + "\(last.totalBytes / 1_000_000) MB (\(last.addedBytes / 1_000_000) MB added) in \(Output.duration(last.finishedAt.timeIntervalSince(last.startedAt)))")
        } else {
            lines.append("last good backup: none yet")
        }
        if let e = s.lastError { lines.append("last run failed (\(e.reason.rawValue)) \(Output.date(e.at)): \(Output.text(e.message))") }
        if let c = s.lastCheck { lines.append("last check \(Output.date(c.at)): \(c.ok ? "sound" : "ERRORS"): \(Output.text(c.message))") }
        if let f = s.lastForget {
            lines.append("old snapshots \(Output.date(f.at)): \(f.removed) forgotten, \(f.kept) kept (keep \(f.policy))\(f.pruned ? ", unused data pruned" : "")")
        }
        if let next = s.nextRunAt { lines.append("next: \(Output.date(next))") }
        if let w = s.warning { lines.append("warning: \(Output.text(w))") }
        return lines.joined(separator: "\n")
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "status", abstract: "Show the backups' state: the last good snapshot, a run under way, the last error.")
        @OptionGroup var global: GlobalOptions
        func run() async throws {
            guard let (s, raw) = try await global.fetchToShow(.GET, "/v1/backup", as: BackupStatus.self) else { return }
            global.emit(raw, BackupCommand.describe(s))
        }
    }

    struct Now: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "now", abstract: "Back up now (in the background; --wait waits for the result).")
        @OptionGroup var global: GlobalOptions
        @Flag(help: "Wait until the backup has ended, and fail (exit 1) when it failed.") var wait = false

        func run() async throws {
            let started = Date()
            var (s, raw) = try await global.client.call(.POST, "/v1/backup", as: BackupStatus.self)
            guard wait else { return global.emit(raw, BackupCommand.describe(s)) }
            // Until a run that started after this request has ended: its success or its error.
            while true {
                // A run that began after this request: it holds what was there when it was asked.
                let ended = (s.lastSuccess?.startedAt ?? .distantPast) >= started || (s.lastError?.startedAt ?? .distantPast) >= started
                // After the snapshot, the same run forgets old snapshots and may check the repository.
                if ended && s.state != .running { break }
                try await Task.sleep(for: .milliseconds(250))
                (s, raw) = try await global.client.call(.GET, "/v1/backup", as: BackupStatus.self)
            }
            global.emit(raw, BackupCommand.describe(s))
            if let e = s.lastError, e.startedAt >= started {
                throw ExitCode(ExitStatus.refused)
            }
        }
    }

    struct ListSnapshots: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List recd's snapshots in the repository, newest first.")
        @OptionGroup var global: GlobalOptions
        func run() async throws {
            guard let (list, raw) = try await global.fetchToShow(.GET, "/v1/backup/snapshots", as: BackupSnapshotList.self) else { return }
            global.emit(raw, list.snapshots.isEmpty ? "no snapshots yet"
                        : list.snapshots.map { "\($0.id)  \(Output.date($0.time))  \(Output.text($0.hostname))" }.joined(separator: "\n"))
        }
    }

    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "init", abstract: "Make the repository recd backs up to (once), then back up.")
        @OptionGroup var global: GlobalOptions
        func run() async throws {
            guard let (s, raw) = try await global.fetchToShow(.POST, "/v1/backup/init", as: BackupStatus.self) else { return }
            global.emit(raw, "made the repository \(Output.text(s.repository ?? ""))\n" + BackupCommand.describe(s))
        }
    }
}

/// Brings a snapshot back as a data directory, with no daemon: on a new machine, with the package and
/// the password, `recctl restore --into DIR` then `recd --data-dir DIR`.
struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Bring a recording back from a backup into the running library (recctl restore ID), or make a whole data directory from a snapshot (recctl restore --into DIR; recd need not run).",
        discussion: """
            recctl restore ID [--snapshot S]: recd brings recording ID of the snapshot back as it was there (title, notes, play count, \
            waveform, transcript), under its own id, or as a new recording when the library has that id.
            recctl restore --into DIR: the whole library of the snapshot as a new data directory; then start recd on it: \
            recd --data-dir DIR (or point the unit's --data-dir there).
            """)

    @OptionGroup var global: GlobalOptions
    @Argument(help: "A recording of the snapshot (its id, or a unique prefix of at least 4 characters), brought back into the running library.")
    var recording: String?
    @Option(help: ArgumentHelp("The data directory to make (it must not exist, or be empty).", valueName: "dir")) var into: String?
    @Option(help: ArgumentHelp("The snapshot (restic's id; default: recd's newest).", valueName: "id")) var snapshot: String?
    @Option(help: ArgumentHelp("The restic repository (default: $RECD_BACKUP).", valueName: "repository"))
    var repository: String? = ProcessInfo.processInfo.environment["RECD_BACKUP"].flatMap { $0.isEmpty ? nil : $0 }
    @Option(help: ArgumentHelp("The file with the repository's password (default: $RECD_BACKUP_PASSWORD_FILE).", valueName: "file"))
    var passwordFile: String? = ProcessInfo.processInfo.environment["RECD_BACKUP_PASSWORD_FILE"].flatMap { $0.isEmpty ? nil : $0 }
    @Option(name: .customLong("option"), help: ArgumentHelp("An option for restic (-o key=value); repeat for more.", valueName: "key=value"))
    var options: [String] = []

    func validate() throws {
        if let snapshot, snapshot.isEmpty || snapshot.hasPrefix("-") { throw ValidationError("--snapshot \(snapshot) is not a snapshot id") }
        guard (recording == nil) != (into == nil) else {
            throw ValidationError("give a recording's id (back into the running library) or --into DIR (a whole data directory), not both")
        }
        guard let into else { return }   // recd does the rest, with its own repository and password
        guard repository != nil else { throw ValidationError("--repository is missing (or set RECD_BACKUP): the restic repository to restore from") }
        guard let passwordFile else { throw ValidationError("--password-file is missing (or set RECD_BACKUP_PASSWORD_FILE)") }
        guard access(passwordFile, R_OK) == 0 else { throw ValidationError("--password-file \(passwordFile): \(String(cString: strerror(errno)))") }
        var st = stat()
        if stat(into, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFDIR, (try? FileManager.default.contentsOfDirectory(atPath: into))?.isEmpty == true else {
                throw ValidationError("--into \(into) exists and is not an empty folder: restore into a new one")
            }
        }
    }

    func run() async throws {
        if let recording {
            let (r, raw) = try await global.client.call(.POST, "/v1/backup/restore", body: BackupRestoreRequest(recording: recording, snapshot: snapshot),
                                                        as: Recording.self)
            return global.emit(raw, "restored '\(Output.text(r.title))' as \(r.id.uuidString) (\(r.state.rawValue), \(r.playCount) play(s))")
        }
        let into = self.into!
        guard let restic = ResticRepository.findExecutable() else {
            Console.err("recctl: restic is not installed (apt install restic)\n")
            throw ExitCode(ExitStatus.refused)
        }
        let repo = ResticRepository(location: repository!, passwordFile: passwordFile!, options: options, cacheDirectory: nil,
                                    executable: restic, host: "")
        // Restored beside DIR, then renamed to it: DIR is whole, or not there.
        let target = URL(fileURLWithPath: into).standardizedFileURL.path
        let partial = target + ".restoring"
        try? FileManager.default.removeItem(atPath: partial)
        do throws(ResticError) {
            try repo.restore(snapshot: snapshot, into: partial)
        } catch {
            try? FileManager.default.removeItem(atPath: partial)
            Console.err("recctl: \(error.message)\n")
            throw ExitCode(ExitStatus.refused)
        }
        let recordings = (try? FileManager.default.contentsOfDirectory(atPath: partial + "/Recordings").count) ?? 0
        guard FileManager.default.fileExists(atPath: partial + "/catalog.sqlite") else {
            try? FileManager.default.removeItem(atPath: partial)
            Console.err("recctl: the snapshot holds no recd catalog (catalog.sqlite): is it one of recd's?\n")
            throw ExitCode(ExitStatus.refused)
        }
        _ = rmdir(target)   // an empty folder given as --into
        guard rename(partial, target) == 0 else {
            Console.err("recctl: could not move the restored \(partial) to \(target): \(String(cString: strerror(errno)))\n")
            throw ExitCode(ExitStatus.refused)
        }
        print("restored \(recordings) recording(s) into \(target)\nstart recd on it: recd --data-dir \(target)")
    }
}
