#ifndef RECD_CPROCESSSHIM_H
#define RECD_CPROCESSSHIM_H
// Starting and tying down recd's media worker processes (MediaWorker): what Swift's import of glibc
// does not show. prctl(2) is variadic; posix_spawn_file_actions_addclosefrom_np is declared only
// under _GNU_SOURCE.
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/// Starts `path` with `argv` (NULL-terminated) and the caller's environment, `fd` as the child's
/// descriptor 3 and every descriptor above 3 closed in the child (none of the daemon's sockets,
/// database, lock or devices leaks into it, whatever their close-on-exec flag). stdin is /dev/null;
/// stdout and stderr are the caller's (the journal). Returns 0 and the child's pid, or an errno.
int recd_spawn_with_channel(const char *path, char *const argv[], int fd, pid_t *pid);

/// Starts `path` (a full path) with `argv` in `cwd` (NULL: recd's), standard input from /dev/null, standard output to `out`
/// and standard error to `err`, every other descriptor closed; at nice 19 and the idle I/O class
/// when `idle` (a backup's restic: recd's own work first); sent `death_signal` (if > 0) when the
/// calling thread ends (keep it until the program has ended). 0 or an errno; an exec that fails
/// exits 127.
int recd_spawn_piped(const char *path, char *const argv[], const char *cwd, int out, int err, int idle, int death_signal, pid_t *pid);

/// prctl(PR_SET_PDEATHSIG, sig): `sig` is sent to this process when the thread that started it ends.
/// Returns 0 or -1 with errno.
int recd_set_parent_death_signal(int sig);

/// Forks one job's process off a take's worker (which loaded FFmpeg once and parses nothing itself):
/// the child's pid in the parent, 0 in the child — which is killed when its parent dies —, -errno
/// when fork failed.
pid_t recd_fork_job(void);

/// prctl(PR_SET_NAME, name): the calling thread's name (up to 15 bytes); called on a process's main
/// thread, its name in ps and top.
int recd_set_thread_name(const char *name);

/// No memory both written and executed, ever, from here on (PR_SET_MDWE), in this process and, when
/// `inherited`, in the processes it starts: 0, or -errno (EINVAL on a kernel before 6.3, or before 6.6
/// when not `inherited`).
int recd_refuse_exec_gain(int inherited);

/// A memory file of `size` bytes shared with a worker (memfd_create, close-on-exec; declared only
/// under _GNU_SOURCE), sealed at that size (F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_SEAL), so that a
/// process it is passed to may map and read all of it without SIGBUS. Returns the descriptor, or -1
/// with errno.
int recd_shared_memory(const char *name, size_t size);

/// sendmsg(2) of `iov` with `flags` and descriptor `fd` passed along (SCM_RIGHTS: the CMSG_* macros
/// do not reach Swift). Returns what sendmsg returns.
ssize_t recd_send_with_descriptor(int socket, struct iovec *iov, int iovcnt, int fd, int flags);

/// recv(2) of up to `length` bytes, without waiting (MSG_DONTWAIT), that also takes a descriptor
/// passed with them (SCM_RIGHTS, made close-on-exec): `*fd` is it, or -1 when none came. Any
/// descriptor beyond the first is closed. Returns what recvmsg returns.
ssize_t recd_receive_with_descriptor(int socket, void *buffer, size_t length, int *fd);

/// Landlock's ABI version (1 and up), or -errno when the kernel has none (ENOSYS: not built in;
/// EOPNOTSUPP: built in, not enabled at boot).
int recd_landlock_abi(void);

/// Restricts this process, and every process it starts, to the files beneath `writable` (read,
/// write, create, remove, rename within) and `readable` (read and execute) paths, whatever their
/// permissions say (Landlock: every filesystem right the kernel's ABI knows is handled). Sets
/// no_new_privs first, as an unprivileged process must. A `readable` path that does not exist is
/// left out; a `writable` one is an error. Returns 0, or -errno with `*failed` naming the call
/// (and `*path` the path it was about, when there is one).
int recd_landlock_enter(const char *const *writable, int writable_count, const char *const *readable, int readable_count,
                        const char **failed, const char **path);

/// Installs this process's seccomp-bpf filter (inherited by threads, children and across exec): an
/// allow-list of the calls a media job and a transcription make (measured: scripts/worker-syscalls.sh);
/// every other answers EPERM — new sockets of any family (so no connect or bind), ptrace and the
/// process_vm_* calls, namespaces, mounts, io_uring, BPF, modules and keys among them. Signals go
/// to this process only, clone makes no namespace, and execve passes only with `allow_exec`. Every
/// thread of the process takes it (SECCOMP_FILTER_FLAG_TSYNC). Sets no_new_privs first. Returns 0, or
/// -errno (ENOSYS on an architecture it has no numbers for).
int recd_seccomp_enter(int allow_exec);

#endif
