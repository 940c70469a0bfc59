// JavaScript's handle on the native data plane: `new DataPlane(rank, worldSize, rails, sendFds, recvFds, spinUs)`
// keeps the schedules JavaScript compiles (one per collective shape) and owns one thread that runs
// the session's data-plane collectives one at a time (collectives are
// ordered per session; a small one starts on the calling thread, see kInlineBytes), and a wake
// descriptor that ends a running one at once. A thread of its own
// rather than libuv's pool: ranks of one process (tests, notebooks) wait for each other inside a
// collective, and four of them would take every pool thread. lib/transport/data-plane.ts wraps it.
// It moves no byte itself: the session's data links do (data_links.h), running the programs
// compiled here (schedule_program.h, program_executor.h).
#include <napi.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "args.h"
#include "data_links.h"
#include "data_plane_entry.h"
#include "dispatch.h"
#include "errors.h"

namespace rxccl {
namespace {

// A collective moving at most this many payload bytes runs on the calling (JS) thread first, for
// at most the plane's inline budget (inlineUs, default kDefaultInlineNs): a small one is usually
// over by then, and has cost no hand-off to the engine's thread and back (a futex wake and an
// event-loop wake-up per call, about 30 us: most of a small collective's cost). Past that time the
// engine's thread carries it on, so the event loop is never held longer (its timers, and the abort
// that would wake the engine, wait that long). A budget of 0 hands every collective over at once.
constexpr size_t kInlineBytes = 64 * 1024;
constexpr int64_t kDefaultInlineNs = 1'000'000;

// While a collective waits for its peers, the engine's thread says every this often who they are,
// those that moved none of its bytes since the last time (waitingFor()): JavaScript asks when the
// collective has waited long, and gets an answer this fresh.
constexpr int64_t kWaitingReportNs = 1'000'000'000;

// Only a process whose open planes all serve one owner (one rank of one job: its world's and its
// communicators' planes) runs collectives inline: where ranks share a process (tests, notebooks)
// the peer a rank waits for runs on this very thread, after it. Open planes by owner.
std::mutex owners_mutex;
std::map<double, int> open_owners;

void OwnerOpened(double owner) {
  std::lock_guard<std::mutex> lock(owners_mutex);
  open_owners[owner]++;
}

void OwnerClosed(double owner) {
  std::lock_guard<std::mutex> lock(owners_mutex);
  if (--open_owners[owner] == 0) open_owners.erase(owner);
}

bool OneOwner() {
  std::lock_guard<std::mutex> lock(owners_mutex);
  return open_owners.size() == 1;
}

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
    ThrowKernelError(info.Env(), "data plane descriptors must be an array with one entry per rank and rail");
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
                       {InstanceMethod("compile", &DataPlane::Compile), InstanceMethod("release", &DataPlane::Release),
                        InstanceMethod("run", &DataPlane::Run), InstanceMethod("open", &DataPlane::Open),
                        InstanceMethod("programLinks", &DataPlane::ProgramLinks), InstanceMethod("wake", &DataPlane::Wake),
                        InstanceMethod("close", &DataPlane::Close), InstanceMethod("singleCopyLinks", &DataPlane::SingleCopyLinks),
                        InstanceMethod("sharedMemoryLinks", &DataPlane::SharedMemoryLinks),
                        InstanceMethod("waitingFor", &DataPlane::WaitingFor), InstanceMethod("polls", &DataPlane::Polls)});
  }

  // new DataPlane(rank, worldSize, rails, sendFds, recvFds, spinUs[, sameHost, singleCopy, owner, sharedMemory, inlineUs]):
  // the descriptors of rank p's links at p * rails + rail; spinUs < 0 adapts (spin_budget.h);
  // sameHost, the peers on this rank's host (their links start with the single-copy agreement,
  // single_copy.h), none if left out; singleCopy, whether this rank offers and reads memory (true if
  // left out); owner, a number naming the job rank the plane serves (open_owners), a plane of its
  // own if left out; sharedMemory, whether this rank offers and maps rings on the links of its host
  // (shared_memory_links.h; true if left out); inlineUs, how long a small collective may run on
  // the calling thread before the engine's thread takes it (kInlineBytes), 1000 if left out, 0 never.
  explicit DataPlane(const Napi::CallbackInfo& info) : Napi::ObjectWrap<DataPlane>(info) {
    Napi::Env env = info.Env();
    ExpectArgumentCount(info, 6, 11);
    const int rank = int(CountArgument(info, 0, "rank"));
    const int world = int(CountArgument(info, 1, "worldSize"));
    if (world < 1 || rank >= world) ThrowKernelError(env, "data plane rank must be below its world size");
    const int rails = int(CountArgument(info, 2, "rails"));
    if (rails < 1 || rails > kMaxDataRails) ThrowKernelError(env, "data plane rails must be 1.." + std::to_string(kMaxDataRails));
    world_size_ = world;
    rank_ = rank;
    rails_ = rails;
    if (!info[5].IsNumber()) ThrowKernelError(env, "data plane spinUs must be a number");
    const int64_t spin_us = info[5].As<Napi::Number>().Int64Value();
    const size_t links = size_t(world) * size_t(rails);
    std::vector<int> same_host;
    if (info.Length() > 6 && !info[6].IsUndefined()) {
      if (!info[6].IsArray()) ThrowKernelError(env, "data plane sameHost must be an array of ranks");
      const Napi::Array peers = info[6].As<Napi::Array>();
      for (uint32_t i = 0; i < peers.Length(); i++) {
        const Napi::Value peer = peers.Get(i);
        if (!peer.IsNumber() || peer.As<Napi::Number>().DoubleValue() != double(peer.As<Napi::Number>().Int32Value()) ||
            peer.As<Napi::Number>().Int32Value() < 0 || peer.As<Napi::Number>().Int32Value() >= world) {
          ThrowKernelError(env, "data plane sameHost must hold ranks below its world size");
        }
        same_host.push_back(peer.As<Napi::Number>().Int32Value());
      }
    }
    if (info.Length() > 7 && !info[7].IsUndefined() && !info[7].IsBoolean()) ThrowKernelError(env, "data plane singleCopy must be a boolean");
    const bool single_copy = info.Length() <= 7 || info[7].IsUndefined() || info[7].As<Napi::Boolean>().Value();
    if (info.Length() > 8 && !info[8].IsUndefined() && !info[8].IsNumber()) ThrowKernelError(env, "data plane owner must be a number");
    // Left out: an owner no other plane has (the planes made so far count down from -1).
    static std::atomic<int64_t> unnamed{0};
    owner_ = info.Length() > 8 && !info[8].IsUndefined() ? info[8].As<Napi::Number>().DoubleValue() : double(--unnamed);
    if (info.Length() > 9 && !info[9].IsUndefined() && !info[9].IsBoolean()) ThrowKernelError(env, "data plane sharedMemory must be a boolean");
    const bool shared_memory = info.Length() <= 9 || info[9].IsUndefined() || info[9].As<Napi::Boolean>().Value();
    if (info.Length() > 10 && !info[10].IsUndefined()) {
      // The JS side allows 0..100000 (MAX_INLINE_MICROS); NaN or a huge number would overflow the nanoseconds.
      if (!info[10].IsNumber() || !(info[10].As<Napi::Number>().DoubleValue() >= 0 && info[10].As<Napi::Number>().DoubleValue() <= 100'000)) {
        ThrowKernelError(env, "data plane inlineUs must be a number of microseconds, 0..100000");
      }
      inline_ns_ = int64_t(info[10].As<Napi::Number>().DoubleValue() * 1000);
    }
    const std::vector<int> send_fds = FdArray(info, 3, links), receive_fds = FdArray(info, 4, links);
    // Opened once every argument is checked: a refused one leaks no descriptor.
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) ThrowKernelError(env, "data plane: eventfd failed");
    links_ = std::make_unique<DataLinks>(rank, world, rails, send_fds, receive_fds, wake_fd_,
                                         spin_us < 0 ? -1 : spin_us * 1000, same_host, single_copy, shared_memory);
    if (!links_->single_copy().SetupError().empty()) {
      close(wake_fd_);
      wake_fd_ = -1;
      ThrowKernelError(env, "data plane of rank " + std::to_string(rank) + " " + links_->single_copy().SetupError());
    }
    // Idle, the plane keeps the process alive no more than a closed socket would.
    done_ = Napi::ThreadSafeFunction::New(env, Napi::Function::New(env, [](const Napi::CallbackInfo&) {}), "rxccl data plane", 0, 1);
    done_.Unref(env);
    thread_ = std::thread([this] { Serve(); });
    OwnerOpened(owner_);
  }

  // Collected without close() (the process is ending): Stop ends a running collective first, so
  // the join does not wait for its timeout.
  ~DataPlane() override { Stop(); }

 private:
  // compile(program): decodes a schedule (a Float64Array,
  // lib/collectives/schedule/plane-executor.ts `encodeProgram`) and keeps it; returns its id for run().
  Napi::Value Compile(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    ExpectArgumentCount(info, 1, 1);
    if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
      ThrowKernelError(env, "data plane program must be a Float64Array");
    }
    Napi::Float64Array encoded = info[0].As<Napi::Float64Array>();
    auto program = std::make_unique<Program>();
    std::string error;
    if (!DecodeProgram(encoded.Data(), encoded.ElementLength(), rank_, world_size_, rails_, *program, error)) ThrowKernelError(env, "data plane " + error);
    for (size_t id = 0; id < programs_.size(); id++) {
      if (programs_[id] == nullptr) {
        programs_[id] = std::move(program);
        return Napi::Number::New(env, double(id));
      }
    }
    programs_.push_back(std::move(program));
    return Napi::Number::New(env, double(programs_.size() - 1));
  }

  // release(id): forgets a compiled program (a collective running it has what it needs).
  Napi::Value Release(const Napi::CallbackInfo& info) {
    ExpectArgumentCount(info, 1, 1);
    ProgramArgument(info, 0);
    programs_[CountArgument(info, 0, "program")] = nullptr;
    return info.Env().Undefined();
  }

  // run(id, input, output, header, timeoutMs, done): runs compiled program `id` over the caller's
  // input and output (Uint8Arrays holding at least what the program's spans need). done() once it
  // is done, else done(outcome) with outcome {kind, peer, rail, label, error, what, missing, header}, on the JS
  // thread: before run returns if it was over on this thread (Start), else later; the buffers stay
  // referenced until then and must not be touched meanwhile. The header is copied: its memory may
  // be reused at once.
  Napi::Value Run(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    ExpectArgumentCount(info, 6, 6);
    ExpectIdle(env);
    const Program& program = ProgramArgument(info, 0);
    for (const Program::Link& link : program.links) {
      if (!links_->IsOpen(size_t(link.peer) * size_t(rails_) + size_t(link.rail))) {
        ThrowKernelError(env, "data plane program needs the link to rank " + std::to_string(link.peer) + " rail " + std::to_string(link.rail) + ", which is not open");
      }
    }
    const Bytes input = BytesArgument(info, 1, "input");
    const Bytes output = BytesArgument(info, 2, "output");
    if (input.length < program.input_bytes) ThrowKernelError(env, "data plane input is smaller than its program reads");
    if (output.length < program.output_bytes) ThrowKernelError(env, "data plane output is smaller than its program writes");
    uint8_t header[kDataHeaderBytes];
    HeaderArgument(info, 3, header);
    const int64_t timeout_ms = int64_t(CountArgument(info, 4, "timeoutMs"));
    if (!info[5].IsFunction()) ThrowKernelError(env, "data plane callback must be a function");
    Start(info, 5, links_->Prepare(program, input.data, output.data, header, timeout_ms), {1, 2});
    return env.Undefined();
  }

  // open(link, sendFd, recvFd): adds data link `link` (peer * rails + rail), not open yet, both ways
  // (links on demand: JavaScript dials a peer's links when a program first needs them); between
  // collectives. Where the peer is on this host, its single-copy offer is written now.
  Napi::Value Open(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    ExpectArgumentCount(info, 3, 3);
    ExpectIdle(env);
    const size_t link = CountArgument(info, 0, "link");
    if (link >= size_t(world_size_) * size_t(rails_) || int(link / size_t(rails_)) == rank_) {
      ThrowKernelError(env, "data plane link " + std::to_string(link) + " is no link of rank " + std::to_string(rank_) + " to a peer");
    }
    if (links_->IsOpen(link)) ThrowKernelError(env, "data plane link " + std::to_string(link) + " is open already");
    const int send_fd = int(CountArgument(info, 1, "sendFd")), recv_fd = int(CountArgument(info, 2, "recvFd"));
    const std::string error = links_->Open(link, send_fd, recv_fd);
    if (!error.empty()) ThrowKernelError(env, "data plane of rank " + std::to_string(rank_) + " " + error);
    return env.Undefined();
  }

  // programLinks(id): the links (peer * rails + rail) compiled program `id` moves messages on, which
  // must be open before it runs.
  Napi::Value ProgramLinks(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    ExpectArgumentCount(info, 1, 1);
    const Program& program = ProgramArgument(info, 0);
    Napi::Array links = Napi::Array::New(env, program.links.size());
    for (uint32_t i = 0; i < program.links.size(); i++) links.Set(i, Napi::Number::New(env, double(program.links[i].peer * rails_ + program.links[i].rail)));
    return links;
  }

  const Program& ProgramArgument(const Napi::CallbackInfo& info, size_t index) {
    const size_t id = CountArgument(info, index, "program");
    if (id >= programs_.size() || programs_[id] == nullptr) ThrowKernelError(info.Env(), "data plane program " + std::to_string(id) + " is not compiled");
    return *programs_[id];
  }

  void ExpectIdle(Napi::Env env) const {
    if (stopped_) ThrowKernelError(env, "data plane is closed");
    if (running_) ThrowKernelError(env, "data plane is running a collective already");
  }

  void HeaderArgument(const Napi::CallbackInfo& info, size_t index, uint8_t* into) {
    const Bytes header = BytesArgument(info, index, "header");
    if (header.length != kDataHeaderBytes) ThrowKernelError(info.Env(), "data plane header must be 32 bytes");
    memcpy(into, header.data, kDataHeaderBytes);
  }

  // Runs `collective`: on this thread for up to inline_ns_ when it is small (its peers are usually
  // there: no hand-off to the engine's thread and back), else, or once that time is up, on the
  // engine's thread, keeping the arguments at `held` (its memory) and the callback referenced
  // until it is done.
  void Start(const Napi::CallbackInfo& info, size_t callback, std::unique_ptr<Collective> collective, std::initializer_list<size_t> held) {
    Napi::Env env = info.Env();
    if (inline_ns_ > 0 && collective->run.bytes <= kInlineBytes && OneOwner()) {
      Outcome outcome;
      if (links_->Advance(*collective, outcome, MonotonicNs() + inline_ns_)) {
        Deliver(env, info[callback].As<Napi::Function>(), outcome);
        return;
      }
    }
    callback_ = Napi::Persistent(info[callback].As<Napi::Function>());
    for (size_t index : held) held_.push_back(Napi::Persistent(info[index].As<Napi::Object>()));
    running_ = true;
    done_.Ref(env);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = std::move(collective);
    }
    wakeup_.notify_one();
  }

  // wake(): ends the running collective (and every later one) with kind "aborted".
  Napi::Value Wake(const Napi::CallbackInfo& info) {
    Signal();
    return info.Env().Undefined();
  }

  // singleCopyLinks(): {sends, receives}, the links (p * rails + rail) agreed to single copy so far.
  Napi::Value SingleCopyLinks(const Napi::CallbackInfo& info) {
    const rxccl::SingleCopyLinks& links = links_->single_copy();
    return AgreedLinks(info, [&](bool sending) { return links.Agreed(sending); });
  }

  // sharedMemoryLinks(): {sends, receives, refusals}, the links (p * rails + rail) agreed to a
  // shared-memory ring so far, and per link why it did not agree ("" where it did or none was offered).
  Napi::Value SharedMemoryLinks(const Napi::CallbackInfo& info) {
    const rxccl::SharedMemoryLinks& links = links_->shared_memory();
    Napi::Object result = AgreedLinks(info, [&](bool sending) { return links.Agreed(sending); });
    const std::vector<std::string>& refusals = links.Refusals();
    Napi::Array reasons = Napi::Array::New(info.Env(), refusals.size());
    for (size_t i = 0; i < refusals.size(); i++) reasons.Set(uint32_t(i), refusals[i]);
    result.Set("refusals", reasons);
    return result;
  }

  // {sends, receives}: the links `agreed(sending)` names, between collectives.
  template <typename Agreed>
  Napi::Object AgreedLinks(const Napi::CallbackInfo& info, const Agreed& agreed) {
    Napi::Env env = info.Env();
    ExpectArgumentCount(info, 0, 0);
    ExpectIdle(env);
    Napi::Object result = Napi::Object::New(env);
    for (const bool sending : {true, false}) {
      const std::vector<int> links = agreed(sending);
      Napi::Array list = Napi::Array::New(env, links.size());
      for (size_t i = 0; i < links.size(); i++) list.Set(uint32_t(i), links[i]);
      result.Set(sending ? "sends" : "receives", list);
    }
    return result;
  }

  // waitingFor(): the peers the running collective waits for in silence (DataLinks::Silent), as the engine's
  // thread last said (at most kWaitingReportNs ago); none while nothing waits on that thread.
  Napi::Value WaitingFor(const Napi::CallbackInfo& info) {
    ExpectArgumentCount(info, 0, 0);
    std::vector<int> peers;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      peers = waiting_for_;
    }
    Napi::Array list = Napi::Array::New(info.Env(), peers.size());
    for (size_t i = 0; i < peers.size(); i++) list.Set(uint32_t(i), peers[i]);
    return list;
  }

  // polls(): how many times the plane's waits looked at its descriptors (poll()) so far (DataLinks::polls).
  Napi::Value Polls(const Napi::CallbackInfo& info) {
    ExpectArgumentCount(info, 0, 0);
    return Napi::Number::New(info.Env(), links_ == nullptr ? 0.0 : double(links_->polls()));
  }

  // close(): wakes a running collective, waits for the thread; the sockets are JavaScript's to close.
  Napi::Value Close(const Napi::CallbackInfo& info) {
    Stop();
    return info.Env().Undefined();
  }

  void Signal() {
    if (links_ != nullptr) links_->End();
    const uint64_t one = 1;
    if (wake_fd_ >= 0 && write(wake_fd_, &one, sizeof one) < 0) {
      // Only an overflowing counter fails, and then it is readable already.
    }
  }

  // Ends a running collective (Signal), then the thread, and waits for it.
  void Stop() {
    if (stopped_) return;
    OwnerClosed(owner_);
    Signal();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopped_ = true;
    }
    wakeup_.notify_one();
    if (thread_.joinable()) thread_.join();
    // The links go with the thread, and with them this rank's leave to be read by any process of
    // its user (single_copy.h, PtracerGrant): at close, not whenever the collector comes.
    links_.reset();
    // A finished collective's call is queued already and still arrives.
    done_.Release();
    close(wake_fd_);
    wake_fd_ = -1;
  }

  void Serve() {
    for (;;) {
      std::unique_ptr<Collective> collective;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wakeup_.wait(lock, [this] { return stopped_ || job_ != nullptr; });
        if (job_ == nullptr) return;
        collective = std::move(job_);
      }
      auto* outcome = new Outcome();
      std::vector<size_t> progress;
      DataLinks::Silent(*collective, progress);
      while (!links_->Advance(*collective, *outcome, MonotonicNs() + kWaitingReportNs)) ReportWaiting(DataLinks::Silent(*collective, progress));
      ReportWaiting({});
      done_.NonBlockingCall(outcome, [this](Napi::Env env, Napi::Function, Outcome* result) {
        std::unique_ptr<Outcome> owned(result);
        Finish(env, *owned);
      });
    }
  }

  void ReportWaiting(std::vector<int> peers) {
    std::lock_guard<std::mutex> lock(mutex_);
    waiting_for_ = std::move(peers);
  }

  void Finish(Napi::Env env, const Outcome& outcome) {
    Napi::HandleScope scope(env);
    running_ = false;
    if (!stopped_) done_.Unref(env);
    held_.clear();
    Napi::FunctionReference callback = std::move(callback_);
    Deliver(env, callback.Value(), outcome);
  }

  // done() once it is done, else done(outcome).
  static void Deliver(Napi::Env env, Napi::Function done, const Outcome& outcome) {
    // Done is the common case, and costs no object for the collector to sweep.
    if (outcome.kind == Outcome::Kind::kDone) {
      done.Call({});
      return;
    }
    Napi::Object result = Napi::Object::New(env);
    result.Set("kind", KindName(outcome.kind));
    result.Set("peer", outcome.peer);
    result.Set("rail", outcome.rail);
    result.Set("label", outcome.label);
    result.Set("error", outcome.error);
    result.Set("what", outcome.what);
    Napi::Array missing = Napi::Array::New(env, outcome.missing.size());
    for (size_t i = 0; i < outcome.missing.size(); i++) missing.Set(uint32_t(i), outcome.missing[i]);
    result.Set("missing", missing);
    Napi::Uint8Array header = Napi::Uint8Array::New(env, kDataHeaderBytes);
    memcpy(header.Data(), outcome.header, kDataHeaderBytes);
    result.Set("header", header);
    done.Call({result});
  }

  std::unique_ptr<DataLinks> links_;
  int wake_fd_ = -1;
  Napi::ThreadSafeFunction done_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wakeup_;
  std::unique_ptr<Collective> job_;
  bool stopped_ = false;
  // The peers the collective on the engine's thread waits for (waitingFor()).
  std::vector<int> waiting_for_;
  // JS thread only.
  bool running_ = false;
  // Whom the plane serves (OneOwner).
  double owner_ = 0;
  // How long a small collective runs on the calling thread before the engine's thread takes it (Start).
  int64_t inline_ns_ = kDefaultInlineNs;
  Napi::FunctionReference callback_;
  std::vector<Napi::ObjectReference> held_;
  int world_size_ = 0, rank_ = 0, rails_ = 1;
  // Compiled schedules by id (null: released). JS thread only.
  std::vector<std::unique_ptr<Program>> programs_;
};

}  // namespace

Napi::Function DefineDataPlane(Napi::Env env) { return DataPlane::Define(env); }

}  // namespace rxccl
