// Which vector instructions the kernel loops run here (`rxccl doctor`): what the build compiled
// them for, and on x86-64 the copy the dynamic loader bound for this CPU (kernels.h).
#pragma once

namespace rxccl {

// "avx512f", "avx2", "avx", "sse2", "neon", or "scalar" where the build has no vector unit.
const char* KernelSimd();

}  // namespace rxccl
