#ifndef RECD_CPROCESSSHIM_H
#define RECD_CPROCESSSHIM_H
// Starting and tying down recd's media worker processes (MediaWorker): what Swift's import of glibc
// does not show. prctl(2) is variadic; posix_spawn_file_actions_addclosefrom_np is declared only
// under _GNU_SOURCE.
#include <sys/types.h>

/// Starts `path` with `argv` (NULL-terminated) and the caller's environment, `fd` as the child's
/// descriptor 3 and every descriptor above 3 closed in the child (none of the daemon's sockets,
/// database, lock or devices leaks into it, whatever their close-on-exec flag). stdin is /dev/null;
/// stdout and stderr are the caller's (the journal). Returns 0 and the child's pid, or an errno.
int recd_spawn_with_channel(const char *path, char *const argv[], int fd, pid_t *pid);

/// prctl(PR_SET_PDEATHSIG, sig): `sig` is sent to this process when the thread that started it ends.
/// Returns 0 or -1 with errno.
int recd_set_parent_death_signal(int sig);

/// prctl(PR_SET_NAME, name): the calling thread's name (up to 15 bytes); called on a process's main
/// thread, its name in ps and top.
int recd_set_thread_name(const char *name);

#endif
