#ifndef RECD_CALSASHIM_H
#define RECD_CALSASHIM_H
// alsa-lib reports errors through a variadic printf-style handler (snd_lib_error_handler_t),
// which Swift cannot implement. This shim formats the message in C and forwards a plain string.

/// Called for every alsa-lib error message, already formatted.
typedef void (*recd_alsa_error_fn)(const char *file, int line, const char *function, int err,
                                   const char *message);

/// Routes alsa-lib's error messages to `fn` (NULL restores alsa-lib's default: printing to stderr).
void recd_alsa_set_error_callback(recd_alsa_error_fn fn);

#endif
