#include "CAlsaShim.h"
#include <alsa/asoundlib.h>
#include <stdarg.h>
#include <stdio.h>

static recd_alsa_error_fn recd_alsa_error_target = NULL;

static void recd_alsa_error_handler(const char *file, int line, const char *function, int err,
                                    const char *fmt, ...) {
    char message[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    recd_alsa_error_fn target = recd_alsa_error_target;
    if (target) target(file, line, function, err, message);
}

void recd_alsa_set_error_callback(recd_alsa_error_fn fn) {
    recd_alsa_error_target = fn;
    snd_lib_error_set_handler(fn ? recd_alsa_error_handler : NULL);
}
