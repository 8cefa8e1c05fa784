#include "CSwiftRuntimeHooks.h"
#include <stddef.h>

extern void *swift_task_enqueueGlobal_hook;
extern void *swift_task_enqueueGlobalWithDelay_hook;
extern void *swift_task_enqueueGlobalWithDeadline_hook;

void **recd_swift_executor_hook(int which) {
    switch (which) {
    case 0: return &swift_task_enqueueGlobal_hook;
    case 1: return &swift_task_enqueueGlobalWithDelay_hook;
    case 2: return &swift_task_enqueueGlobalWithDeadline_hook;
    default: return NULL;
    }
}
