#ifndef RECD_CFILEOPS_H
#define RECD_CFILEOPS_H
// File operations Swift's Glibc module does not show: renameat2(2) is declared only under
// _GNU_SOURCE, which Swift's import of glibc does not define.

/// Swaps two paths on one filesystem atomically (renameat2 with RENAME_EXCHANGE): both must exist;
/// afterwards each name refers to what the other did. Returns 0, or -1 with errno (EINVAL where the
/// filesystem cannot, EXDEV across filesystems).
int CFileOps_exchange(const char *a, const char *b);

#endif
