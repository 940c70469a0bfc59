// Kernel helpers must be inlined into the loops that use them for those loops to vectorise. With
// a few hundred kernel instantiations per file gcc's inlining budget runs out and some helpers
// stay calls (seen on the f16 kernels), so the hot ones force it.
#pragma once

#if defined(__GNUC__)
#define RXCCL_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define RXCCL_ALWAYS_INLINE inline
#endif
