// Preloaded into a rank process (NODE_OPTIONS=--import=<this file>) that must not map its peers'
// shared-memory rings, as a rank under a seccomp filter refusing pidfd_getfd: the addon refuses
// every ring as if pidfd_getfd failed with EPERM (native/shared_memory_links.h). The addon is the
// package's own build, the file the session loads later (one library per process).
import { createRequire } from 'node:module';

createRequire(import.meta.url)('../../native/build/Release/rxccl_kernels.node').failSharedMemoryJoins(1);
