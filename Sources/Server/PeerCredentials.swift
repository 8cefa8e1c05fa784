// Who is on the other end of the socket (SO_PEERCRED), and whether they may use recd.
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import RecdAPI

/// The request context of recd's routes: Hummingbird's core context plus the connection, whose
/// peer credentials the access check reads.
public struct RecdRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    let channel: any Channel
    /// Set by `PeerAccessMiddleware` for the handlers and the request log.
    var peer: PeerCredentials?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

/// The peer process of a Unix socket connection, as the kernel recorded it at connect(2).
public struct PeerCredentials: Sendable, Equatable, CustomStringConvertible {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    package init(pid: Int32, uid: UInt32, gid: UInt32) { (self.pid, self.uid, self.gid) = (pid, uid, gid) }

    public var description: String { "uid \(uid) pid \(pid)" }

    /// The peer of `channel` (SO_PEERCRED) and its groups. Read through NIO's raw socket option
    /// access (the typed `ChannelOptions.socketOption` path returns an 8-byte Int, not the 12-byte
    /// `ucred`); on the channel's event loop the future is already complete when returned.
    static func read(_ channel: any Channel) -> EventLoopFuture<(PeerCredentials, Set<UInt32>)> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
        }
        let cred: EventLoopFuture<KernelUcred> = provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET),
                                                                               name: SocketOptionName(SO_PEERCRED))
        return cred.flatMap { cred in
            let peer = PeerCredentials(pid: cred.pid, uid: cred.uid, gid: cred.gid)
            return groups(of: channel, gid: peer.gid).map { (peer, $0) }
        }
    }

    /// The peer's groups: its gid and the supplementary groups the kernel recorded at connect(2)
    /// (SO_PEERGROUPS, Linux 4.13). Never /proc/PID/status: the system unit's `ProtectProc=invisible`
    /// hides other users' processes from recd, and a pid can be reused by another process by the time
    /// it is read. A buffer of 64 groups does for nearly every peer; one in more gets ERANGE, and is
    /// asked again with room for the kernel's most (NGROUPS_MAX, 65536: 256 KiB, only for such a peer).
    static func groups(of channel: any Channel, gid: UInt32) -> EventLoopFuture<Set<UInt32>> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture([gid])
        }
        let level = SocketOptionLevel(SOL_SOCKET), name = SocketOptionName(soPeerGroups)
        let few: EventLoopFuture<SIMD64<UInt32>> = provider.unsafeGetSocketOption(level: level, name: name)
        return few.map { list in
            groupSet(gid, count: list.scalarCount) { list[$0] }
        }.flatMapError { _ in
            let all: EventLoopFuture<InlineArray<65536, UInt32>> = provider.unsafeGetSocketOption(level: level, name: name)
            return all.map { list in groupSet(gid, count: list.count) { list[$0] } }
        }
    }

    /// `gid` and the groups of a zero-filled SO_PEERGROUPS buffer (NIO hands over the whole buffer, not
    /// its length). The kernel lists the groups in ascending order, so the list ends at the first 0
    /// after its first entry; a 0 is not taken (gid 0 among supplementary groups is only ever root's
    /// group, which root needs no check for).
    private static func groupSet(_ gid: UInt32, count: Int, _ group: (Int) -> UInt32) -> Set<UInt32> {
        var groups: Set<UInt32> = [gid]
        for i in 0..<count {
            let g = group(i)
            if g == 0 { if i > 0 { break } else { continue } }
            groups.insert(g)
        }
        return groups
    }

    /// SO_PEERGROUPS from <asm-generic/socket.h> (Glibc's module does not export it).
    static let soPeerGroups: Int32 = 59
}

/// `struct ucred` (pid, uid, gid: 12 bytes); Glibc hides it behind _GNU_SOURCE.
struct KernelUcred {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}

/// Who may talk to recd: root, the daemon's own uid, and the members of a group only when one is
/// named (`--socket-group`). Not recd's primary group by default: on systems where every user's
/// primary group is `users`, that trusted everyone. The socket's mode is the first gate; this is the
/// second, and the one that names who was refused in the log.
public struct AccessPolicy: Sendable {
    public var ownerUID: UInt32
    /// The group whose members are let in; nil: the owner (and root) alone.
    public var allowedGID: UInt32?
    /// Whether the host's root reaches recd as uid 0. Not inside a user namespace that maps only
    /// recd's own uid (the user unit's PrivateUsers=yes): root's clients arrive as the overflow uid
    /// ("nobody") there, and saying "root may" would be untrue.
    public var rootIsMapped: Bool

    public init(ownerUID: UInt32 = geteuid(), allowedGID: UInt32? = nil,
                rootIsMapped: Bool = AccessPolicy.hostRootIsMapped()) {
        self.ownerUID = ownerUID; self.allowedGID = allowedGID; self.rootIsMapped = rootIsMapped
    }

    /// From /proc/self/uid_map ("inside outside count" lines): whether some range holds outside uid 0.
    /// Unreadable: assumed mapped, as it is outside any user namespace.
    public static func hostRootIsMapped(uidMap: String? = try? String(contentsOfFile: "/proc/self/uid_map", encoding: .utf8)) -> Bool {
        guard let uidMap else { return true }
        return uidMap.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ").compactMap { UInt64($0) }
            return fields.count == 3 && fields[1] == 0 && fields[2] > 0
        }
    }

    package func allows(_ peer: PeerCredentials, groups: Set<UInt32>) -> Bool {
        (rootIsMapped && peer.uid == 0) || peer.uid == ownerUID || allowedGID.map(groups.contains) == true
    }

    package var who: String {
        let people = (rootIsMapped ? ["root"] : []) + ["uid \(ownerUID)"]
            + (allowedGID.map { gid in ["members of group " + (getgrgid(gid).map { String(cString: $0.pointee.gr_name) } ?? String(gid))] } ?? [])
        return people.count == 1 ? people[0] : people.dropLast().joined(separator: ", ") + " and " + people.last!
    }
}

/// Refuses peers the policy does not allow (403, logged), and logs every request that changes
/// something with the peer's uid and pid.
struct PeerAccessMiddleware: RouterMiddleware {
    typealias Context = RecdRequestContext
    let policy: AccessPolicy

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        guard let (peer, groups) = try? await PeerCredentials.read(context.channel).get() else {
            throw RequestError(status: .forbidden, code: .forbidden, message: "the peer's credentials cannot be read (SO_PEERCRED)")
        }
        guard policy.allows(peer, groups: groups) else {
            context.logger.warning("refused \(request.method) \(request.uri.path) from \(peer): not \(policy.who)")
            throw RequestError(status: .forbidden, code: .forbidden,
                               message: "uid \(peer.uid) may not use this recd: only \(policy.who) may")
        }
        context.peer = peer
        if request.method != .get && request.method != .head {
            context.logger.info("\(request.method) \(request.uri.path) by \(peer)")
        }
        return try await next(request, context)
    }
}
