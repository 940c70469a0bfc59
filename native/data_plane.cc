#include "data_plane.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <chrono>

#include "dispatch.h"
#include "run_job.h"

namespace rxccl {
namespace {

// How long a phase spins (poll(0) + sched_yield) after its last progress before it sleeps in
// poll(). Spinning is what makes small collectives fast where ranks share cores (Open MPI does the
// same when oversubscribed): a sleeping rank is woken late, and its wake-ups cost the others CPU.
// 20 ms, not 2: with 4 ranks on 2 cores a peer is often descheduled for a few milliseconds, and
// ranks that gave up and slept made the 8 B all-reduce up to 1.8x slower (bench/native-ceiling
// harness: 280-361 against 145-216 us a call, alternated; `rxccl bench`: level within its noise;
// 2 ranks and 1 MiB level). A rank waiting for a late peer yields all along.
constexpr int64_t kSpinNs = 20'000'000;

// Buffers per sendmsg(); a transfer has at most a handful.
constexpr int kMaxParts = 16;

// A streamed reduction reduces at least this much at a time (unless it is the end): a kernel call
// per few kilobytes would cost more than it overlaps.
constexpr size_t kStreamBytes = size_t(1) << 20;

// A relay forwards at least this much at a time (unless it is the end).
constexpr size_t kForwardBytes = size_t(256) << 10;

void SetSystem(Outcome& outcome, int peer, int error, const char* what) {
  // A peer that reset its connection has gone (it died or aborted): that is how it is named.
  const bool gone = error == ECONNRESET || error == EPIPE;
  outcome.kind = gone ? Outcome::Kind::kPeerClosed : Outcome::Kind::kSystem;
  outcome.peer = peer;
  outcome.error = error;
  outcome.what = std::string(what) + ": " + strerror(error);
}

}  // namespace

int64_t MonotonicNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

DataLinks::DataLinks(int rank, int world_size, std::vector<int> send_fds, std::vector<int> recv_fds, int wake_fd)
    : rank_(rank), world_size_(world_size), send_fds_(std::move(send_fds)), recv_fds_(std::move(recv_fds)), wake_fd_(wake_fd),
      headers_(size_t(world_size) * kDataHeaderBytes) {
  // Each message leaves in one sendmsg(); Nagle would hold a small one back for an ACK.
  const int on = 1;
  for (int fd : send_fds_) {
    if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  }
}

uint8_t* DataLinks::Scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

std::unique_ptr<Collective> DataLinks::AllPairs(const uint8_t* header, int64_t timeout_ms, const std::function<Span(int)>& send,
                                                const std::function<Span(int)>& receive) {
  auto collective = std::make_unique<Collective>();
  Collective& c = *collective;
  memcpy(c.header, header, kDataHeaderBytes);
  c.progressed_ns = MonotonicNs();
  c.deadline_ns = c.progressed_ns + timeout_ms * 1'000'000;
  // Peers in the order rank + 1, rank + 2, ...: every rank starts with a different one.
  for (int k = 1; k < world_size_; k++) {
    const int peer = (rank_ + k) % world_size_;
    uint8_t* theirs = headers_.data() + size_t(peer) * kDataHeaderBytes;
    const Span out = send(peer), in = receive(peer);
    c.transfers.push_back({peer, {{c.header, kDataHeaderBytes}, out}, {{theirs, kDataHeaderBytes}, in}});
    c.bytes += out.size + in.size;
  }
  return collective;
}

std::unique_ptr<Collective> DataLinks::Prepare(const ExchangeJob& job) {
  auto at = [](const std::vector<Span>& spans, int peer) { return size_t(peer) < spans.size() ? spans[size_t(peer)] : Span{nullptr, 0}; };
  auto collective = AllPairs(job.header, job.timeout_ms, [&](int peer) { return at(job.sends, peer); }, [&](int peer) { return at(job.receives, peer); });
  Collective* c = collective.get();
  // Relays: each forward's transfer, with the transfer whose receive it sends on.
  std::vector<std::pair<Transfer*, const Transfer*>> relays;
  for (Transfer& t : c->transfers) {
    const int source = size_t(t.peer) < job.forward_from.size() ? job.forward_from[size_t(t.peer)] : -1;
    if (source < 0) continue;
    for (const Transfer& from : c->transfers) {
      if (from.peer == source) relays.emplace_back(&t, &from);
    }
    // A forward's header may go at once; its payload as it arrives.
    t.send_limit = kDataHeaderBytes;
  }
  if (relays.empty()) return collective;
  c->received = [relays] {
    for (auto [t, from] : relays) {
      const size_t total = from->receives[1].size;
      const size_t arrived = from->received >= 2 ? total : from->received == 1 ? from->received_bytes : 0;
      if (arrived == total || kDataHeaderBytes + arrived >= t->send_limit + kForwardBytes) t->send_limit = kDataHeaderBytes + arrived;
    }
  };
  return collective;
}

std::unique_ptr<Collective> DataLinks::Prepare(const AllReduceJob& job) {
  const size_t width = ElementWidth(job.type);
  const size_t bytes = job.count * width;
  const int world_size = world_size_;
  // The W inputs, by rank: this rank's own where it is (no copy), the others' received slots.
  // `offset` bytes into each, op over `count` elements in rank order into `into`: every rank gets
  // the same bits, and avg's division is fused into the same pass.
  auto reduce = [type = job.type, op = job.op, width, world_size](const std::vector<const uint8_t*>& bases, size_t offset, size_t count, uint8_t* into) {
    // A streamed piece starts `offset` into every slice; the whole reduction (offset 0, every small
    // all-reduce) takes the bases as they are.
    std::vector<const uint8_t*> moved;
    if (offset != 0) {
      moved = bases;
      for (const uint8_t*& base : moved) base += offset;
    }
    Job kernel;
    kernel.body = ReduceSlicesBody(type, op);
    kernel.slice_bases = offset != 0 ? moved.data() : bases.data();
    kernel.slices = size_t(world_size);
    kernel.divisor = size_t(world_size);
    kernel.target = into;
    kernel.count = count;
    kernel.bytes_read = count * width * size_t(world_size);
    RunJob(kernel);
  };
  // Rank r's input slot: `own` at this rank, else `size` bytes at `slots` + r * size.
  auto inputs = [this](const uint8_t* own, const uint8_t* slots, size_t size) {
    std::vector<const uint8_t*> bases(static_cast<size_t>(world_size_));
    for (int r = 0; r < world_size_; r++) bases[size_t(r)] = r == rank_ ? own : slots + size_t(r) * size;
    return bases;
  };

  if (!job.pairwise) {
    // Every rank sends its whole tensor to every other and reduces all W copies.
    uint8_t* slots = Scratch(bytes * size_t(world_size_));
    auto collective = AllPairs(job.header, job.timeout_ms, [&](int) { return Span{const_cast<uint8_t*>(job.input), bytes}; },
                               [&](int peer) { return Span{slots + size_t(peer) * bytes, bytes}; });
    collective->complete = [reduce, bases = inputs(job.input, slots, bytes), count = job.count, output = job.output] { reduce(bases, 0, count, output); };
    return collective;
  }

  // Rank s owns elements [count * s / W, count * (s + 1) / W): every rank sends each owner its
  // part of the owner's segment, the owner reduces the W parts, then sends the result to all.
  // One phase, streamed: on each link the contribution goes first, then the reduced segment,
  // which an owner reduces (and sends) as far as every contribution has come, a piece at a time,
  // so the reduction overlaps the transfers. Memory stays safe in place: a peer's reduced bytes
  // overwrite this rank's input only where it reduced them, that is after it received them.
  auto begin = [&](int segment) { return job.count * size_t(segment) / size_t(world_size_); };
  auto segment_of = [&](uint8_t* base, int segment) { return Span{base + begin(segment) * width, (begin(segment + 1) - begin(segment)) * width}; };
  uint8_t* input = const_cast<uint8_t*>(job.input);
  const Span own = job.scatter ? Span{job.output, segment_of(input, rank_).size} : segment_of(job.output, rank_);
  uint8_t* slots = Scratch(own.size * size_t(world_size_));
  auto collective = AllPairs(job.header, job.timeout_ms, [&](int peer) { return segment_of(input, peer); },
                             [&](int peer) { return Span{slots + size_t(peer) * own.size, own.size}; });
  Collective* c = collective.get();
  // Each link carries two messages: the contribution to the peer's segment, then the reduced own
  // (a reduce-scatter ends after the first).
  for (Transfer& t : c->transfers) {
    if (job.scatter) continue;
    t.sends.insert(t.sends.end(), {t.sends[0], own});
    t.receives.insert(t.receives.end(), {t.receives[0], segment_of(job.output, t.peer)});
    t.send_limit = 2 * kDataHeaderBytes + t.sends[1].size;
    c->bytes += t.sends[3].size + t.receives[3].size;
  }
  c->received = [c, reduce, bases = inputs(segment_of(input, rank_).data, slots, own.size), own, width, reduced = size_t(0)]() mutable {
    size_t ready = own.size;
    for (const Transfer& t : c->transfers) ready = std::min(ready, t.received >= 2 ? own.size : t.received == 1 ? t.received_bytes : 0);
    ready -= ready % width;
    if (ready == reduced || (ready < own.size && ready - reduced < kStreamBytes)) return;
    reduce(bases, reduced, (ready - reduced) / width, own.data + reduced);
    reduced = ready;
    for (Transfer& t : c->transfers) t.send_limit = 2 * kDataHeaderBytes + t.sends[1].size + reduced;
  };
  return collective;
}

bool DataLinks::Advance(Collective& c, Outcome& outcome, int64_t until_ns) {
  std::vector<Transfer>& phase = c.transfers;
  if (c.received) c.received();
  // Per transfer its send and its receive socket (two sockets: a data link carries one direction),
  // and the wake descriptor last.
  std::vector<pollfd> ready(phase.size() * 2 + 1);
  for (;;) {
    bool pending = false;
    for (size_t i = 0; i < phase.size(); i++) {
      const Transfer& t = phase[i];
      // A finished side is left out: poll() would keep reporting a peer that hung up after it.
      const bool unsent = t.sent < t.sends.size(), receiving = t.received < t.receives.size();
      // A send held back by its limit waits for receives, not for the socket.
      const bool sending = unsent && t.sent_total < t.send_limit;
      ready[2 * i] = {sending ? send_fds_[t.peer] : -1, POLLOUT, 0};
      ready[2 * i + 1] = {receiving ? recv_fds_[t.peer] : -1, POLLIN, 0};
      pending = pending || unsent || receiving;
    }
    if (!pending) {
      if (c.complete) c.complete();
      return true;
    }
    ready.back() = {wake_fd_, POLLIN, 0};
    const int64_t now = MonotonicNs();
    if (now >= until_ns) return false;
    const bool spin = now - c.progressed_ns < kSpinNs;
    const int64_t left_ms = (std::min(c.deadline_ns, until_ns) - now + 999'999) / 1'000'000;
    const int count = poll(ready.data(), ready.size(), spin ? 0 : int(std::clamp<int64_t>(left_ms, 0, 60'000)));
    if (count < 0) {
      if (errno == EINTR) continue;
      SetSystem(outcome, -1, errno, "poll");
      return true;
    }
    if (ready.back().revents != 0) {
      outcome.kind = Outcome::Kind::kAborted;
      return true;
    }
    if (count == 0) {
      if (MonotonicNs() >= c.deadline_ns) {
        outcome.kind = Outcome::Kind::kTimedOut;
        for (const Transfer& t : phase) {
          if (t.received < t.receives.size()) outcome.missing.push_back(t.peer);
        }
        if (outcome.missing.empty()) {
          for (const Transfer& t : phase) {
            if (t.sent < t.sends.size()) outcome.missing.push_back(t.peer);
          }
        }
        std::sort(outcome.missing.begin(), outcome.missing.end());
        return true;
      }
      if (spin) sched_yield();
      continue;
    }
    for (size_t i = 0; i < phase.size(); i++) {
      Transfer& t = phase[i];
      if (ready[2 * i].revents != 0) {
        const size_t before = t.sent_bytes + t.sent;
        if (!Send(t, outcome)) return true;
        if (t.sent_bytes + t.sent != before) c.progressed_ns = MonotonicNs();
      }
      if (ready[2 * i + 1].revents != 0) {
        const size_t before = t.received_bytes + t.received;
        if (!Receive(t, c.header, outcome)) return true;
        if (t.received_bytes + t.received != before) {
          c.progressed_ns = MonotonicNs();
          if (c.received) c.received();
        }
      }
    }
  }
}

bool DataLinks::Send(Transfer& t, Outcome& outcome) {
  while (t.sent < t.sends.size() && t.sent_total < t.send_limit) {
    iovec parts[kMaxParts];
    int used = 0;
    size_t allowed = t.send_limit - t.sent_total;
    for (size_t k = t.sent, skip = t.sent_bytes; k < t.sends.size() && used < kMaxParts && allowed > 0; k++, skip = 0) {
      const size_t take = std::min(t.sends[k].size - skip, allowed);
      parts[used++] = {t.sends[k].data + skip, take};
      allowed -= take;
    }
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = size_t(used);
    ssize_t written = sendmsg(send_fds_[t.peer], &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (written < 0) {
      if (errno == EAGAIN || errno == EINTR) return true;
      SetSystem(outcome, t.peer, errno, "send");
      return false;
    }
    t.sent_total += size_t(written);
    while (t.sent < t.sends.size()) {
      const size_t left = t.sends[t.sent].size - t.sent_bytes;
      if (size_t(written) < left) {
        t.sent_bytes += size_t(written);
        break;
      }
      written -= ssize_t(left);
      t.sent++;
      t.sent_bytes = 0;
    }
  }
  return true;
}

bool DataLinks::Receive(Transfer& t, const uint8_t* expected_header, Outcome& outcome) {
  while (t.received < t.receives.size()) {
    const Span& into = t.receives[t.received];
    if (into.size > 0) {
      const ssize_t got = recv(recv_fds_[t.peer], into.data + t.received_bytes, into.size - t.received_bytes, MSG_DONTWAIT);
      if (got == 0) {
        outcome.kind = Outcome::Kind::kPeerClosed;
        outcome.peer = t.peer;
        return false;
      }
      if (got < 0) {
        if (errno == EAGAIN || errno == EINTR) return true;
        SetSystem(outcome, t.peer, errno, "receive");
        return false;
      }
      t.received_bytes += size_t(got);
      if (t.received_bytes < into.size) continue;
    }
    // Headers sit at even places: each is checked before a byte of its payload is read.
    if (t.received % 2 == 0 && memcmp(into.data, expected_header, kDataHeaderBytes) != 0) {
      outcome.kind = Outcome::Kind::kMismatch;
      outcome.peer = t.peer;
      memcpy(outcome.header, into.data, kDataHeaderBytes);
      return false;
    }
    t.received++;
    t.received_bytes = 0;
  }
  return true;
}

}  // namespace rxccl
