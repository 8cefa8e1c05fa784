#define _GNU_SOURCE   /* dladdr */
#include "CFFmpegShim.h"
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <errno.h>
#include <dlfcn.h>
#include <libavcodec/avcodec.h>

int recd_averror_eagain(void) { return AVERROR(EAGAIN); }
int recd_averror_eof(void) { return AVERROR_EOF; }
int recd_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
int recd_averror_from_errno(int posix_errno) { return AVERROR(posix_errno); }
int64_t recd_av_nopts_value(void) { return AV_NOPTS_VALUE; }
AVRational recd_av_time_base_q(void) { return AV_TIME_BASE_Q; }

int recd_averror_stream_not_found(void) { return AVERROR_STREAM_NOT_FOUND; }

const char *recd_avcodec_library_path(void) {
    Dl_info info;
    return dladdr((const void *)avcodec_version, &info) != 0 ? info.dli_fname : NULL;
}
