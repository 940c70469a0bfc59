#include "kernel_simd.h"

#include "kernels.h"

namespace rxccl {
namespace {

// What every kernel is compiled for without a clone: the build's target (-march=native raises it).
constexpr const char* BaselineSimd() {
#if defined(__AVX512F__)
  return "avx512f";
#elif defined(__AVX2__)
  return "avx2";
#elif defined(__AVX__)
  return "avx";
#elif defined(__SSE2__)
  return "sse2";
#elif defined(__ARM_NEON) || defined(__aarch64__)
  return "neon";
#else
  return "scalar";
#endif
}

}  // namespace

const char* KernelSimd() {
#if RXCCL_KERNELS_CLONED && !defined(__AVX2__)
  // The same question target_clones' resolver asks (libgcc's CPU model), so the same answer.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) return "avx2";
#endif
  return BaselineSimd();
}

}  // namespace rxccl
