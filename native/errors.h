// Errors the addon throws to JavaScript. Each carries the `code` of the RxcclError subclass the
// TypeScript layer (lib/kernels/addon.ts) rethrows it as.
#pragma once

#include <napi.h>

#include <string>

namespace rxccl {

// Arguments the kernel cannot work on: lengths, ranges, buffer kinds, detached buffers.
[[noreturn]] void ThrowKernelError(Napi::Env env, const std::string& message);

// A reduction that is not defined: unknown element type or op, or a bitwise op on floats.
[[noreturn]] void ThrowConfigurationError(Napi::Env env, const std::string& message);

}  // namespace rxccl
