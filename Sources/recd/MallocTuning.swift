import CMalloc
import Glibc

/// glibc's allocator set for a daemon that idles most of the day, before the first thread starts.
///
/// Left alone, glibc raises its mmap threshold to the largest block freed so far (up to 32 MB),
/// after which big blocks (FFmpeg's codec buffers at open, a CSV export) come from the arenas and
/// stay there: after a recording was made, played and deleted, an idle recd held 12 MB of heap
/// instead of 4 at start-up. With the threshold fixed at 128 KB such blocks are mapped and given
/// back on free: 7.7 MB (docs/design.md, "Hot code first"). recd's per-period buffers are smaller
/// and reused.
///
/// Fixing the mmap threshold also fixes the trim threshold (the free space at an arena's top that
/// is given back at once) at glibc's 128 KB; arenas were then shrunk and grown again under load,
/// +15% CPU for 16,000 plays from 32 clients. At 1 MB it costs nothing measurable there.
///
/// Not the number of arenas: two (down from 8 per CPU) kept another 1.3 MB less heap after work,
/// but together with the fixed threshold the slowest status during a 50,000-row repair went
/// from 25 to 44–48 ms (two runs of bench/catalog-ops.py; each setting alone 25).
///
/// A person who tunes malloc through the environment (`MALLOC_MMAP_THRESHOLD_`, `GLIBC_TUNABLES`
/// …) keeps their setting: mallopt would override it.
enum MallocTuning {
    static let mmapThreshold: Int32 = 128 * 1024
    static let trimThreshold: Int32 = 1024 * 1024

    static func apply() {
        let environment = ["GLIBC_TUNABLES", "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"]
        guard environment.allSatisfy({ getenv($0) == nil }) else { return }
        mallopt(M_MMAP_THRESHOLD, mmapThreshold)
        mallopt(M_TRIM_THRESHOLD, trimThreshold)
    }
}
