#ifndef RECD_CFFMPEGSHIM_H
#define RECD_CFFMPEGSHIM_H
// FFmpeg's error codes and a few constants are function-like or compound macros that Swift's
// importer drops ("macro 'AVERROR' unavailable", "structure not supported"): each recd_averror_/
// recd_av_ function here returns exactly one of them. The recd_ffmpeg_ functions load FFmpeg's
// libraries on demand and unload them when idle (FFmpegLoader.c).
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <libavutil/rational.h>

/// AVERROR(EAGAIN): "output is not available in this state, send more input".
int recd_averror_eagain(void);
/// AVERROR_EOF: end of stream.
int recd_averror_eof(void);
/// AVERROR_INVALIDDATA: damaged input (a packet the decoder cannot use).
int recd_averror_invaliddata(void);
/// AVERROR_STREAM_NOT_FOUND: av_find_best_stream found no stream of the kind asked for.
int recd_averror_stream_not_found(void);
/// AVERROR(errno) for an arbitrary POSIX errno value (e.g. ENOSPC).
int recd_averror_from_errno(int posix_errno);
/// AV_NOPTS_VALUE: "no timestamp".
int64_t recd_av_nopts_value(void);
/// AV_TIME_BASE_Q: microseconds, the time base of AVFormatContext.duration.
AVRational recd_av_time_base_q(void);

/// Opens libavutil ... libavformat (once; thread-safe) and resolves every function recd calls.
/// 0, or -1 with what failed (the library or function, dlerror's text) written to `error`.
int recd_ffmpeg_load(char *error, size_t size);
/// 1 while the libraries are loaded.
int recd_ffmpeg_is_loaded(void);
/// Held by every owner of an FFmpeg object, from before its first call to after its last: the
/// libraries are unloaded only after nothing held them for the idle time.
void recd_ffmpeg_hold(void);
void recd_ffmpeg_release(void);
/// Seconds without a hold before the libraries are closed; negative (the default): never.
void recd_ffmpeg_set_idle_unload(double seconds);
/// How often the libraries were loaded and unloaded (tests).
long recd_ffmpeg_load_count(void);
long recd_ffmpeg_unload_count(void);

typedef void (*recd_ffmpeg_log_callback)(void *, int, const char *, va_list);
/// av_log_set_level + av_log_set_callback, now if the libraries are loaded, else when they load.
void recd_ffmpeg_route_log(int level, recd_ffmpeg_log_callback callback);

#endif
