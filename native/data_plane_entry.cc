// JavaScript's handle on the native data plane: `new DataPlane(rank, worldSize, sendFds, recvFds)`
// owns one thread that runs the session's data-plane collectives one at a time (collectives are
// ordered per session), and a wake descriptor that ends a running one at once. A thread of its own
// rather than libuv's pool: ranks of one process (tests, notebooks) wait for each other inside a
// collective, and four of them would take every pool thread. lib/transport/data-plane.ts wraps it.
#include <napi.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "args.h"
#include "data_plane.h"
#include "data_plane_entry.h"
#include "dispatch.h"
#include "errors.h"

namespace rxccl {
namespace {

const char* KindName(Outcome::Kind kind) {
  switch (kind) {
    case Outcome::Kind::kDone: return "done";
    case Outcome::Kind::kAborted: return "aborted";
    case Outcome::Kind::kTimedOut: return "timed-out";
    case Outcome::Kind::kMismatch: return "mismatch";
    case Outcome::Kind::kPeerClosed: return "peer-closed";
    case Outcome::Kind::kSystem: return "system";
  }
  return "system";
}

std::vector<int> FdArray(const Napi::CallbackInfo& info, size_t index, size_t length) {
  if (!info[index].IsArray() || info[index].As<Napi::Array>().Length() != length) {
    ThrowKernelError(info.Env(), "data plane descriptors must be an array with one entry per rank");
  }
  const Napi::Array list = info[index].As<Napi::Array>();
  std::vector<int> fds(length);
  for (uint32_t i = 0; i < length; i++) fds[i] = list.Get(i).As<Napi::Number>().Int32Value();
  return fds;
}

class DataPlane : public Napi::ObjectWrap<DataPlane> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "DataPlane",
                       {InstanceMethod("allReduce", &DataPlane::AllReduce), InstanceMethod("wake", &DataPlane::Wake),
                        InstanceMethod("close", &DataPlane::Close)});
  }

  // new DataPlane(rank, worldSize, sendFds, recvFds)
  explicit DataPlane(const Napi::CallbackInfo& info) : Napi::ObjectWrap<DataPlane>(info) {
    Napi::Env env = info.Env();
    ExpectArgumentCount(info, 4, 4);
    const int rank = int(CountArgument(info, 0, "rank"));
    const int world = int(CountArgument(info, 1, "worldSize"));
    if (world < 1 || rank >= world) ThrowKernelError(env, "data plane rank must be below its world size");
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) ThrowKernelError(env, "data plane: eventfd failed");
    links_ = std::make_unique<DataLinks>(rank, world, FdArray(info, 2, size_t(world)), FdArray(info, 3, size_t(world)), wake_fd_);
    // Idle, the plane keeps the process alive no more than a closed socket would.
    done_ = Napi::ThreadSafeFunction::New(env, Napi::Function::New(env, [](const Napi::CallbackInfo&) {}), "rxccl data plane", 0, 1);
    done_.Unref(env);
    thread_ = std::thread([this] { Serve(); });
  }

  // Collected without close() (the process is ending): Stop ends a running collective first, so
  // the join does not wait for its timeout.
  ~DataPlane() override { Stop(); }

 private:
  // allReduce(pairwise, dtype, op, input, output, count, header, timeoutMs, done): done() once it
  // is done, else done(outcome) with outcome {kind, peer, error, what, missing, header}, on the JS
  // thread; the buffers stay referenced until then and must not be touched meanwhile. The header
  // is copied: its memory may be reused at once.
  Napi::Value AllReduce(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    ExpectArgumentCount(info, 9, 9);
    if (stopped_) ThrowKernelError(env, "data plane is closed");
    if (running_) ThrowKernelError(env, "data plane is running a collective already");
    AllReduceJob job;
    job.pairwise = info[0].ToBoolean();
    job.type = DTypeArgument(info, 1);
    job.op = OpArgument(info, 2, job.type);
    const Bytes input = BytesArgument(info, 3, "input");
    const Bytes output = BytesArgument(info, 4, "output");
    job.count = CountArgument(info, 5, "count");
    const size_t width = ElementWidth(job.type);
    job.input = ElementRange(env, input, 0, job.count, width, "input");
    job.output = ElementRange(env, output, 0, job.count, width, "output");
    if (job.output != job.input && Overlaps(job.output, job.count * width, job.input, job.count * width)) {
      ThrowKernelError(env, "output overlaps the input without being it");
    }
    const Bytes header = BytesArgument(info, 6, "header");
    if (header.length != kDataHeaderBytes) ThrowKernelError(env, "data plane header must be 32 bytes");
    memcpy(job.header, header.data, kDataHeaderBytes);
    job.timeout_ms = int64_t(CountArgument(info, 7, "timeoutMs"));
    if (!info[8].IsFunction()) ThrowKernelError(env, "data plane callback must be a function");

    callback_ = Napi::Persistent(info[8].As<Napi::Function>());
    input_ = Napi::Persistent(info[3].As<Napi::Object>());
    output_ = Napi::Persistent(info[4].As<Napi::Object>());
    running_ = true;
    done_.Ref(env);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = job;
    }
    wakeup_.notify_one();
    return env.Undefined();
  }

  // wake(): ends the running collective (and every later one) with kind "aborted".
  Napi::Value Wake(const Napi::CallbackInfo& info) {
    Signal();
    return info.Env().Undefined();
  }

  // close(): wakes a running collective, waits for the thread; the sockets are JavaScript's to close.
  Napi::Value Close(const Napi::CallbackInfo& info) {
    Stop();
    return info.Env().Undefined();
  }

  void Signal() {
    const uint64_t one = 1;
    if (wake_fd_ >= 0 && write(wake_fd_, &one, sizeof one) < 0) {
      // Only an overflowing counter fails, and then it is readable already.
    }
  }

  // Ends a running collective (Signal), then the thread, and waits for it.
  void Stop() {
    if (stopped_) return;
    Signal();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopped_ = true;
    }
    wakeup_.notify_one();
    if (thread_.joinable()) thread_.join();
    // A finished collective's call is queued already and still arrives.
    done_.Release();
    close(wake_fd_);
    wake_fd_ = -1;
  }

  void Serve() {
    for (;;) {
      AllReduceJob job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wakeup_.wait(lock, [this] { return stopped_ || job_.has_value(); });
        if (!job_.has_value()) return;
        job = *job_;
        job_.reset();
      }
      auto* outcome = new Outcome(links_->AllReduce(job));
      done_.NonBlockingCall(outcome, [this](Napi::Env env, Napi::Function, Outcome* result) {
        std::unique_ptr<Outcome> owned(result);
        Finish(env, *owned);
      });
    }
  }

  void Finish(Napi::Env env, const Outcome& outcome) {
    Napi::HandleScope scope(env);
    running_ = false;
    if (!stopped_) done_.Unref(env);
    input_.Reset();
    output_.Reset();
    Napi::FunctionReference callback = std::move(callback_);
    // Done is the common case, and costs no object for the collector to sweep.
    if (outcome.kind == Outcome::Kind::kDone) {
      callback.Call({});
      return;
    }
    Napi::Object result = Napi::Object::New(env);
    result.Set("kind", KindName(outcome.kind));
    result.Set("peer", outcome.peer);
    result.Set("error", outcome.error);
    result.Set("what", outcome.what);
    Napi::Array missing = Napi::Array::New(env, outcome.missing.size());
    for (size_t i = 0; i < outcome.missing.size(); i++) missing.Set(uint32_t(i), outcome.missing[i]);
    result.Set("missing", missing);
    Napi::Uint8Array header = Napi::Uint8Array::New(env, kDataHeaderBytes);
    memcpy(header.Data(), outcome.header, kDataHeaderBytes);
    result.Set("header", header);
    callback.Call({result});
  }

  std::unique_ptr<DataLinks> links_;
  int wake_fd_ = -1;
  Napi::ThreadSafeFunction done_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wakeup_;
  std::optional<AllReduceJob> job_;
  bool stopped_ = false;
  // JS thread only.
  bool running_ = false;
  Napi::FunctionReference callback_;
  Napi::ObjectReference input_, output_;
};

}  // namespace

Napi::Function DefineDataPlane(Napi::Env env) { return DataPlane::Define(env); }

}  // namespace rxccl
