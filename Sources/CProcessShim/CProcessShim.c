#define _GNU_SOURCE
#include "CProcessShim.h"
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

extern char **environ;

int recd_spawn_with_channel(const char *path, char *const argv[], int fd, pid_t *pid) {
    posix_spawn_file_actions_t actions;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) return rc;
    // dup2 clears close-on-exec on the copy; when fd is already 3, dup2 is a no-op and would leave
    // the flag set, so it goes through 4 first.
    if ((rc = posix_spawn_file_actions_adddup2(&actions, fd, 4)) == 0 &&
        (rc = posix_spawn_file_actions_adddup2(&actions, 4, 3)) == 0 &&
        (rc = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)) == 0 &&
        (rc = posix_spawn_file_actions_addclosefrom_np(&actions, 4)) == 0) {
        rc = posix_spawn(pid, path, &actions, NULL, argv, environ);
    }
    posix_spawn_file_actions_destroy(&actions);
    return rc;
}

int recd_set_parent_death_signal(int sig) {
    return prctl(PR_SET_PDEATHSIG, (unsigned long)sig, 0, 0, 0);
}

int recd_refuse_exec_gain(int inherited) {
    // PR_SET_MDWE (Linux 6.3): PR_MDWE_REFUSE_EXEC_GAIN (1), and unless `inherited`
    // PR_MDWE_NO_INHERIT (2, Linux 6.6): what systemd's MemoryDenyWriteExecute= does with seccomp,
    // without reaching the processes this one starts (the transcriber).
    return prctl(65, inherited ? 1UL : 3UL, 0UL, 0UL, 0UL) == 0 ? 0 : -errno;
}

int recd_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

int recd_shared_memory(const char *name, size_t size) {
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -1;
    if (ftruncate(fd, (off_t)size) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

ssize_t recd_send_with_descriptor(int socket, struct iovec *iov, int iovcnt, int fd) {
    union { char buffer[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = { .msg_iov = iov, .msg_iovlen = (size_t)iovcnt,
                              .msg_control = control.buffer, .msg_controllen = sizeof control.buffer };
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &fd, sizeof(int));
    return sendmsg(socket, &message, MSG_NOSIGNAL);
}

ssize_t recd_receive_with_descriptor(int socket, void *buffer, size_t length, int *fd) {
    union { char buffer[CMSG_SPACE(4 * sizeof(int))]; struct cmsghdr align; } control;
    struct iovec part = { .iov_base = buffer, .iov_len = length };
    struct msghdr message = { .msg_iov = &part, .msg_iovlen = 1,
                              .msg_control = control.buffer, .msg_controllen = sizeof control.buffer };
    *fd = -1;
    ssize_t n = recvmsg(socket, &message, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0) return n;
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&message); h != NULL; h = CMSG_NXTHDR(&message, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; i++) {
            int received;
            memcpy(&received, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
            if (*fd < 0) *fd = received; else close(received);
        }
    }
    return n;
}

// ---- Landlock (landlock(7)): the media workers' filesystem sandbox ----
#include <linux/landlock.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif

int recd_landlock_abi(void) {
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return abi < 0 ? -errno : (int)abi;
}

/// Rights that apply to a file (the others only to a directory: adding them to a file is EINVAL).
static const __u64 file_rights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE
    | LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV;

static int add_rule(int ruleset, const char *path, __u64 rights, int must_exist) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return (!must_exist && errno == ENOENT) ? 0 : -errno;
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) rights &= file_rights;
    struct landlock_path_beneath_attr rule = { .allowed_access = rights, .parent_fd = fd };
    int rc = (int)syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
    int saved = errno;
    close(fd);
    return rc < 0 ? -saved : 0;
}

int recd_landlock_enter(const char *const *writable, int writable_count, const char *const *readable, int readable_count,
                        const char **failed, const char **path) {
    *failed = "landlock_create_ruleset"; *path = NULL;
    int abi = recd_landlock_abi();
    if (abi < 0) return abi;
    // Every right this kernel knows: what is not handled is allowed everywhere.
    __u64 handled = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;   // ABI 1: EXECUTE ... MAKE_SYM
    if (abi >= 2) handled |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3) handled |= LANDLOCK_ACCESS_FS_TRUNCATE;
    if (abi >= 5) handled |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    struct landlock_ruleset_attr attr = { .handled_access_fs = handled };
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
    if (ruleset < 0) return -errno;
    int rc = 0;
    *failed = "landlock_add_rule";
    for (int i = 0; i < writable_count && rc == 0; i++) {
        rc = add_rule(ruleset, writable[i], handled, 1);
        if (rc < 0) *path = writable[i];
    }
    const __u64 read = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
    for (int i = 0; i < readable_count && rc == 0; i++) {
        rc = add_rule(ruleset, readable[i], read, 0);
        if (rc < 0) *path = readable[i];
    }
    if (rc == 0) {
        *failed = "prctl(PR_SET_NO_NEW_PRIVS)";
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) rc = -errno;
    }
    if (rc == 0) {
        *failed = "landlock_restrict_self";
        if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) rc = -errno;
    }
    close(ruleset);
    return rc;
}
