import CMalloc
import Glibc

/// glibc's allocator set for a daemon that idles most of the day, before the first thread starts.
///
/// Left alone, glibc gives every thread that allocates its own arena (up to 8 per CPU), each
/// keeping what it freed, and raises its mmap threshold to the largest block freed so far (up to
/// 32 MB), after which big blocks come from the arenas too and stay there. After a recording was
/// made, played and deleted, an idle recd held 12 MB of heap instead of 4 at start-up; with two
/// arenas and the threshold fixed at 128 KB, 6.7 (docs/design.md, "Hot code first").
/// Blocks of 128 KB and more (FFmpeg's codec buffers at open, a CSV export) are then mapped and
/// returned on free; recd's per-period buffers are smaller and reused.
///
/// Fixing the mmap threshold also fixes the trim threshold (the free space at an arena's top that
/// is given back at once) at glibc's 128 KB, and then the play-count bench's arenas were shrunk
/// and grown again all the time: +15% CPU for 16,000 plays from 32 clients. At 1 MB it costs
/// nothing measurable there and the idle heap is the same.
///
/// A person who tunes malloc through the environment (`MALLOC_ARENA_MAX`, `GLIBC_TUNABLES`)
/// keeps their setting: mallopt would override it.
enum MallocTuning {
    static let arenas: Int32 = 2
    static let mmapThreshold: Int32 = 128 * 1024
    static let trimThreshold: Int32 = 1024 * 1024

    static func apply() {
        let environment = ["GLIBC_TUNABLES", "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"]
        guard environment.allSatisfy({ getenv($0) == nil }) else { return }
        mallopt(M_ARENA_MAX, arenas)
        mallopt(M_MMAP_THRESHOLD, mmapThreshold)
        mallopt(M_TRIM_THRESHOLD, trimThreshold)
    }
}
