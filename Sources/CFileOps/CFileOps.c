#define _GNU_SOURCE
#include "CFileOps.h"
#include <fcntl.h>
#include <stdio.h>

int CFileOps_exchange(const char *a, const char *b) {
    return renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
}

#include <errno.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

int CFileOps_open_beneath(const char *directory, const char *name, int flags) {
    int dir = open(directory, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return -1;
    struct open_how how = { .flags = (unsigned long long)(flags | O_CLOEXEC | O_NOFOLLOW),
                            .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
    int fd = (int)syscall(SYS_openat2, dir, name, &how, sizeof how);
    if (fd < 0 && errno == ENOSYS) {
        // Before Linux 5.6: the name is one component (the caller checked), so O_NOFOLLOW covers it.
        fd = openat(dir, name, flags | O_CLOEXEC | O_NOFOLLOW);
    }
    int saved = errno;
    close(dir);
    errno = saved;
    return fd;
}
