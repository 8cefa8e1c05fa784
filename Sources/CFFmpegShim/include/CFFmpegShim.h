#ifndef RECD_CFFMPEGSHIM_H
#define RECD_CFFMPEGSHIM_H
// FFmpeg's error codes and a few constants are function-like or compound macros that Swift's
// importer drops ("macro 'AVERROR' unavailable", "structure not supported"): each recd_averror_/
// recd_av_ function here returns exactly one of them.
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

/// The path of the libavcodec this process loaded (dladdr, a GNU extension Swift's Glibc leaves
/// out), NULL if unknown: libavfilter is loaded from beside it (`AVFilterLibrary`).
const char *recd_avcodec_library_path(void);

#endif
