// The DataPlane class JavaScript constructs (native/data_plane_entry.cc).
#pragma once

#include <napi.h>

namespace rxccl {

Napi::Function DefineDataPlane(Napi::Env env);

}  // namespace rxccl
