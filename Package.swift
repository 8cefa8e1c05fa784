// swift-tools-version:6.1
// recd — a media recording manager daemon for Linux.
import PackageDescription

let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

let package = Package(
    name: "recd",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "recd", targets: ["recd"]),
        .executable(name: "recctl", targets: ["recctl"]),
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
        // FFmpeg's headers only: recd loads its libraries on first use (CFFmpegShim's FFmpegLoader.c,
        // docs/design.md "FFmpeg on demand"), so nothing links them. Not through pkg-config, whose
        // --libs would put libavformat (and so ~130 libraries) back into every start-up; its --cflags
        // are Debian's multiarch include directory, which the compiler searches anyway.
        .systemLibrary(name: "CFFmpeg",
                       providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswresample-dev", "libswscale-dev"])]),
        // C shims: only what Swift cannot call (variadic callbacks, function-like macros), and
        // FFmpeg's loader with its generated trampolines (functions of FFmpeg's own names).
        .target(name: "CAlsaShim", dependencies: ["CAlsa"]),
        .target(name: "CFFmpegShim", dependencies: ["CFFmpeg"]),
        // V4L2 request numbers (macros), the variadic ioctl, mmap's MAP_FAILED: nothing else.
        .target(name: "CV4L2"),
        .target(name: "CFileOps"),
        // mallopt(3): <malloc.h> is not in Swift's Glibc module.
        .target(name: "CMalloc"),
        // prctl (variadic) and posix_spawn's closefrom (_GNU_SOURCE) for the media workers.
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
        .target(name: "Media", dependencies: [
            "CFFmpeg", "CFFmpegShim",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // Media in a worker process (`recd --media-worker`): the requests, the worker's loop, and the
        // pool and stand-ins recd uses, so FFmpeg never loads into the daemon (docs/design.md).
        .target(name: "MediaWorker", dependencies: [
            "Media", "CProcessShim",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // Pure code over sample buffers: no C, no I/O.
        // Optimized in debug builds too: its per-sample loops (meters, waveform, true peak: SIMD) run
        // on the capture and encoder threads of the very recordings the test suite makes in real time,
        // and unoptimized SIMD is six times slower than plain loops.
        .target(name: "Metering", dependencies: ["RecdAPI", "CEbur128"],
                swiftSettings: strict + [.unsafeFlags(["-O"], .when(configuration: .debug))]),
        .target(name: "Playback", dependencies: [
            "Alsa", "CAlsa", "Media", "MediaWorker", "Metering",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        .target(name: "Catalog", dependencies: [
            "RecdAPI",
            .product(name: "GRDB", package: "GRDB.swift"),
        ], swiftSettings: strict),
        .target(name: "Engine", dependencies: [
            "Alsa", "RecdAPI", "Capture", "Media", "MediaWorker", "Metering", "Playback", "Catalog", "CFileOps",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "NIOPosix", package: "swift-nio"),
        ], swiftSettings: strict),
        .target(name: "Server", dependencies: [
            "RecdAPI", "Engine", "Catalog", "Metering",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            .product(name: "NIOExtras", package: "swift-nio-extras"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], resources: [.copy("openapi.yaml"), .copy("webapp")], swiftSettings: strict),
        .executableTarget(name: "recd", dependencies: [
            "Server", "Engine", "MediaWorker", "CMalloc",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], swiftSettings: strict,
        // Release: linked by lld (the toolchain's own) with the code recd runs placed first
        // (scripts/link-order/recd-hot.ld, written by scripts/gen-link-order.py; tightest when
        // compiled as scripts/swift-build-release does, each function in its own section), and
        // relative relocations packed (DT_RELR, glibc >= 2.36): an idle daemon maps 1.5 MB of its
        // 9 MB of code instead of 7.5 (docs/design.md, "Hot code first").
        linkerSettings: [.unsafeFlags([
            "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
            "-Xlinker", "--script=\(Context.packageDirectory)/scripts/link-order/recd-hot.ld",
        ], .when(configuration: .release))]),
        .executableTarget(name: "recctl", dependencies: [
            "RecdAPI",
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
        .executableTarget(name: "recd-bench", dependencies: ["Metering", "Media"], swiftSettings: strict),

        .testTarget(name: "RecdUnitTests", dependencies: ["RecdAPI", "Catalog", "Engine", "Media", "MediaWorker", "Capture", "Metering", "Playback", "Server"],
                    swiftSettings: strict),
        .testTarget(name: "RecdIntegrationTests", dependencies: ["RecdAPI"], swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)
