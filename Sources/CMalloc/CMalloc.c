// Nothing to define: the header brings <malloc.h> to Swift (a C target needs a source file).
#include "CMalloc.h"
