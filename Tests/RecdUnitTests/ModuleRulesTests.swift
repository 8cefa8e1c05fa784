// The module rules of docs/design.md ("Which module may import which"), held against the code: each
// target's imports of recd's own modules are in its row of the table and declared in Package.swift,
// and its other imports are declared products or the platform's. SwiftPM compiles an import of a
// module that a dependency merely brings along, so without this the manifest states rules it does
// not enforce (issue 46).
import Foundation
import XCTest

final class ModuleRulesTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The platform's modules: no declaration needed.
    static let platform: Set<String> = ["Foundation", "FoundationEssentials", "Glibc", "Dispatch", "Synchronization",
                                        "XCTest", "_Concurrency"]

    /// Target → the modules its Swift files import.
    static func imports() throws -> [String: Set<String>] {
        var result: [String: Set<String>] = [:]
        let sources = root.appendingPathComponent("Sources")
        for target in try FileManager.default.contentsOfDirectory(atPath: sources.path) {
            let dir = sources.appendingPathComponent(target)
            let files = (try? FileManager.default.contentsOfDirectory(atPath: dir.path))?.filter { $0.hasSuffix(".swift") } ?? []
            guard !files.isEmpty else { continue }
            var modules = Set<String>()
            for file in files {
                let text = try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8)
                for line in text.split(separator: "\n") {
                    let words = line.split(separator: " ").filter { !$0.hasPrefix("@") }
                    if words.count >= 2, words[0] == "import" { modules.insert(String(words[1])) }
                }
            }
            result[target] = modules
        }
        return result
    }

    /// Target → its declared dependencies in Package.swift: targets by name, and products' names.
    static func declared() throws -> [String: Set<String>] {
        let manifest = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        var result: [String: Set<String>] = [:]
        let declaration = try NSRegularExpression(pattern: #"\.(?:executableTarget|target|testTarget)\(name: "([^"]+)"(?:, dependencies: \[)?"#)
        let quoted = try NSRegularExpression(pattern: #""([^"]+)""#)
        let ns = manifest as NSString
        for match in declaration.matches(in: manifest, range: NSRange(location: 0, length: ns.length)) {
            let name = ns.substring(with: match.range(at: 1))
            guard ns.substring(with: match.range).hasSuffix("[") else { result[name] = []; continue }
            // The dependency list: to its closing bracket (products' parentheses hold no brackets).
            var depth = 1, i = match.range.location + match.range.length
            let start = i
            while depth > 0 && i < ns.length {
                let c = ns.character(at: i)
                if c == 0x5B { depth += 1 } else if c == 0x5D { depth -= 1 }
                i += 1
            }
            let list = ns.substring(with: NSRange(location: start, length: i - 1 - start)) as NSString
            var names = Set<String>()
            for q in quoted.matches(in: list as String, range: NSRange(location: 0, length: list.length)) {
                let before = list.substring(to: q.range.location)
                // In `.product(name: "X", package: "p")` the package's name is not a module.
                if before.hasSuffix("package: ") { continue }
                names.insert(list.substring(with: q.range(at: 1)))
            }
            result[name] = names
        }
        return result
    }

    /// The table of docs/design.md: module → the recd modules it may import.
    static func table() throws -> [String: Set<String>] {
        let design = try String(contentsOf: root.appendingPathComponent("docs/design.md"), encoding: .utf8)
        guard let heading = design.range(of: "| module | may import (recd's own modules) |") else { return [:] }
        var result: [String: Set<String>] = [:]
        for line in design[heading.upperBound...].split(separator: "\n").dropFirst() {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 2 else { continue }
            result[cells[0]] = cells[1] == "—" ? [] : Set(cells[1].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        }
        return result
    }

    func testEveryImportIsInTheDesignTableAndDeclaredInThePackage() throws {
        let imports = try Self.imports(), declared = try Self.declared(), table = try Self.table()
        let ours = Set(imports.keys).union(try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Sources").path))
        XCTAssertFalse(table.isEmpty, "docs/design.md has the table")
        XCTAssertEqual(Set(table.keys), Set(imports.keys), "one row for each Swift target")
        for (target, modules) in imports.sorted(by: { $0.key < $1.key }) {
            let allowed = table[target] ?? [], deps = declared[target] ?? []
            for module in modules.sorted() where !Self.platform.contains(module) {
                if ours.contains(module) {
                    XCTAssertTrue(allowed.contains(module), "\(target) imports \(module): not in its row of docs/design.md's table")
                }
                XCTAssertTrue(deps.contains(module), "\(target) imports \(module), which Package.swift does not declare for it")
            }
            for module in allowed where !modules.contains(module) {
                XCTFail("docs/design.md lets \(target) import \(module), which it does not: the row should say what is")
            }
        }
    }

    /// The checker itself: an undeclared import and one outside the table are found.
    func testTheCheckerFindsWhatItLooksFor() throws {
        let declared = try Self.declared()
        XCTAssertEqual(declared["recctl"]?.contains("RecdAPI"), true)
        XCTAssertEqual(declared["Server"]?.contains("Catalog"), false, "Server does not declare Catalog")
        XCTAssertEqual(declared["Server"]?.contains("Hummingbird"), true, "a product is declared by its name")
        XCTAssertEqual(declared["Server"]?.contains("hummingbird"), false, "a package's name is no module")
        XCTAssertEqual(try Self.table()["recctl"], ["Backup", "RecdAPI"])
        XCTAssertEqual(try Self.imports()["Catalog"]?.contains("GRDB"), true)
    }
}
