#ifndef RECD_CMALLOC_H
#define RECD_CMALLOC_H
// glibc's mallopt(3) and its M_* parameters: declared in <malloc.h>, which Swift's Glibc module
// does not include.
#include <malloc.h>

#endif
