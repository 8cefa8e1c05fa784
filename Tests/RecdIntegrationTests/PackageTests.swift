// The Debian package (issue 39), in the suite: the short version of `make deb-test`. The package is
// built as `make deb` builds it (scripts/build-deb.sh: a release build, `make install` into /usr, the
// Swift runtime linked in, Depends from dpkg-shlibdeps, the maintainer scripts): what users get; then
// scripts/deb-test.sh installs it with apt into a clean Debian 12 root and, with no Swift there,
// records, lists and plays. Under scripts/run-tests.sh (`make test`) the package is packed from the
// suite's own release build, beside the tests, and this test waits for it; run alone, it packs it
// itself (compiling the release build first if the tests were not built from it).
import Foundation
import XCTest

final class PackageTests: XCTestCase {
    func testThePackageInstallsWithAptAndRecordsInACleanDebian12Root() throws {
        try Skip.if(getuid() != 0, "the clean root needs root (mmdebstrap --mode=root, chroot)")
        for tool in ["mmdebstrap", "dpkg-deb", "dpkg-shlibdeps"] {
            try Skip.if(Tools.which(tool) == nil, "\(tool) is missing: scripts/install-deps.sh --test installs it")
        }
        let deb: String
        if let status = ProcessInfo.processInfo.environment["RECD_TEST_DEB_STATUS"],
           let log = ProcessInfo.processInfo.environment["RECD_TEST_DEB_LOG"] {
            deb = try Self.packageBuiltBeside(status: status, log: log)
        } else {
            deb = try Self.buildPackage()
        }
        defer { if ProcessInfo.processInfo.environment["RECD_TEST_DEB_STATUS"] == nil { try? FileManager.default.removeItem(atPath: (deb as NSString).deletingLastPathComponent) } }
        let scripts = Tools.packageRoot.appendingPathComponent("scripts")
        let test = try Tools.run(scripts.appendingPathComponent("deb-test.sh").path, [deb], timeout: 600)
        print(test.stdout)
        let last = test.stdout.split(separator: "\n").last.map(String.init) ?? ""
        XCTAssertTrue(last.hasSuffix(" passed, 0 failed") && !last.hasPrefix("0 "),
                      "deb-test.sh: \(test.stdout.suffix(6000))\n\(test.stderr.suffix(2000))")
        XCTAssertEqual(test.status, 0)
    }

    /// The package as `make deb` builds it, at nice 10 (the other half of the suite runs
    /// timing-sensitive tests meanwhile): its path.
    static func buildPackage() throws -> String {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("recd-package-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        var env = ProcessInfo.processInfo.environment
        env["RECD_DEB_OUT"] = out.path
        env["RECD_DEB_NICE"] = "10"
        let scripts = Tools.packageRoot.appendingPathComponent("scripts")
        let build = try Tools.run(scripts.appendingPathComponent("build-deb.sh").path, [], environment: env, timeout: 1800)
        return try deb(status: build.status, said: build.stdout + "\n" + build.stderr)
    }

    /// The package scripts/run-tests.sh builds from the suite's start (the same build-deb.sh, beside
    /// the tests at nice 19): waits for `status` (its exit code, written when it ends), then its path.
    static func packageBuiltBeside(status: String, log: String) throws -> String {
        let deadline = Date().addingTimeInterval(1500)
        while !FileManager.default.fileExists(atPath: status) {
            guard Date() < deadline else { throw PackageBuildFailed(said: "the package built beside the suite did not finish in 25 minutes: \(log)") }
            Thread.sleep(forTimeInterval: 1)
        }
        let code = Int32(try String(contentsOfFile: status, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        return try deb(status: code, said: (try? String(contentsOfFile: log, encoding: .utf8)) ?? "(no log at \(log))")
    }

    /// `usr/bin` of the package scripts/run-tests.sh builds beside the suite — recd, recd-media and
    /// recctl as users install them (release, the Swift runtime linked in) — unpacked once per test
    /// process, for the guests that must run what users run (PowerCutTests, the user unit); nil when
    /// the suite did not build it (a test run alone).
    static func packagedBinaries() throws -> String? { try unpacked?.get() }
    private static let unpacked: Result<String, any Error>? = {
        let env = ProcessInfo.processInfo.environment
        guard let status = env["RECD_TEST_DEB_STATUS"], let log = env["RECD_TEST_DEB_LOG"] else { return nil }
        return Result {
            let deb = try packageBuiltBeside(status: status, log: log)
            let dir = (deb as NSString).deletingLastPathComponent + "/unpacked"
            try? FileManager.default.removeItem(atPath: dir)
            let x = try Tools.run("/usr/bin/dpkg-deb", ["-x", deb, dir])
            guard x.status == 0 else { throw PackageBuildFailed(said: "dpkg-deb -x \(deb): \(x.stderr)") }
            return dir + "/usr/bin"
        }
    }()

    struct PackageBuildFailed: Error, CustomStringConvertible {
        let said: String
        var description: String { said }
    }

    /// build-deb.sh prints the package's path last.
    static func deb(status: Int32, said: String) throws -> String {
        let last = said.split(separator: "\n").last(where: { $0.hasSuffix("_amd64.deb") }).map(String.init) ?? ""
        guard status == 0, FileManager.default.fileExists(atPath: last) else {
            throw PackageBuildFailed(said: "build-deb.sh (exit \(status)) printed no package: \(said.suffix(4000))")
        }
        return last
    }
}
