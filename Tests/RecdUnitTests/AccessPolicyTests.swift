import Foundation
import Server
import XCTest

/// Who recd trusts, inside and outside a user namespace (the user unit's PrivateUsers=yes).
final class AccessPolicyTests: XCTestCase {
    func testRootIsMappedOnlyWhereSomeRangeHoldsOutsideUidZero() {
        XCTAssertTrue(AccessPolicy.hostRootIsMapped(uidMap: "         0          0 4294967295\n"))
        // PrivateUsers=yes: only the user's own uid.
        XCTAssertFalse(AccessPolicy.hostRootIsMapped(uidMap: "      1002       1002          1\n"))
        // A container's usual map: inside 0 is outside 100000.
        XCTAssertFalse(AccessPolicy.hostRootIsMapped(uidMap: "0 100000 65536\n"))
        XCTAssertTrue(AccessPolicy.hostRootIsMapped(uidMap: "0 0 1\n1000 1000 1\n"))
        XCTAssertTrue(AccessPolicy.hostRootIsMapped(uidMap: nil))
    }

    func testRootUnmappedIsNeitherLetInNorNamed() {
        let root = PeerCredentials(pid: 1, uid: 0, gid: 0)
        let nobody = PeerCredentials(pid: 2, uid: 65534, gid: 65534)
        let owner = PeerCredentials(pid: 3, uid: 1002, gid: 1002)
        let mapped = AccessPolicy(ownerUID: 1002, allowedGID: nil, rootIsMapped: true)
        let unmapped = AccessPolicy(ownerUID: 1002, allowedGID: nil, rootIsMapped: false)
        XCTAssertTrue(mapped.allows(root, groups: []))
        XCTAssertFalse(unmapped.allows(root, groups: []))
        XCTAssertFalse(unmapped.allows(nobody, groups: []))
        XCTAssertTrue(unmapped.allows(owner, groups: []))
        XCTAssertEqual(mapped.who, "root and uid 1002")
        XCTAssertEqual(unmapped.who, "uid 1002")
        XCTAssertEqual(AccessPolicy(ownerUID: 1002, allowedGID: 0, rootIsMapped: false).who, "uid 1002 and members of group root")
        XCTAssertEqual(AccessPolicy(ownerUID: 1002, allowedGID: 0, rootIsMapped: true).who, "root, uid 1002 and members of group root")
    }
}
