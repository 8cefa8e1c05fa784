// FFmpeg on demand: the libraries are opened (dlopen) the first time recd needs one of their
// functions, not by the dynamic loader at start-up. Debian's libavformat/libavcodec pull in ~130
// libraries (codecs, TLS, XML, SVG, X11, OpenCL ...): 21 MB resident and ~25 ms of loading that a
// daemon which has not yet recorded or played anything does not need (BENCHMARKS.md, "Idle").
// The calls themselves go through FFmpegTrampolines.c (generated) and this file's table.
//
// And unloaded when idle: every Swift type that owns an FFmpeg object holds the libraries
// (recd_ffmpeg_hold/release: an AVCodecContext points into libavcodec's data and code); once
// nothing has held them for `idle_unload_seconds` (the daemon's --ffmpeg-idle-unload), a thread of
// this file closes them. Every call runs under the read side of `calls`, the unload under its write
// side (only tried, never waited for), so no call is ever inside a library being closed; a call
// after the unload loads them again.
// What FFmpeg's dependencies mark NODELETE (glib, libcrypto, libx265 …) stays in memory.
#define _GNU_SOURCE   // pthread_setname_np
#include "FFmpegLoader.h"
#include "CFFmpegShim.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RECD_SONAME(lib, major) "lib" lib ".so." AV_STRINGIFY(major)
/// In dependency order; the ABI majors of the headers recd was built with.
static const char *const library_names[] = {
    RECD_SONAME("avutil", LIBAVUTIL_VERSION_MAJOR),
    RECD_SONAME("swresample", LIBSWRESAMPLE_VERSION_MAJOR),
    RECD_SONAME("swscale", LIBSWSCALE_VERSION_MAJOR),
    RECD_SONAME("avcodec", LIBAVCODEC_VERSION_MAJOR),
    RECD_SONAME("avformat", LIBAVFORMAT_VERSION_MAJOR),
};
#define LIBRARY_COUNT (sizeof library_names / sizeof library_names[0])

/// `loading` guards the handles, the table, the holds and the unloader's state; `calls` is read-held
/// by every call through the table and write-held by an unload.
static pthread_mutex_t loading = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t holds_changed = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t calls = PTHREAD_RWLOCK_INITIALIZER;
static void *handles[LIBRARY_COUNT];
static void *functions[RECD_FF_COUNT];
/// Empty when loaded; else what failed (the library or function and dlerror's text).
static char load_error[512] = "not loaded";
static atomic_bool loaded;
static long holds;
static struct timespec idle_since;
/// recd_ffmpeg_set_idle_unload (the daemon's --ffmpeg-idle-unload); negative: never (the default:
/// a program that does not ask keeps them, as if linked).
static double idle_unload_seconds = -1;
static bool unloader_started;
static atomic_long loads, unloads;

/// The log routing asked for before or after loading (FFmpegLog.route), applied at every load.
static int log_level = AV_LOG_WARNING;
static recd_ffmpeg_log_callback log_callback;

static void apply_log_locked(void) {
    if (!log_callback) return;
    ((__typeof__(&av_log_set_level))functions[RECD_FF_av_log_set_level])(log_level);
    ((__typeof__(&av_log_set_callback))functions[RECD_FF_av_log_set_callback])(log_callback);
}

static void close_libraries_locked(void) {
    for (size_t i = LIBRARY_COUNT; i-- > 0;) {
        if (handles[i]) dlclose(handles[i]);
        handles[i] = NULL;
    }
    memset(functions, 0, sizeof functions);
}

static void *unloader(void *unused);

static int load_locked(void) {
    if (atomic_load(&loaded)) return 0;
    for (size_t i = 0; i < LIBRARY_COUNT; i++) {
        handles[i] = dlopen(library_names[i], RTLD_NOW | RTLD_LOCAL);
        if (!handles[i]) {
            snprintf(load_error, sizeof load_error, "dlopen(%s): %s", library_names[i], dlerror());
            close_libraries_locked();
            return -1;
        }
    }
    for (int f = 0; f < RECD_FF_COUNT; f++) {
        for (size_t i = LIBRARY_COUNT; i-- > 0 && !functions[f];)
            functions[f] = dlsym(handles[i], recd_ffmpeg_function_names[f]);
        if (!functions[f]) {
            snprintf(load_error, sizeof load_error, "dlsym(%s): not in %s ... %s", recd_ffmpeg_function_names[f],
                     library_names[0], library_names[LIBRARY_COUNT - 1]);
            close_libraries_locked();
            return -1;
        }
    }
    load_error[0] = 0;
    apply_log_locked();
    atomic_store(&loaded, true);
    atomic_fetch_add(&loads, 1);
    clock_gettime(CLOCK_MONOTONIC, &idle_since);
    if (!unloader_started) {
        pthread_t thread;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 256 * 1024);   // dlclose runs the libraries' destructors here
        unloader_started = pthread_create(&thread, &attr, unloader, NULL) == 0;
        pthread_attr_destroy(&attr);
    }
    pthread_cond_broadcast(&holds_changed);
    return 0;
}

int recd_ffmpeg_load(char *error, size_t size) {
    pthread_mutex_lock(&loading);
    int rc = load_locked();
    if (rc != 0 && error && size) snprintf(error, size, "%s", load_error);
    pthread_mutex_unlock(&loading);
    return rc;
}

int recd_ffmpeg_is_loaded(void) { return atomic_load(&loaded); }

void *recd_ffmpeg_enter(int index) {
    for (;;) {
        pthread_rwlock_rdlock(&calls);
        if (__builtin_expect(atomic_load_explicit(&loaded, memory_order_acquire), 1)) return functions[index];
        pthread_rwlock_unlock(&calls);
        char error[512];
        if (recd_ffmpeg_load(error, sizeof error) != 0) {
            fprintf(stderr, "recd: FFmpeg's libraries could not be loaded: %s\n", error);
            abort();
        }
    }
}

void recd_ffmpeg_leave(void) { pthread_rwlock_unlock(&calls); }

void recd_ffmpeg_hold(void) {
    pthread_mutex_lock(&loading);
    holds++;
    pthread_mutex_unlock(&loading);
}

void recd_ffmpeg_release(void) {
    pthread_mutex_lock(&loading);
    if (--holds == 0) {
        clock_gettime(CLOCK_MONOTONIC, &idle_since);
        pthread_cond_broadcast(&holds_changed);
    }
    pthread_mutex_unlock(&loading);
}

static struct timespec plus(struct timespec t, double seconds) {
    long long ns = t.tv_nsec + (long long)(seconds * 1e9);
    t.tv_sec += ns / 1000000000;
    t.tv_nsec = ns % 1000000000;
    return t;
}

/// Sleeps (no timeout: no wake-up) until the libraries are loaded and held by nothing, waits out
/// `idle_unload_seconds` from the last release, then closes them if it can take `calls` for writing
/// at once (a call in progress: it tries again a second later).
static void *unloader(void *unused) {
    (void)unused;
    pthread_setname_np(pthread_self(), "ffmpeg-unload");
    pthread_mutex_lock(&loading);
    for (;;) {
        while (!(atomic_load(&loaded) && holds == 0 && idle_unload_seconds >= 0))
            pthread_cond_wait(&holds_changed, &loading);
        struct timespec due = plus(idle_since, idle_unload_seconds), now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long left = (due.tv_sec - now.tv_sec) * 1000000000LL + (due.tv_nsec - now.tv_nsec);
        if (left > 0) {
            // (The condition variable's clock is CLOCK_REALTIME: the wait is measured on the
            // monotonic clock above and only its remainder handed over.)
            struct timespec wall;
            clock_gettime(CLOCK_REALTIME, &wall);
            struct timespec until = plus(wall, left / 1e9);
            pthread_cond_timedwait(&holds_changed, &loading, &until);
            continue;   // re-check everything: a hold, a later release, a load, a new setting
        }
        if (pthread_rwlock_trywrlock(&calls) == 0) {
            if (holds == 0 && atomic_load(&loaded)) {
                atomic_store(&loaded, false);
                close_libraries_locked();
                snprintf(load_error, sizeof load_error, "unloaded");
                atomic_fetch_add(&unloads, 1);
            }
            pthread_rwlock_unlock(&calls);
        } else {
            idle_since = plus(now, 1 - idle_unload_seconds);
        }
    }
    return NULL;
}

void recd_ffmpeg_set_idle_unload(double seconds) {
    pthread_mutex_lock(&loading);
    idle_unload_seconds = seconds;
    pthread_cond_broadcast(&holds_changed);
    pthread_mutex_unlock(&loading);
}

long recd_ffmpeg_load_count(void) { return atomic_load(&loads); }
long recd_ffmpeg_unload_count(void) { return atomic_load(&unloads); }

void recd_ffmpeg_route_log(int level, recd_ffmpeg_log_callback callback) {
    pthread_mutex_lock(&loading);
    log_level = level;
    log_callback = callback;
    if (atomic_load(&loaded)) apply_log_locked();
    pthread_mutex_unlock(&loading);
}
