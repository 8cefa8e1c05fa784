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
