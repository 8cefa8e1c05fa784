// A test's stand-in for a parser bug (WorkerEscapeTests): preloaded (LD_PRELOAD) into recd and
// everything it starts, it does nothing in recd, recctl or the launcher, and runs hostile code where
// a crafted file would: in a media worker when it probes an upload, a library job's worker when it
// opens a recording, or a take's job process when it opens the take to finalize it
// (av_probe_input_buffer2), and in
// the transcriber once its model is loaded (its second seccomp filter is in). It tries each escape
// the sandbox must stop and writes one line of results to stderr (recd's log):
//   HOSTILE <where> name=ok|errno-name ...
// The targets come from the environment the test gives recd (HOSTILE_*).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

static char report[4096];
static size_t used;

static void note(const char *name, int rc) {
    int code = errno;
    used += (size_t)snprintf(report + used, sizeof report - used, " %s=%s", name,
                             rc >= 0 ? "ok" : strerrorname_np(code) ? strerrorname_np(code) : "error");
}

static int connect_unix(const char *path, int abstract) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    socklen_t length = sizeof a;
    if (abstract) {   // "\0name": the abstract namespace
        strncpy(a.sun_path + 1, path, sizeof a.sun_path - 2);
        length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(path));
    } else {
        strncpy(a.sun_path, path, sizeof a.sun_path - 1);
    }
    int rc = connect(fd, (struct sockaddr *)&a, length);
    close(fd);
    return rc;
}

static int connect_tcp(const char *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(port)),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    close(fd);
    return rc;
}

static const char *env(const char *name) {
    const char *v = getenv(name);
    return v ? v : "/nonexistent";
}

static void escape(const char *where, int try_exec) {
    used = (size_t)snprintf(report, sizeof report, "HOSTILE %s", where);
    note("read-secret", open(env("HOSTILE_SECRET"), O_RDONLY));
    note("write-catalog", open(env("HOSTILE_CATALOG"), O_RDWR));
    // A recording of the library: an upload's worker and the transcriber may neither read nor write it.
    note("read-recording", open(env("HOSTILE_RECORDING"), O_RDONLY));
    note("write-recording", open(env("HOSTILE_RECORDING"), O_WRONLY));
    char link_path[4096];
    snprintf(link_path, sizeof link_path, "%s/audio_hostile-link.m4a", env("HOSTILE_RECORDINGS"));
    note("symlink", symlink(env("HOSTILE_SECRET"), link_path));
    snprintf(link_path, sizeof link_path, "%s/audio_hostile-hard.m4a", env("HOSTILE_RECORDINGS"));
    note("hardlink", link(env("HOSTILE_SECRET"), link_path));
    snprintf(link_path, sizeof link_path, "%s/audio_hostile-fifo.m4a", env("HOSTILE_RECORDINGS"));
    note("mkfifo", mkfifo(link_path, 0600));
    note("connect-recd", connect_unix(env("HOSTILE_RECD_SOCKET"), 0));
    note("connect-pulse", connect_unix(env("HOSTILE_PULSE_SOCKET"), 0));
    note("connect-abstract", connect_unix(env("HOSTILE_ABSTRACT"), 1));
    note("connect-tcp", connect_tcp(env("HOSTILE_TCP_PORT")));
    note("kill-parent", kill(getppid(), 0));
    note("kill-other", kill((pid_t)atoi(env("HOSTILE_OTHER_PID")), 0));
    note("kill-group", kill(0, 0));
    note("ptrace", (int)ptrace(PTRACE_ATTACH, getppid(), NULL, NULL));
    char byte;
    struct iovec local = { &byte, 1 }, remote = { (void *)0x400000, 1 };
    note("process_vm_readv", (int)process_vm_readv(getppid(), &local, 1, &remote, 1, 0));
    if (try_exec) {
        char *argv[] = { "true", NULL };
        note("execve", execve("/bin/true", argv, environ));
    }
    used += (size_t)snprintf(report + used, sizeof report - used, "\n");
    if (write(2, report, used) < 0) {}
}

// Whether this process is a library job's media worker (`recd-media … --one-job`, or a library
// worker's job process, `--library`, forked after this was read): read at load, before its walls close /proc.
static int is_one_job;
static int one_job(void) { return is_one_job; }
static int read_one_job(void) {
    char cmdline[4096] = { 0 };
    int fd = open("/proc/self/cmdline", O_RDONLY);
    if (fd < 0) return 0;
    ssize_t n = read(fd, cmdline, sizeof cmdline - 1);
    close(fd);
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(cmdline + i) + 1)
        if (strcmp(cmdline + i, "--one-job") == 0 || strcmp(cmdline + i, "--library") == 0) return 1;
    return 0;
}

// The media worker: the first probe of an upload, and a library job's first open of a recording
// (an imported file's packets taking over its parser when it is trimmed or played).
int av_probe_input_buffer2(void *pb, const void **fmt, const char *url, void *logctx, unsigned offset, unsigned max) {
    static int done;
    if (!done && url && strstr(url, "/.uploads/")) { done = 1; escape("media-worker", 1); }
    else if (!done && url && strstr(url, "/Recordings/") && one_job()) { done = 1; escape("library-worker", 1); }
    // A take's worker's job process, finalizing the take it wrote (its parent parses nothing).
    else if (!done && url && strstr(url, "/Recordings/")) { done = 1; escape("take-worker", 1); }
    int (*real)(void *, const void **, const char *, void *, unsigned, unsigned) = dlsym(RTLD_NEXT, "av_probe_input_buffer2");
    return real(pb, fmt, url, logctx, offset, max);
}

// The transcriber: once its own filter is stacked (Seccomp_filters: 2 in /proc/self/status).
static void *watch(void *unused) {
    (void)unused;
    for (int i = 0; i < 3000; i++) {
        char status[8192] = { 0 };
        int fd = open("/proc/self/status", O_RDONLY);
        if (fd >= 0) { if (read(fd, status, sizeof status - 1) < 0) {} close(fd); }
        const char *line = strstr(status, "Seccomp_filters:");
        if (line && atoi(line + strlen("Seccomp_filters:")) >= 2) { escape("transcriber", 1); return NULL; }
        usleep(50000);
    }
    return NULL;
}

__attribute__((constructor)) static void start(void) {
    is_one_job = read_one_job();
    char exe[4096] = { 0 };
    if (readlink("/proc/self/exe", exe, sizeof exe - 1) < 0) return;
    const char *base = strrchr(exe, '/');
    if (!base || strncmp(base + 1, "python", 6) != 0) return;
    pthread_t thread;
    if (pthread_create(&thread, NULL, watch, NULL) == 0) pthread_detach(thread);
}
