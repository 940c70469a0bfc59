// The three kernel loops, templated per element type E and op. Buffers come from the network at
// any byte offset, so every element goes through memcpy: gcc -O3 turns these into plain
// unaligned vector loads/stores, with no alignment requirement and no undefined behaviour.
#pragma once

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <utility>

#include "inline.h"
#include "job.h"
#include "ops.h"

// Each kernel is compiled twice, for the x86-64 baseline (SSE2) and for AVX2, and the dynamic
// loader binds the AVX2 copy on CPUs that have it (GCC function multiversioning, via glibc's
// ifunc). The binary stays portable; f16/bf16 kernels run about twice as fast with AVX2's
// 8-wide blends and packs. Other compilers and platforms build the baseline only.
// RXCCL_KERNELS_CLONED says which: kernel_simd.cc reports the copy bound.
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__)
#define RXCCL_KERNELS_CLONED 1
#define RXCCL_KERNEL_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define RXCCL_KERNELS_CLONED 0
#define RXCCL_KERNEL_CLONES
#endif

namespace rxccl {

template <class S>
RXCCL_ALWAYS_INLINE S LoadAt(const uint8_t* base, size_t index) {
  S value;
  std::memcpy(&value, base + index * sizeof(S), sizeof(S));
  return value;
}

template <class S>
RXCCL_ALWAYS_INLINE void StoreAt(uint8_t* base, size_t index, S value) {
  std::memcpy(base + index * sizeof(S), &value, sizeof(S));
}

// Elements per block of a slice reduction: the running result of a block (at most 2 KiB of f64)
// stays in L1 while the slices pass through it.
constexpr size_t kBlockElements = 256;

// Slices read together in one pass over a block: the first pass reads kFirstPassSlices<E>,
// later ones the running block and kLaterPassSlices<E>. For types computed in their storage format
// the kernel is memory-bound, and reading several streams at once keeps several cache misses in
// flight (one slice per pass ran at about half the memory bandwidth for k = 8). f16/bf16 are
// bound by their conversions instead, where more streams per pass would only multiply code size
// and compile time.
template <class E>
constexpr size_t kFirstPassSlices = std::is_same_v<typename E::Storage, typename E::Compute> ? 4 : 1;
template <class E>
constexpr size_t kLaterPassSlices = kFirstPassSlices<E> > 1 ? kFirstPassSlices<E> - 1 : 1;

using Sources = std::array<const uint8_t*, 4>;

// Stores the last step of a slice reduction: avg divides the folded sum, rounded first like any
// other step, by the job's divisor (the number of slices, unless a schedule says otherwise).
template <class E, Op kOp>
RXCCL_ALWAYS_INLINE typename E::Storage Finish(typename E::Compute folded, size_t divisor) {
  if constexpr (kOp == Op::kAvg) {
    return E::Store(E::DivideBy(E::Round(folded), divisor));
  } else {
    return E::Store(folded);
  }
}

// One step of a fold: combines the next source element; every step but the very last of a
// reduction rounds (f16/bf16), the last one is rounded once, by Store.
template <class E, Op kOp, bool kFinal>
RXCCL_ALWAYS_INLINE typename E::Compute FoldStep(typename E::Compute folded, const uint8_t* source, size_t e) {
  const auto combined = Combine<E, kOp>(folded, E::Load(LoadAt<typename E::Storage>(source, e)));
  if constexpr (kFinal) {
    return combined;
  } else {
    return E::Round(combined);
  }
}

// Folds sources[kFrom .. kCount) into `folded` for element e. A compile-time fold expression, not
// a loop: gcc did not always unroll the loop, and its branches kept the element loop scalar.
template <class E, Op kOp, size_t kCount, bool kLast, size_t kFrom, size_t... kStep>
RXCCL_ALWAYS_INLINE typename E::Compute FoldSources(typename E::Compute folded, [[maybe_unused]] const Sources& sources,
                                                    [[maybe_unused]] size_t e, std::index_sequence<kStep...>) {
  ((folded = FoldStep<E, kOp, kLast && kFrom + kStep + 1 == kCount>(folded, sources[kFrom + kStep], e)), ...);
  return folded;
}

// One pass over a block of n elements: folds kCount sources into the running block, or, when
// kFirst, starts from sources[0] instead; when kLast, stores the result to `out` instead of
// keeping it.
template <class E, Op kOp, size_t kCount, bool kFirst, bool kLast>
RXCCL_ALWAYS_INLINE void FoldPass(typename E::Compute* running, Sources sources, uint8_t* out, size_t n, size_t divisor) {
  using S = typename E::Storage;
  constexpr size_t kFrom = kFirst ? 1 : 0;
  for (size_t e = 0; e < n; ++e) {
    const typename E::Compute start = kFirst ? E::Load(LoadAt<S>(sources[0], e)) : running[e];
    const auto folded = FoldSources<E, kOp, kCount, kLast, kFrom>(start, sources, e, std::make_index_sequence<kCount - kFrom>{});
    if constexpr (kLast) {
      StoreAt<S>(out, e, Finish<E, kOp>(folded, divisor));
    } else {
      running[e] = folded;
    }
  }
}

// A pass with `count` sources, 1 .. kMax, picked at run time (the first and last passes vary).
template <class E, Op kOp, bool kFirst, bool kLast, size_t kMax>
RXCCL_ALWAYS_INLINE void FoldPassUpTo(size_t count, typename E::Compute* running, const Sources& sources, uint8_t* out,
                                      size_t n, size_t divisor) {
  if constexpr (kMax > 1) {
    if (count < kMax) return FoldPassUpTo<E, kOp, kFirst, kLast, kMax - 1>(count, running, sources, out, n, divisor);
  }
  FoldPass<E, kOp, kMax, kFirst, kLast>(running, sources, out, n, divisor);
}

// output = op(slice 0, slice 1, ..., slice k-1), folded left in slice (rank) order, block by
// block. A block of the output is written only by the last pass, after every slice's matching
// block was read (element by element in that pass), so the output may be any one slice itself.
template <class E, Op kOp>
RXCCL_KERNEL_CLONES void ReduceSlices(const Job& job, size_t begin, size_t end) {
  using S = typename E::Storage;
  // Locals, not job.*: stores through the byte pointers may alias `job` as far as the compiler
  // knows, and reloading its fields every element would stop vectorisation.
  const uint8_t* const input = job.source;
  uint8_t* const output = job.target;
  const size_t stride = job.slice_stride;
  const uint8_t* const* const bases = job.slice_bases;
  const size_t slices = job.slices;
  const size_t divisor = job.divisor;
  alignas(64) typename E::Compute running[kBlockElements];
  for (size_t first = begin; first < end; first += kBlockElements) {
    const size_t n = std::min(kBlockElements, end - first);
    uint8_t* const out = output + first * sizeof(S);
    Sources sources{};
    for (size_t slice = 0; slice < slices;) {
      const bool is_first = slice == 0;
      const size_t count = std::min(is_first ? kFirstPassSlices<E> : kLaterPassSlices<E>, slices - slice);
      for (size_t i = 0; i < count; ++i) {
        sources[i] = (bases != nullptr ? bases[slice + i] : input + (slice + i) * stride) + first * sizeof(S);
      }
      slice += count;
      const bool is_last = slice == slices;
      // A pass that is neither first nor last is always full: only the first and last vary.
      if (is_first && is_last) {
        FoldPassUpTo<E, kOp, true, true, kFirstPassSlices<E>>(count, running, sources, out, n, divisor);
      } else if (is_first) {
        FoldPass<E, kOp, kFirstPassSlices<E>, true, false>(running, sources, out, n, divisor);
      } else if (is_last) {
        FoldPassUpTo<E, kOp, false, true, kLaterPassSlices<E>>(count, running, sources, out, n, divisor);
      } else {
        FoldPass<E, kOp, kLaterPassSlices<E>, false, false>(running, sources, out, n, divisor);
      }
    }
  }
}

// accumulator = op(accumulator, source), element-wise; avg accumulates a sum (see ops.h).
template <class E, Op kOp>
RXCCL_KERNEL_CLONES void Accumulate(const Job& job, size_t begin, size_t end) {
  using S = typename E::Storage;
  uint8_t* const accumulator = job.target;  // locals: see ReduceSlices
  const uint8_t* const source = job.source;
  for (size_t i = begin; i < end; ++i) {
    const auto combined = Combine<E, kOp>(E::Load(LoadAt<S>(accumulator, i)), E::Load(LoadAt<S>(source, i)));
    StoreAt<S>(accumulator, i, E::Store(combined));
  }
}

// data = data / divisor: avg's finishing step after accumulation.
template <class E>
RXCCL_KERNEL_CLONES void Divide(const Job& job, size_t begin, size_t end) {
  using S = typename E::Storage;
  uint8_t* const data = job.target;  // locals: see ReduceSlices
  const uint64_t divisor = job.divisor;
  for (size_t i = begin; i < end; ++i) StoreAt<S>(data, i, E::Store(E::DivideBy(E::Load(LoadAt<S>(data, i)), divisor)));
}

}  // namespace rxccl
