// A measuring prototype, not part of rxccl: the data phase of an all-reduce driven by a C++
// thread over sockets JavaScript connected and handed over (see run.ts). It answers one question
// before rxccl's addon takes over its data sockets (issue #10): how fast is that design here,
// with the same TCP, the same processes and the same Node entry and exit per call? No framing,
// agreement, abort or timeout: what the real one adds costs little next to the transfers.
//
// allReduce(fds, rank, worldSize, bytes, algorithm, wait, done)
//   fds[p]: the socket to rank p (ignored at p == rank); bytes: f32 values, summed in place.
//   algorithm "pairwise": reduce-scatter then all-gather, every pair at once (rxccl's pairwise);
//   "all-pairs": every rank sends all its values to every other and sums W copies (small sizes).
//   wait "block": poll() sleeps until a socket is ready; "spin": poll(0) + sched_yield() (MPI's
//   way when oversubscribed). done(error) runs on the JS thread.
#include <napi.h>

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

struct Span {
  uint8_t* data;
  size_t size;
};

// What goes to and comes from one peer in one phase, in order, and how far each has got.
struct Transfer {
  int fd;
  std::vector<Span> sends;
  std::vector<Span> receives;
  size_t sent = 0, sentBytes = 0, received = 0, receivedBytes = 0;
};

void Sum(float* into, const float* from, size_t count) {
  for (size_t i = 0; i < count; i++) into[i] += from[i];
}

class AllReduce : public Napi::AsyncWorker {
 public:
  AllReduce(Napi::Function done, std::vector<int> fds, int rank, int world, Napi::Uint8Array bytes, bool pairwise, bool spin)
      : Napi::AsyncWorker(done), fds_(std::move(fds)), rank_(rank), world_(world), data_(bytes.Data()), size_(bytes.ByteLength()), pairwise_(pairwise), spin_(spin) {
    keep_ = Napi::Persistent(bytes);
  }

  void Execute() override {
    // One scratch area per pool thread, grown once: a fresh one per call would cost page faults.
    static thread_local std::vector<uint8_t> scratch;
    if (scratch.size() < size_ * world_) scratch.resize(size_ * world_);
    scratch_ = scratch.data();
    if (pairwise_) Pairwise();
    else AllPairs();
  }

  void OnOK() override { Callback().Call({Env().Null()}); }

 private:
  void AllPairs() {
    std::vector<Transfer> phase;
    for (int p = 0; p < world_; p++) {
      if (p != rank_) phase.push_back({fds_[p], {{data_, size_}}, {{scratch_ + p * size_, size_}}});
    }
    if (!Move(phase)) return;
    for (int p = 0; p < world_; p++) {
      if (p != rank_) Sum(reinterpret_cast<float*>(data_), reinterpret_cast<float*>(scratch_ + p * size_), size_ / 4);
    }
  }

  void Pairwise() {
    const size_t count = size_ / 4;
    auto segment = [&](int s) {
      size_t from = count * s / world_ * 4, to = count * (s + 1) / world_ * 4;
      return Span{data_ + from, to - from};
    };
    const Span own = segment(rank_);
    std::vector<Transfer> scatter, gather;
    for (int k = 1; k < world_; k++) {
      const int p = (rank_ + k) % world_;
      scatter.push_back({fds_[p], {segment(p)}, {{scratch_ + p * own.size, own.size}}});
      gather.push_back({fds_[p], {own}, {segment(p)}});
    }
    if (!Move(scatter)) return;
    for (int p = 0; p < world_; p++) {
      if (p != rank_) Sum(reinterpret_cast<float*>(own.data), reinterpret_cast<float*>(scratch_ + p * own.size), own.size / 4);
    }
    Move(gather);
  }

  // Runs every transfer of a phase to its end: non-blocking sends and receives on whichever
  // sockets are ready, sleeping in poll() or spinning with yields in between.
  bool Move(std::vector<Transfer>& phase) {
    std::vector<pollfd> ready(phase.size());
    for (;;) {
      bool pending = false;
      for (size_t i = 0; i < phase.size(); i++) {
        const Transfer& t = phase[i];
        const short events = (t.sent < t.sends.size() ? POLLOUT : 0) | (t.received < t.receives.size() ? POLLIN : 0);
        // A finished transfer's socket is left out: poll() would still report its peer hanging up.
        ready[i] = {events != 0 ? t.fd : -1, events, 0};
        pending = pending || events != 0;
      }
      if (!pending) return true;
      const int count = poll(ready.data(), ready.size(), spin_ ? 0 : 60000);
      if (count < 0 && errno == EINTR) continue;
      if (count < 0) return Fail("poll", errno);
      if (count == 0) {
        if (!spin_) return Fail("poll timed out", 0);
        sched_yield();
        continue;
      }
      for (size_t i = 0; i < phase.size(); i++) {
        if (ready[i].revents == 0) continue;
        if (!Send(phase[i]) || !Receive(phase[i])) return false;
      }
    }
  }

  bool Send(Transfer& t) {
    if (t.sent == t.sends.size()) return true;
    iovec parts[16];
    int used = 0;
    for (size_t k = t.sent, skip = t.sentBytes; k < t.sends.size() && used < 16; k++, skip = 0) {
      parts[used++] = {t.sends[k].data + skip, t.sends[k].size - skip};
    }
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = used;
    ssize_t written = sendmsg(t.fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (written < 0) return errno == EAGAIN || errno == EINTR || Fail("send", errno);
    while (written > 0) {
      const size_t left = t.sends[t.sent].size - t.sentBytes;
      if (static_cast<size_t>(written) < left) {
        t.sentBytes += written;
        break;
      }
      written -= left;
      t.sent++;
      t.sentBytes = 0;
    }
    return true;
  }

  bool Receive(Transfer& t) {
    while (t.received < t.receives.size()) {
      const Span& into = t.receives[t.received];
      const ssize_t got = recv(t.fd, into.data + t.receivedBytes, into.size - t.receivedBytes, MSG_DONTWAIT);
      if (got == 0) return Fail("peer closed", 0);
      if (got < 0) return errno == EAGAIN || errno == EINTR || Fail("recv", errno);
      t.receivedBytes += got;
      if (t.receivedBytes == into.size) {
        t.received++;
        t.receivedBytes = 0;
      }
    }
    return true;
  }

  bool Fail(const char* what, int error) {
    SetError(error != 0 ? std::string(what) + ": " + strerror(error) : std::string(what));
    return false;
  }

  std::vector<int> fds_;
  int rank_, world_;
  uint8_t* data_;
  size_t size_;
  bool pairwise_, spin_;
  Napi::Reference<Napi::Uint8Array> keep_;
  uint8_t* scratch_ = nullptr;
};

Napi::Value AllReduceEntry(const Napi::CallbackInfo& info) {
  const Napi::Array list = info[0].As<Napi::Array>();
  std::vector<int> fds(list.Length());
  for (uint32_t i = 0; i < list.Length(); i++) fds[i] = list.Get(i).As<Napi::Number>().Int32Value();
  const std::string algorithm = info[4].As<Napi::String>();
  const std::string wait = info[5].As<Napi::String>();
  auto* job = new AllReduce(info[6].As<Napi::Function>(), std::move(fds), info[1].As<Napi::Number>().Int32Value(), info[2].As<Napi::Number>().Int32Value(),
                            info[3].As<Napi::Uint8Array>(), algorithm == "pairwise", wait == "spin");
  job->Queue();
  return info.Env().Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("allReduce", Napi::Function::New(env, AllReduceEntry, "allReduce"));
  return exports;
}

}  // namespace

NODE_API_MODULE(data_plane, Init)
