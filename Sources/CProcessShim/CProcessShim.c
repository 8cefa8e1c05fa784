#define _GNU_SOURCE
#include "CProcessShim.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
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

int recd_spawn_piped(const char *path, char *const argv[], const char *cwd, int out, int err, int idle, int death_signal, pid_t *pid) {
    pid_t parent = getpid();
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0) return errno;
    // Through 10, 11 and 12 first: a descriptor may already be 0, 1 or 2 (dup2 onto itself would
    // keep close-on-exec), or another's target. Only async-signal-safe calls between fork and exec.
    pid_t child = fork();
    if (child < 0) { int e = errno; close(null_fd); return e; }
    if (child == 0) {
        if (death_signal > 0 && (prctl(PR_SET_PDEATHSIG, (unsigned long)death_signal, 0, 0, 0) != 0 || getppid() != parent)) _exit(127);
        if (idle) {
            if (setpriority(PRIO_PROCESS, 0, 19) != 0) {}
            syscall(SYS_ioprio_set, 1, 0, 3 << 13);   // IOPRIO_WHO_PROCESS (itself), IOPRIO_CLASS_IDLE
        }
        if (dup2(out, 10) < 0 || dup2(err, 11) < 0 || dup2(null_fd, 12) < 0 ||
            dup2(12, 0) < 0 || dup2(10, 1) < 0 || dup2(11, 2) < 0) _exit(127);
        syscall(SYS_close_range, 3, ~0U, 0);
        if (cwd && chdir(cwd) != 0) _exit(126);
        execve(path, argv, environ);
        _exit(127);
    }
    close(null_fd);
    *pid = child;
    return 0;
}

pid_t recd_fork_job(void) {
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) return -errno;
    // Its parent gone before the death signal was set: it would never be sent.
    if (pid == 0 && (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent)) _exit(0);
    return pid;
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

ssize_t recd_send_with_descriptor(int socket, struct iovec *iov, int iovcnt, int fd, int flags) {
    union { char buffer[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = { .msg_iov = iov, .msg_iovlen = (size_t)iovcnt,
                              .msg_control = control.buffer, .msg_controllen = sizeof control.buffer };
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &fd, sizeof(int));
    return sendmsg(socket, &message, flags);
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

/// landlock_ruleset_attr as of ABI 6 (Debian 12's headers stop at ABI 1's field).
struct recd_landlock_ruleset_attr { __u64 handled_access_fs, handled_access_net, scoped; };
#define RECD_LANDLOCK_NET_BIND_TCP (1ULL << 0)
#define RECD_LANDLOCK_NET_CONNECT_TCP (1ULL << 1)
#define RECD_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define RECD_LANDLOCK_SCOPE_SIGNAL (1ULL << 1)

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
    // A file's rule (a library job's own files) never lets it be run: code comes from the mapped
    // libraries' folders.
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) rights &= file_rights & ~(__u64)LANDLOCK_ACCESS_FS_EXECUTE;
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
    // ABI 4 (Linux 6.7): TCP bind and connect handled with no rule, so refused everywhere; ABI 6
    // (6.12): no signal to a process outside this domain (recd, the owner's other processes) and no
    // abstract Unix socket of theirs. The struct grew with each: its size tells the kernel which.
    struct recd_landlock_ruleset_attr attr = { .handled_access_fs = handled };
    size_t attr_size = 8;
    if (abi >= 4) { attr.handled_access_net = RECD_LANDLOCK_NET_BIND_TCP | RECD_LANDLOCK_NET_CONNECT_TCP; attr_size = 16; }
    if (abi >= 6) { attr.scoped = RECD_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | RECD_LANDLOCK_SCOPE_SIGNAL; attr_size = 24; }
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
    if (ruleset < 0) return -errno;
    int rc = 0;
    *failed = "landlock_add_rule";
    // Writable folders get every right but making links, pipes, sockets and devices: nothing a media
    // job makes, and a link made there is what recd (which runs unsandboxed) could be led through.
    const __u64 special = LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_SOCK
        | LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK;
    for (int i = 0; i < writable_count && rc == 0; i++) {
        rc = add_rule(ruleset, writable[i], handled & ~special, 1);
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

// ---- seccomp-bpf (seccomp(2)): what a worker may ask of the kernel beyond files ----
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>

#if defined(__x86_64__)
#define RECD_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define RECD_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/// What a media worker or the transcriber may call at all: measured by scripts/worker-syscalls.sh
/// (strace -f over the suite's recordings, playbacks, trims, imports, loudness, video adoption and
/// transcriptions: about 45 calls for the worker, 60 for Python with CTranslate2), plus their close
/// kin a different path of the same code takes (pwrite beside pread, ppoll beside poll, a thread's
/// start and end, fsync). Everything else answers EPERM, as Docker's default profile does: the
/// kernel's other ~300 calls are not there to be reached through a parser bug. `clone`, `clone3`,
/// `kill`, `tgkill` and `execve` have rules of their own above the list.
static const int allowed_calls[] = {
#define A(name) SYS_##name,
    // Files (inside Landlock's walls) and descriptors.
    A(read) A(write) A(pread64) A(pwrite64) A(readv) A(writev) A(preadv) A(pwritev) A(lseek) A(close)
    A(openat) A(newfstatat) A(fstat) A(statx) A(statfs) A(fstatfs) A(getdents64) A(readlinkat) A(faccessat)
    A(ftruncate) A(fallocate) A(fsync) A(fdatasync) A(fcntl) A(ioctl) A(dup) A(dup3) A(flock) A(getcwd)
#ifdef SYS_faccessat2
    A(faccessat2)
#endif
#if defined(__x86_64__)
    A(open) A(stat) A(lstat) A(access) A(readlink) A(dup2) A(poll) A(select) A(time) A(getrlimit) A(arch_prctl)
    A(epoll_create) A(epoll_wait)
#endif
    // Memory.
    A(mmap) A(munmap) A(mprotect) A(mremap) A(madvise) A(brk) A(mlock) A(munlock) A(mincore)
    A(get_mempolicy) A(set_mempolicy) A(mbind) A(membarrier)
    // Threads, time, scheduling.
    A(futex) A(set_robust_list) A(get_robust_list) A(rseq) A(set_tid_address) A(exit) A(exit_group)
    A(sched_yield) A(sched_getaffinity) A(sched_setaffinity) A(sched_setscheduler) A(sched_getscheduler) A(sched_getparam)
    A(getpriority) A(setpriority) A(getcpu) A(nanosleep) A(clock_nanosleep) A(clock_gettime) A(clock_getres) A(gettimeofday)
    // Who it is, and its limits.
    A(getpid) A(getppid) A(gettid) A(getuid) A(geteuid) A(getgid) A(getegid) A(getresuid) A(getresgid)
    A(prlimit64) A(getrusage) A(times) A(uname) A(sysinfo) A(prctl) A(getrandom)
    // A take's worker waits for the job it forked (clone's rule above: no namespaces).
    A(wait4)
    // Signals to itself (the targets of kill and tgkill are checked above).
    A(rt_sigaction) A(rt_sigprocmask) A(rt_sigreturn) A(rt_sigtimedwait) A(sigaltstack) A(restart_syscall)
    // The socket it was born with (no new one: socket, connect and bind are not on the list).
    A(sendmsg) A(recvmsg) A(sendto) A(recvfrom) A(shutdown) A(getsockname) A(getpeername) A(getsockopt) A(setsockopt)
    A(ppoll) A(pselect6) A(epoll_create1) A(epoll_ctl) A(epoll_pwait) A(eventfd2)
    // Walls of its own: a job's Landlock rules, and the transcriber's second filter (both only narrow).
    A(landlock_create_ruleset) A(landlock_add_rule) A(landlock_restrict_self) A(seccomp)
#undef A
};

#define STMT(code, k) ((struct sock_filter)BPF_STMT(code, k))
#define JUMP(code, k, t, f) ((struct sock_filter)BPF_JUMP(code, k, t, f))
#define ERRNO(e) (SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))
#define ARG_LOW(n) (offsetof(struct seccomp_data, args) + 8 * (n))
#define ARG_HIGH(n) (offsetof(struct seccomp_data, args) + 8 * (n) + 4)

int recd_seccomp_enter(int allow_exec) {
#ifndef RECD_AUDIT_ARCH
    (void)allow_exec;
    return -ENOSYS;
#else
    // Two instructions for each allowed call, and the rules before them (about 40).
    struct sock_filter f[64 + 2 * sizeof allowed_calls / sizeof allowed_calls[0]];
    int n = 0;
    const unsigned self = (unsigned)getpid();
    // Another architecture's calls (a 32-bit int 0x80 on x86-64): their numbers mean other things.
    f[n++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    f[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, RECD_AUDIT_ARCH, 1, 0);
    f[n++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    f[n++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
    // x32's numbers (bit 30) alias x86-64's calls past any list.
    f[n++] = JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
    f[n++] = STMT(BPF_RET | BPF_K, ERRNO(EPERM));
#endif
    // clone3 passes its flags in memory a filter cannot read: ENOSYS makes glibc use clone.
    f[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1);
    f[n++] = STMT(BPF_RET | BPF_K, ERRNO(ENOSYS));
    // clone: threads and plain children, never in new namespaces.
    const unsigned namespaces = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID
        | CLONE_NEWNET | CLONE_NEWCGROUP;
    f[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4);
    f[n++] = STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(0));
    f[n++] = JUMP(BPF_JMP | BPF_JSET | BPF_K, namespaces, 0, 1);
    f[n++] = STMT(BPF_RET | BPF_K, ERRNO(EPERM));
    f[n++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    // Signals: to this process only (its threads: tgkill with its own group id). kill(0) and
    // kill(-1) reach others, so only this pid passes.
    static const int signalling[] = { SYS_kill, SYS_tgkill, SYS_rt_tgsigqueueinfo };
    for (size_t i = 0; i < 3; i++) {
        f[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)signalling[i], 0, 6);
        f[n++] = STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(0));
        f[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 0, 2);
        f[n++] = STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HIGH(0));
        f[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0);   // pid_t is 32 bits: the upper half is 0
        f[n++] = STMT(BPF_RET | BPF_K, ERRNO(EPERM));
        f[n++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    }
    // The transcriber's launcher execs Python once (which stacks a filter refusing execve again).
    if (allow_exec) {
        f[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execve, 0, 1);
        f[n++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    }
    for (size_t i = 0; i < sizeof allowed_calls / sizeof allowed_calls[0]; i++) {
        f[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)allowed_calls[i], 0, 1);
        f[n++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    }
    f[n++] = STMT(BPF_RET | BPF_K, ERRNO(EPERM));
    struct sock_fprog program = { .len = (unsigned short)n, .filter = f };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -errno;
    // TSYNC: every thread of the process, not only this one (a runtime may have started some).
    long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program);
    if (rc < 0) return -errno;
    return rc == 0 ? 0 : -EBUSY;   // rc > 0: a thread that could not take the filter

#endif
}
