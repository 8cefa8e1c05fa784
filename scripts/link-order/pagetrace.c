// Which code of an executable runs: an LD_PRELOAD library for scripts/gen-link-order.py.
//
// Before the program's own initialisers run, it makes the program's executable segment
// inaccessible (PROT_NONE). Each first touch of a page then faults; the handler appends the
// faulting address (relative to the load base, in hex, one per line, so first-touch order) to
// $PAGETRACE_OUT and gives the page back (PROT_READ|PROT_EXEC). A build with every function
// aligned to a page (-align-all-functions=12) turns this into a record of every function that
// ran, in the order it first ran. Only for that measurement: the program runs slower by a fault
// per page and must not install its own SIGSEGV handler (SWIFT_BACKTRACE=enable=no for Swift).
// A line "# LO HI" first gives the segment's bounds; another process may append lines of its
// own ("# phase ...") to mark phases, as the file is opened O_APPEND.
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static uintptr_t segment_lo, segment_hi, load_base;
static int out_fd = -1;

static void on_fault(int sig, siginfo_t *info, void *context) {
    (void)sig;
    (void)context;
    uintptr_t address = (uintptr_t)info->si_addr;
    if (address < segment_lo || address >= segment_hi) {
        // Not ours: a real crash. Default action on return (the access faults again).
        signal(SIGSEGV, SIG_DFL);
        return;
    }
    // Async-signal-safe hex formatting (no printf in a handler).
    char line[24], digits[20];
    int n = 0, k = 0;
    uintptr_t value = address - load_base;
    do {
        digits[k++] = "0123456789abcdef"[value & 15];
        value >>= 4;
    } while (value);
    while (k) line[n++] = digits[--k];
    line[n++] = '\n';
    (void)write(out_fd, line, n);
    mprotect((void *)(address & ~(uintptr_t)4095), 4096, PROT_READ | PROT_EXEC);
}

static int find_main_program(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    if (info->dlpi_name && info->dlpi_name[0]) return 0;  // the main program's name is ""
    load_base = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            segment_lo = (load_base + ph->p_vaddr) & ~(uintptr_t)4095;
            segment_hi = (load_base + ph->p_vaddr + ph->p_memsz + 4095) & ~(uintptr_t)4095;
        }
    }
    return 1;
}

__attribute__((constructor)) static void start_tracing(void) {
    const char *path = getenv("PAGETRACE_OUT");
    if (!path) return;
    out_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    // The traced process only: recd's media workers (started with its environment) would truncate
    // the file and trace themselves into it.
    unsetenv("PAGETRACE_OUT");
    unsetenv("LD_PRELOAD");
    if (out_fd < 0) return;
    dl_iterate_phdr(find_main_program, NULL);
    if (segment_hi <= segment_lo) return;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &action, NULL);
    char header[64];
    int n = snprintf(header, sizeof header, "# %lx %lx\n", (unsigned long)(segment_lo - load_base),
                     (unsigned long)(segment_hi - load_base));
    (void)write(out_fd, header, n);
    mprotect((void *)segment_lo, segment_hi - segment_lo, PROT_NONE);
}
