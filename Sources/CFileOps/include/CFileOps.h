#ifndef RECD_CFILEOPS_H
#define RECD_CFILEOPS_H
// File operations Swift's Glibc module does not show: renameat2(2) is declared only under
// _GNU_SOURCE, which Swift's import of glibc does not define.

/// Swaps two paths on one filesystem atomically (renameat2 with RENAME_EXCHANGE): both must exist;
/// afterwards each name refers to what the other did. Returns 0, or -1 with errno (EINVAL where the
/// filesystem cannot, EXDEV across filesystems).
int CFileOps_exchange(const char *a, const char *b);

/// Opens `name` beneath `directory` (openat2 with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS; O_NOFOLLOW
/// before Linux 5.6) with `flags`, close-on-exec: a symbolic link anywhere in `name` — one a sandboxed
/// worker could have placed — fails with ELOOP (or EXDEV when it would leave `directory`), never
/// followed. Returns the descriptor, or -1 with errno.
int CFileOps_open_beneath(const char *directory, const char *name, int flags);

#endif
