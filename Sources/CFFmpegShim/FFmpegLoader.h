// Between FFmpegLoader.c and the generated FFmpegTrampolines.c; not seen by Swift.
#ifndef RECD_FFMPEG_LOADER_H
#define RECD_FFMPEG_LOADER_H
#include "../CFFmpeg/CFFmpeg.h"
#include "FFmpegFunctions.h"

/// Never exported: a trampoline must bind recd's own calls only, never interpose on FFmpeg's calls
/// between its libraries, nor take part in the dynamic symbol lookup at all.
#define RECD_FF_HIDDEN __attribute__((visibility("hidden")))

/// The libav*/libsw* function at `index` (an RECD_FF_ constant), loading the libraries if they are
/// not loaded, with `calls` read-held until recd_ffmpeg_leave (an unload waits for no call). Aborts,
/// naming the library, when they cannot be loaded: Media's entry points call recd_ffmpeg_load()
/// first and report that as an error, so this is only reached by a caller that did not.
RECD_FF_HIDDEN void *recd_ffmpeg_enter(int index);
RECD_FF_HIDDEN void recd_ffmpeg_leave(void);
RECD_FF_HIDDEN extern const char *const recd_ffmpeg_function_names[RECD_FF_COUNT];

#define RECD_FF_ENTER(name) ((__typeof__(&name))recd_ffmpeg_enter(RECD_FF_##name))
#endif
