#ifndef RECD_CSWIFTRUNTIMEHOOKS_H
#define RECD_CSWIFTRUNTIMEHOOKS_H
// The Swift concurrency runtime's global-executor hooks (Runtime/Concurrency.h), by address. Swift
// cannot name a C variable of the runtime, and dlsym finds them only where the runtime is a shared
// library: linked in (the package's --static-swift-stdlib) they are hidden symbols of the program,
// which a reference from the same link still reaches.

/// The hook variable: 0 swift_task_enqueueGlobal_hook, 1 ..WithDelay_hook, 2 ..WithDeadline_hook.
void **recd_swift_executor_hook(int which);

#endif
