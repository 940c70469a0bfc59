// Runs a job on a libuv worker thread (Napi::AsyncWorker), so several kernels can be in flight
// while the JS thread keeps serving sockets.
#pragma once

#include <napi.h>

#include <atomic>
#include <initializer_list>
#include <memory>
#include <vector>

#include "job.h"

namespace rxccl {

// Shared by a queued worker and the token JS holds: set by cancel(token), read when the worker
// starts. A job that has started runs to the end; one cancelled before then never touches its
// buffers.
using CancelFlag = std::shared_ptr<std::atomic<bool>>;

class KernelWorker final : public Napi::AsyncWorker {
 public:
  // `done` is called as done(null, ran) on the JS thread; `buffers` stay referenced (so not
  // collected) until then.
  // `bases`: the job's slice bases, owned here for as long as the job may run.
  KernelWorker(const Napi::Function& done, const Job& job, const std::vector<Napi::Value>& buffers,
               std::vector<const uint8_t*> bases, CancelFlag cancelled);

 protected:
  void Execute() override;
  std::vector<napi_value> GetResult(Napi::Env env) override;

 private:
  Job job_;
  std::vector<const uint8_t*> bases_;
  std::vector<Napi::ObjectReference> buffers_;
  CancelFlag cancelled_;
  bool ran_ = false;
};

// Runs `job` now when info[done_index] is undefined (returns undefined), or queues it on a
// KernelWorker when it is a function (returns a cancel token for cancel()).
// `bases`, when given, are the job's slice bases (job.slice_bases is pointed at them).
Napi::Value RunOrQueue(const Napi::CallbackInfo& info, size_t done_index, const Job& job,
                       const std::vector<Napi::Value>& buffers, std::vector<const uint8_t*> bases = {});

// cancel(token): JS entry point; cancelling a finished or started job does nothing.
Napi::Value Cancel(const Napi::CallbackInfo& info);

}  // namespace rxccl
