// The Debian package (issue 39), in the suite: the short version of `make deb-test`. The package is
// built as `make deb` builds it (scripts/build-deb.sh: `make install` into /usr, the Swift runtime
// linked in, Depends from dpkg-shlibdeps, the maintainer scripts) but from a debug build, which
// compiles from clean in less of CI's time than the release build users get; then scripts/deb-test.sh
// installs it with apt into a clean Debian 12 root and, with no Swift there, records, lists and plays.
import Foundation
import XCTest

final class PackageTests: XCTestCase {
    func testThePackageInstallsWithAptAndRecordsInACleanDebian12Root() throws {
        try Skip.if(getuid() != 0, "the clean root needs root (mmdebstrap --mode=root, chroot)")
        for tool in ["mmdebstrap", "dpkg-deb", "dpkg-shlibdeps"] {
            try Skip.if(Tools.which(tool) == nil, "\(tool) is missing: scripts/install-deps.sh --test installs it")
        }
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("recd-package-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: out) }
        var env = ProcessInfo.processInfo.environment
        env["RECD_DEB_OUT"] = out.path
        env["RECD_DEB_CONFIGURATION"] = "debug"
        env["RECD_DEB_NICE"] = "10"   // the other half of the suite runs timing-sensitive tests meanwhile
        let scripts = Tools.packageRoot.appendingPathComponent("scripts")
        let build = try Tools.run(scripts.appendingPathComponent("build-deb.sh").path, [], environment: env, timeout: 1200)
        XCTAssertEqual(build.status, 0, "build-deb.sh: \(build.stdout.suffix(3000))\n\(build.stderr.suffix(3000))")
        let deb = build.stdout.split(separator: "\n").last.map(String.init) ?? ""
        guard build.status == 0, deb.hasSuffix("_amd64.deb"), FileManager.default.fileExists(atPath: deb) else {
            return XCTFail("build-deb.sh printed no package: \(build.stdout.suffix(2000))")
        }
        let test = try Tools.run(scripts.appendingPathComponent("deb-test.sh").path, [deb], timeout: 600)
        print(test.stdout)
        let last = test.stdout.split(separator: "\n").last.map(String.init) ?? ""
        XCTAssertTrue(last.hasSuffix(" passed, 0 failed") && !last.hasPrefix("0 "),
                      "deb-test.sh: \(test.stdout.suffix(6000))\n\(test.stderr.suffix(2000))")
        XCTAssertEqual(test.status, 0)
    }
}
