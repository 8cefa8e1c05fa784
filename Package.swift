// swift-tools-version:6.1
// recd — a media recording manager daemon for Linux.
import PackageDescription

let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]
// The daemon and its media worker in a release build: the Swift runtime and Foundation linked in
// (no Swift toolchain where the package is installed: decision 0019). A link flag of these two
// executables only, not SwiftPM's --static-swift-stdlib, which recompiles every module: the suite's
// one release build then makes both the test bundle (which loads the runtime as shared libraries, as
// XCTest does) and the binaries the package ships. The libraries named are Foundation's own static
// dependencies, which the modules' autolink entries (made against the shared runtime) do not list.
let staticRuntime = ["-static-stdlib", "-lCoreFoundation", "-lFoundationEssentials", "-lFoundationInternationalization", "-l_FoundationICU",
                     "-l_FoundationCollections", "-l_FoundationCShims", "-lswiftSynchronization"]
// The tests' own code is not optimized, in release too (`make test` builds release: decision 0026):
// optimizing it buys nothing, and whole-module optimization compiles each test target on one core at the
// end of the build, after the modules it tests (171 s against 80 s).
let testCode: [SwiftSetting] = [.unsafeFlags(["-Onone", "-no-whole-module-optimization"], .when(configuration: .release))]

let package = Package(
    name: "recd",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "recd", targets: ["recd"]),
        .executable(name: "recctl", targets: ["recctl"]),
        .executable(name: "recd-media", targets: ["recd-media"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        // Only the FullFoundation trait: ConfigurationSupport would compile swift-configuration for nothing.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: ["FullFoundation"]),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // Already in the graph through Hummingbird; named here because Server imports them directly
        // (HTTP field names; the HTTP parts a channel handler sees in Hummingbird's pipeline).
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
    ],
    targets: [
        // System libraries, found through pkg-config.
        .systemLibrary(name: "CAlsa", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        // EBU R128 loudness (ITU-R BS.1770): integrated, range, true peak.
        .systemLibrary(name: "CEbur128", pkgConfig: "libebur128", providers: [.apt(["libebur128-dev"])]),
        // FFmpeg, linked (its module map's `link` lines) by what imports it: only recd-media, the
        // benchmark and the unit tests; recd itself links none of it (docs/design.md, "One FFmpeg boundary").
        .systemLibrary(name: "CFFmpeg", pkgConfig: "libavformat",
                       providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libavfilter-dev", "libswresample-dev", "libswscale-dev"])]),
        // C shims: only what Swift cannot call (variadic callbacks, function-like macros).
        .target(name: "CAlsaShim", dependencies: ["CAlsa"]),
        .target(name: "CFFmpegShim", dependencies: ["CFFmpeg"]),
        // V4L2 request numbers (macros), the variadic ioctl, mmap's MAP_FAILED: nothing else.
        .target(name: "CV4L2"),
        .target(name: "CFileOps"),
        // prctl (variadic), posix_spawn's closefrom (_GNU_SOURCE) and Landlock's system calls for the
        // media workers.
        .target(name: "CProcessShim"),

        // Shared wire types: no C, no server code.
        .target(name: "RecdAPI", swiftSettings: strict),
        // The one owner of snd_pcm_t and the hw/sw-params negotiation capture and playback share.
        .target(name: "Alsa", dependencies: [
            "CAlsa",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        .target(name: "Capture", dependencies: [
            "Alsa", "CAlsa", "CAlsaShim", "CV4L2",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // What recd and its media workers both know: the media values and errors, and the wire between
        // them (requests, replies, frames). No FFmpeg.
        .target(name: "MediaWire", dependencies: ["CProcessShim"], swiftSettings: strict),
        // Log lines in the journal's form (both processes log the same way).
        .target(name: "JournalLog", dependencies: [.product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        // FFmpeg's side: probing, encoding, muxing, remuxing, trimming.
        .target(name: "Media", dependencies: [
            "CFFmpeg", "CFFmpegShim", "MediaWire",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // recd's side of the media workers: the pool that starts `recd-media` processes, and the
        // stand-ins (WorkerMedia) that send them requests; and the transcriber's process. No FFmpeg.
        .target(name: "MediaWorker", dependencies: ["MediaWire", "CProcessShim", "RecdAPI"], swiftSettings: strict),
        // The worker's side: its request loop over Media, and its Landlock sandbox.
        .target(name: "MediaWorkerServer", dependencies: [
            "Media", "MediaWire", "CProcessShim",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // Pure code over sample buffers: no C, no I/O.
        // Optimized in debug builds too: its per-sample loops (meters, waveform, true peak: SIMD) run
        // on the capture and encoder threads of the very recordings the test suite makes in real time,
        // and unoptimized SIMD is six times slower than plain loops.
        .target(name: "Metering", dependencies: ["RecdAPI", "CEbur128"],
                swiftSettings: strict + [.unsafeFlags(["-O"], .when(configuration: .debug))]),
        .target(name: "Playback", dependencies: [
            "Alsa", "CAlsa", "MediaWire", "MediaWorker", "Metering",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        .target(name: "Catalog", dependencies: [
            "RecdAPI",
            .product(name: "GRDB", package: "GRDB.swift"),
        ], swiftSettings: strict),
        // The crash protocol of docs/storage.md: every change that touches a file and the catalog.
        .target(name: "Storage", dependencies: [
            "RecdAPI", "Catalog", "MediaWire", "MediaWorker", "CFileOps",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOPosix", package: "swift-nio"),
        ], swiftSettings: strict),
        // restic as a child process: recd's backups, and recctl's restore.
        .target(name: "Backup", dependencies: ["CProcessShim", "RecdAPI"], swiftSettings: strict),
        .target(name: "Engine", dependencies: [
            "Alsa", "Backup", "RecdAPI", "Capture", "MediaWire", "MediaWorker", "Metering", "Playback", "Catalog", "Storage", "CFileOps",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "NIOPosix", package: "swift-nio"),
        ], swiftSettings: strict),
        .target(name: "Server", dependencies: [
            "RecdAPI", "Engine", "Storage", "JournalLog",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            .product(name: "NIOExtras", package: "swift-nio-extras"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], resources: [.copy("openapi.yaml"), .copy("webapp")], swiftSettings: strict),
        .executableTarget(name: "recd", dependencies: [
            "Server", "Engine", "MediaWorker", "JournalLog", "RecdAPI", "Backup",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], swiftSettings: strict,
        // Release: relative relocations packed (DT_RELR, glibc >= 2.36; lld, the toolchain's own,
        // writes them): fewer private dirty pages of relocated data (docs/design.md); and the Swift
        // runtime linked in, as the package ships it (`staticRuntime`, below).
        linkerSettings: [.unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"] + staticRuntime,
                                      .when(configuration: .release))]),
        // The media worker: FFmpeg linked as any program links it, started by recd (MediaWorkerPool)
        // for each job; never by a person.
        .executableTarget(name: "recd-media", dependencies: [
            "MediaWorkerServer", "JournalLog", "RecdAPI",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict,
        linkerSettings: [.unsafeFlags(staticRuntime, .when(configuration: .release))]),
        .executableTarget(name: "recctl", dependencies: [
            "RecdAPI", "Backup",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
        ], swiftSettings: strict,
        // The Swift runtime and FoundationEssentials linked in (the daemon keeps the shared ones): no
        // dynamic loading and symbol binding of ten libraries at each start, 3 of recctl's 9 ms
        // (BENCHMARKS.md, "Client start-up"). The two libraries named are Essentials' own, which the
        // driver's -static-stdlib does not add.
        linkerSettings: [.unsafeFlags(["-static-stdlib", "-l_FoundationCollections", "-l_FoundationCShims"])]),

        // Not a product: bench/metering.py builds and runs it.
        .executableTarget(name: "recd-bench", dependencies: ["Metering", "Media", "MediaWire"], swiftSettings: strict),

        .testTarget(name: "RecdUnitTests", dependencies: ["RecdAPI", "Catalog", "Storage", "Engine", "Media", "MediaWire", "MediaWorker", "MediaWorkerServer", "Capture", "Metering", "Playback", "Server",
                                                          // A Logger for the engine's actors built in a test.
                                                          .product(name: "Logging", package: "swift-log")],
                    swiftSettings: strict + testCode),
        .testTarget(name: "RecdIntegrationTests", dependencies: ["RecdAPI"], swiftSettings: strict + testCode),
    ],
    swiftLanguageModes: [.v6]
)
