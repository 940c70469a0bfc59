#include "kernel_worker.h"

#include "errors.h"
#include "run_job.h"

namespace rxccl {
namespace {

// Marks the externals this addon hands out as cancel tokens, so cancel() can refuse any other
// external instead of misreading it.
constexpr napi_type_tag kCancelTokenTag = {0x72786363'6c6b6572ULL, 0x6e656c2d'746f6b6eULL};

}  // namespace

KernelWorker::KernelWorker(const Napi::Function& done, const Job& job, const std::vector<Napi::Value>& buffers,
                           std::vector<const uint8_t*> bases, CancelFlag cancelled)
    : Napi::AsyncWorker(done, "rxccl:kernel"), job_(job), bases_(std::move(bases)), cancelled_(std::move(cancelled)) {
  if (!bases_.empty()) job_.slice_bases = bases_.data();
  for (const Napi::Value& buffer : buffers) buffers_.push_back(Napi::Persistent(buffer.As<Napi::Object>()));
}

void KernelWorker::Execute() {
  if (cancelled_->load(std::memory_order_acquire)) return;
  RunJob(job_);
  ran_ = true;
}

std::vector<napi_value> KernelWorker::GetResult(Napi::Env env) {
  return {env.Null(), Napi::Boolean::New(env, ran_)};
}

Napi::Value RunOrQueue(const Napi::CallbackInfo& info, size_t done_index, const Job& job,
                       const std::vector<Napi::Value>& buffers, std::vector<const uint8_t*> bases) {
  Napi::Env env = info.Env();
  const Napi::Value done = info[done_index];
  if (done.IsUndefined()) {
    Job now = job;
    if (!bases.empty()) now.slice_bases = bases.data();
    RunJob(now);
    return env.Undefined();
  }
  if (!done.IsFunction()) ThrowKernelError(env, "the completion callback must be a function or undefined");
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  (new KernelWorker(done.As<Napi::Function>(), job, buffers, std::move(bases), cancelled))->Queue();  // deletes itself when done
  auto token = Napi::External<CancelFlag>::New(env, new CancelFlag(std::move(cancelled)),
                                              [](Napi::Env, CancelFlag* flag) { delete flag; });
  token.TypeTag(&kCancelTokenTag);
  return token;
}

Napi::Value Cancel(const Napi::CallbackInfo& info) {
  if (info.Length() != 1 || !info[0].IsExternal() ||
      !info[0].As<Napi::External<CancelFlag>>().CheckTypeTag(&kCancelTokenTag)) {
    ThrowKernelError(info.Env(), "cancel expects a token returned by a queued kernel");
  }
  (*info[0].As<Napi::External<CancelFlag>>().Data())->store(true, std::memory_order_release);
  return info.Env().Undefined();
}

}  // namespace rxccl
