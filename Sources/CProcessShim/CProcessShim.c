#define _GNU_SOURCE
#include "CProcessShim.h"
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/prctl.h>
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
