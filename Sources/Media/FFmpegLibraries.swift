// FFmpeg's libraries are loaded on first use and closed again when nothing has used them for a
// while (CFFmpegShim's FFmpegLoader.c; docs/design.md, "FFmpeg on demand"). Every public entry point
// of Media that calls into libav* asks for them here first, so a machine without them gets a typed
// error at its first recording, playback or import instead of an abort; every type that owns an
// FFmpeg object keeps a `Hold` for its whole life, so they are never closed under it.
import CFFmpegShim
import Synchronization

public enum FFmpegLibraries {
    private static let refusal = Mutex<String?>(nil)

    /// Loads libavutil ... libavformat (later calls return at once while they are loaded).
    public static func load() throws(MediaError) {
        if recd_ffmpeg_is_loaded() != 0 { return }
        if let why = refusal.withLock({ $0 }) { throw .librariesUnavailable(why) }
        var error = [CChar](repeating: 0, count: 512)
        guard recd_ffmpeg_load(&error, error.count) == 0 else {
            throw .librariesUnavailable(error.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        }
    }

    /// Makes every later `load()` in this process throw `why`: recd itself, whose media work is
    /// done by worker processes (MediaWorker), so that a call that slipped past them is an error
    /// and not FFmpeg's ~130 libraries loaded into the daemon for good.
    public static func refuse(_ why: String) {
        refusal.withLock { $0 = why }
    }

    /// True while they are in memory.
    public static var isLoaded: Bool { recd_ffmpeg_is_loaded() != 0 }

    /// How long nothing may hold them before they are closed; nil (the default): never. recd asks
    /// for its --ffmpeg-idle-unload (30 s).
    public static func unloadWhenIdle(after seconds: Double?) {
        recd_ffmpeg_set_idle_unload(seconds ?? -1)
    }

    /// Loads and unloads so far (tests).
    public static var loadCount: Int { recd_ffmpeg_load_count() }
    public static var unloadCount: Int { recd_ffmpeg_unload_count() }

    /// Keeps the libraries loaded while it lives: a stored property of each owner of an FFmpeg object
    /// (initialized before the owner's `init` body runs, released after its `deinit` body).
    final class Hold {
        init() { recd_ffmpeg_hold() }
        deinit { recd_ffmpeg_release() }
    }
}
