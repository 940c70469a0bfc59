#include "data_links.h"

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

namespace rxccl {
namespace {

// Buffers per sendmsg(); a transfer has at most a handful.
constexpr int kMaxParts = 16;

// A spinning wait whose every wait is on a ring (a header to read, a slot to write) watches the
// rings' memory this long before it makes its system calls (poll(0), which also sees the session's
// end and a peer gone, and sched_yield): those cost 1-3 us each on a VM, where a ring's message is
// seen in memory within a fraction of a microsecond. Short, so a wait still yields its core about
// as often as before (spin_budget.h says how long it spins in all).
constexpr int64_t kRingWatchNs = 4'000;

// Tells the core this thread is spinning on memory (a hyperthread sibling gets the pipeline).
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Each message leaves in one sendmsg(); Nagle would hold a small one back for an ACK.
void WithoutNagle(int fd) {
  const int on = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

}  // namespace

int64_t MonotonicNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

DataLinks::DataLinks(int rank, int world_size, int rails, std::vector<int> send_fds, std::vector<int> recv_fds, int wake_fd, int64_t spin_ns,
                     const std::vector<int>& same_host, bool single_copy, bool shared_memory)
    : rails_(rails),
      send_fds_(send_fds.size(), -1),
      recv_fds_(recv_fds.size(), -1),
      same_host_(size_t(world_size), 0),
      wake_fd_(wake_fd),
      executor_(world_size, rails),
      spin_(spin_ns),
      shared_(world_size, rails, shared_memory),
      single_copy_(world_size, rails, single_copy, shared_) {
  for (int peer : same_host) {
    if (peer != rank && peer >= 0 && peer < world_size) same_host_[size_t(peer)] = 1;
  }
  for (size_t link = 0; link < send_fds.size(); link++) {
    if (send_fds[link] >= 0) Open(link, send_fds[link], recv_fds[link]);
  }
}

std::string DataLinks::Open(size_t link, int send_fd, int recv_fd) {
  const int peer = int(link / size_t(rails_));
  WithoutNagle(send_fd);
  send_fds_[link] = send_fd;
  recv_fds_[link] = recv_fd;
  if (same_host_[size_t(peer)] != 0) {
    shared_.Offer(link);
    single_copy_.Offer(link, send_fd, peer);
  }
  return single_copy_.SetupError();
}

void DataLinks::Progressed(Collective& c) {
  const int64_t now = MonotonicNs();
  spin_.Waited(now - c.progressed_ns, c.slept);
  c.progressed_ns = now;
  c.slept = false;
}

std::unique_ptr<Collective> DataLinks::Prepare(const Program& program, const uint8_t* input, uint8_t* output, const uint8_t* header,
                                               int64_t timeout_ms) {
  auto collective = std::make_unique<Collective>();
  Collective& c = *collective;
  c.progressed_ns = MonotonicNs();
  c.deadline_ns = c.progressed_ns + timeout_ms * 1'000'000;
  executor_.Prepare(program, input, output, header, c.run);
  c.single_copy.resize(c.run.transfers.size());
  return collective;
}

std::vector<int> DataLinks::Missing(const Collective& c) {
  std::vector<int> missing;
  for (const Transfer& t : c.run.transfers) {
    if (t.received < t.receives.size()) missing.push_back(t.peer);
  }
  if (missing.empty()) {
    for (size_t i = 0; i < c.run.transfers.size(); i++) {
      const Transfer& t = c.run.transfers[i];
      // Single copy: a receiver that has not answered every range has not taken it all.
      if (t.sent < t.sends.size() || !c.single_copy[i].unanswered.empty()) missing.push_back(t.peer);
    }
  }
  // A peer late on several rails is named once.
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  return missing;
}

std::vector<int> DataLinks::Silent(const Collective& c, std::vector<size_t>& progress) {
  std::vector<int> silent = Missing(c);
  progress.resize(c.run.transfers.size(), 0);
  for (size_t i = 0; i < c.run.transfers.size(); i++) {
    const Transfer& t = c.run.transfers[i];
    const size_t moved = t.received_total + t.sent_total + c.single_copy[i].answered_total;
    if (moved != progress[i]) silent.erase(std::remove(silent.begin(), silent.end(), t.peer), silent.end());
    progress[i] = moved;
  }
  return silent;
}

bool DataLinks::Advance(Collective& c, Outcome& outcome, int64_t until_ns) {
  std::vector<Transfer>& phase = c.run.transfers;
  if (ended_.load(std::memory_order_acquire)) {
    outcome.kind = Outcome::Kind::kAborted;
    return true;
  }
  c.run.Settle();
  // A socket can nearly always take a message: what may go is tried before the first poll.
  for (size_t i = 0; i < phase.size(); i++) {
    const Transfer& t = phase[i];
    if (t.sent < t.sends.size() && t.sent_total < t.send_limit && !Move(c, i, Direction::kSend, outcome)) return true;
  }
  // Per transfer its send and its receive socket (two sockets: a data link carries one direction;
  // single copy's answers come back the other way), the doorbells of its rings where it sleeps on
  // them (a slot to write, a header to read), and the wake descriptor last.
  std::vector<pollfd> ready(phase.size() * 4 + 1);
  for (;;) {
    // ring_ready: a ring holds a message or takes one now; ranges: single copy is reading one;
    // socket_waits: something waits on a socket, not only on rings' memory.
    bool pending = false, ring_ready = false, ranges = false, socket_waits = false;
    for (size_t i = 0; i < phase.size(); i++) {
      const Transfer& t = phase[i];
      const SingleCopyTransfer& s = c.single_copy[i];
      // A finished side is left out: poll() would keep reporting a peer that hung up after it.
      const bool unsent = t.sent < t.sends.size(), receiving = t.received < t.receives.size();
      const bool queued = s.outbox_sent < s.outbox.size(), owing = single_copy_.Owes(t);
      // The receiver's answer to this rank's offer (nothing goes before it), or to its ranges.
      const bool awaiting = single_copy_.AwaitsAnswer(t);
      const bool answers = (unsent && awaiting) || !s.unanswered.empty();
      // A send held back by its limit waits for receives, not for the socket; a header or fragment
      // due on a ring waits for nothing but its slot.
      const bool sending = queued || (unsent && !awaiting && !shared_.WriteDue(t) && t.sent_total < t.send_limit);
      ready[4 * i] = {sending || answers ? SendFd(t) : -1, short((sending ? POLLOUT : 0) | (answers ? POLLIN : 0)), 0};
      // Receiving by a ring, the socket is still watched: it says when the peer has gone.
      ready[4 * i + 1] = {receiving || owing ? ReceiveFd(t) : -1, short((receiving ? POLLIN : 0) | (owing ? POLLOUT : 0)), 0};
      ready[4 * i + 2] = ready[4 * i + 3] = {-1, POLLIN, 0};
      pending = pending || unsent || queued || answers || receiving || owing;
      // What a ring holds or takes now is moved at once (below), as a range being read.
      ring_ready = ring_ready || RingReady(t, s);
      ranges = ranges || s.range_left > 0;
      const bool ring_read = shared_.Reads(t) && receiving && t.received % 2 == 0 && t.received_bytes == 0;
      socket_waits = socket_waits || sending || answers || owing || (receiving && !ring_read) || s.range_left > 0;
    }
    // Folds run as their producers arrive (Settle), so with every message through they are done.
    if (!pending) return true;
    ready.back() = {wake_fd_, POLLIN, 0};
    const int64_t now = MonotonicNs();
    if (now >= until_ns) return false;
    const bool spin = now - c.progressed_ns < spin_.spin_ns();
    if (spin && !ring_ready && !socket_waits) ring_ready = WatchRings(c, std::min(now + kRingWatchNs, until_ns));
    if (ring_ready && !ranges) {
      // Moved at once, without a system call: the session's end shows in ended_ (End), a peer gone
      // at the next poll. A range being read (below) goes on beside polls, so sockets are seen.
      if (ended_.load(std::memory_order_acquire)) {
        outcome.kind = Outcome::Kind::kAborted;
        return true;
      }
      if (!MoveReady(c, ready, outcome)) return true;
      continue;
    }
    bool reading = ring_ready || ranges;
    bool sleeps = !(spin || reading);
    // A side waiting on a ring says it sleeps, then looks once more: what came meanwhile is moved
    // without sleeping; what comes later rings its doorbell (shared_memory_ring.h).
    for (size_t i = 0; sleeps && i < phase.size(); i++) {
      ready[4 * i + 2].fd = shared_.Sleep(phase[i], false);
      ready[4 * i + 3].fd = shared_.Sleep(phase[i], true);
    }
    for (size_t i = 0; sleeps && i < phase.size(); i++) reading = reading || RingReady(phase[i], c.single_copy[i]);
    sleeps = sleeps && !reading;
    c.slept = c.slept || sleeps;
    const int64_t left_ms = (std::min(c.deadline_ns, until_ns) - now + 999'999) / 1'000'000;
    // A range being read goes on at once (below), so the poll only looks.
    polls_.fetch_add(1, std::memory_order_relaxed);
    const int count = poll(ready.data(), ready.size(), sleeps ? int(std::clamp<int64_t>(left_ms, 0, 60'000)) : 0);
    // Before Woken, whose drain of a doorbell may set errno: a signal that interrupted
    // a sleep on a ring (a profiler's SIGPROF) must read as EINTR, not end the collective.
    const int poll_error = errno;
    for (size_t i = 0; i < phase.size(); i++) {
      if (ready[4 * i + 2].fd >= 0) shared_.Woken(phase[i], false, count > 0 && ready[4 * i + 2].revents != 0);
      if (ready[4 * i + 3].fd >= 0) shared_.Woken(phase[i], true, count > 0 && ready[4 * i + 3].revents != 0);
    }
    if (count < 0) {
      if (poll_error == EINTR) continue;
      SetSystem(outcome, -1, poll_error, "poll");
      return true;
    }
    if (ready.back().revents != 0) {
      outcome.kind = Outcome::Kind::kAborted;
      return true;
    }
    if (count == 0 && !reading) {
      if (MonotonicNs() >= c.deadline_ns) {
        outcome.kind = Outcome::Kind::kTimedOut;
        outcome.missing = Missing(c);
        return true;
      }
      if (spin) sched_yield();
      continue;
    }
    if (!MoveReady(c, ready, outcome)) return true;
  }
}

bool DataLinks::WatchRings(const Collective& c, int64_t until_ns) const {
  for (unsigned round = 1;; round++) {
    for (size_t i = 0; i < c.run.transfers.size(); i++) {
      if (RingReady(c.run.transfers[i], c.single_copy[i])) return true;
    }
    // The clock every few rounds: a round is a few loads, the clock tens of nanoseconds.
    if (round % 16 == 0 && (MonotonicNs() >= until_ns || ended_.load(std::memory_order_acquire))) return false;
    CpuRelax();
  }
}

bool DataLinks::MoveReady(Collective& c, const std::vector<pollfd>& ready, Outcome& outcome) {
  for (size_t i = 0; i < c.run.transfers.size(); i++) {
    const Transfer& t = c.run.transfers[i];
    if ((ready[4 * i].revents != 0 || shared_.CanWrite(t)) && !Move(c, i, Direction::kSend, outcome)) return false;
    const bool ring_in = shared_.Next(t).header != nullptr;
    if ((ready[4 * i + 1].revents != 0 || c.single_copy[i].range_left > 0 || ring_in) && !Move(c, i, Direction::kReceive, outcome)) return false;
  }
  return true;
}

bool DataLinks::Move(Collective& c, size_t i, Direction direction, Outcome& outcome) {
  Transfer& t = c.run.transfers[i];
  SingleCopyTransfer& s = c.single_copy[i];
  const bool send = direction == Direction::kSend;
  const auto total = [&] { return send ? t.sent_total + s.answered_total : t.received_total; };
  const size_t before = total();
  if (send) {
    if ((single_copy_.AwaitsAnswer(t) || !s.unanswered.empty()) && !single_copy_.ReadAnswers(c.run, t, s, SendFd(t), outcome)) return false;
    if (!Send(c.run, t, s, outcome)) return false;
  } else {
    if (single_copy_.Owes(t) && !single_copy_.WriteOwed(t, ReceiveFd(t), outcome)) return false;
    if (!Receive(c.run, t, s, outcome)) return false;
  }
  if (total() != before) {
    Progressed(c);
    c.run.Settle();
  }
  return true;
}

bool DataLinks::Send(ProgramRun& run, Transfer& t, SingleCopyTransfer& s, Outcome& outcome) {
  for (;;) {
    // Single copy's queue (a message's header and ranges, the echo of the receiver's challenge)
    // goes first.
    if (!WriteQueued(SendFd(t), s.outbox, s.outbox_sent, t.peer, outcome)) return false;
    // How a payload goes depends on the receiver's answer to this rank's offer: nothing goes before
    // it but the echo of the receiver's challenge (the outbox's first bytes, ReadAnswers).
    if (s.outbox_sent < s.outbox.size() || single_copy_.AwaitsAnswer(t) || t.sent == t.sends.size() || t.sent_total >= t.send_limit) return true;
    // On a link agreed to shared memory every header goes by its ring, with its payload or that
    // payload's first part, the rest in fragments after it (unless single copy carries it).
    if (shared_.WriteDue(t)) {
      if (!shared_.CanWrite(t)) return true;
      shared_.Write(run, t);
      continue;
    }
    if (single_copy_.SendsInPlace(t, t.sends[t.sent | 1].size)) {
      single_copy_.Announce(t, s);
      continue;
    }
    iovec parts[kMaxParts];
    int used = 0;
    size_t allowed = t.send_limit - t.sent_total;
    for (size_t k = t.sent, skip = t.sent_bytes; k < t.sends.size() && used < kMaxParts && allowed > 0; k++, skip = 0) {
      // A message going by single copy goes through the outbox, after these; a header on a ring
      // link by the ring.
      if (k % 2 == 0 && (single_copy_.SendsInPlace(t, t.sends[k + 1].size) || shared_.Writes(t))) break;
      const size_t take = std::min(t.sends[k].size - skip, allowed);
      parts[used++] = {t.sends[k].data + skip, take};
      allowed -= take;
    }
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = size_t(used);
    const ssize_t written = sendmsg(SendFd(t), &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (written < 0) {
      if (errno == EAGAIN || errno == EINTR) return true;
      SetSystem(outcome, t.peer, errno, "send");
      return false;
    }
    run.SendMoved(t, size_t(written));
  }
}

bool DataLinks::HeaderMatches(const ProgramRun& run, const Transfer& t, const uint8_t* header, Outcome& outcome) {
  // The message due on this link is the transfer's next receive: the collective's header with that
  // receive's label.
  const uint32_t label = run.ExpectedLabel(t);
  if (memcmp(header, run.header, kLabelOffset) == 0 && GetLabel(header) == label) return true;
  outcome.kind = Outcome::Kind::kMismatch;
  outcome.peer = t.peer;
  outcome.rail = t.rail;
  outcome.label = label;
  memcpy(outcome.header, header, kDataHeaderBytes);
  return false;
}

bool DataLinks::RingReady(const Transfer& t, const SingleCopyTransfer& s) const {
  // A header waits behind single copy's queue (Send): that wait is the socket's, polled as such.
  return (shared_.CanWrite(t) && s.outbox_sent == s.outbox.size()) || shared_.Next(t).header != nullptr;
}

bool DataLinks::ReceiveFromRing(ProgramRun& run, Transfer& t, Outcome& outcome, bool& waiting) {
  const RingMessage message = shared_.Next(t);
  if (message.header == nullptr) {
    // Nothing in the ring: the socket only says whether the peer is still there. A header goes into
    // the ring before any byte of its payload onto the socket, so bytes there now with the ring
    // still empty break the protocol.
    uint8_t byte;
    const ssize_t peeked = recv(ReceiveFd(t), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (peeked == 0 || (peeked < 0 && errno != EAGAIN && errno != EINTR)) return ReadLink(ReceiveFd(t), t.peer, &byte, 1, outcome) >= 0;
    waiting = shared_.Next(t).header == nullptr;
    if (peeked > 0 && waiting) return Broken(outcome, t.peer, "bytes on a link agreed to shared memory before their header in its ring");
    return true;
  }
  if (t.received % 2 == 1) {
    // A fragment of the payload under way: exactly its next bytes.
    const Span& payload = t.receives[t.received];
    const size_t due = SlotBytes(payload.size, t.received_bytes, kPayloadInSlots);
    const std::string mismatch = RingEntryMismatch(message, true, due, kFragment);
    if (!mismatch.empty()) return Broken(outcome, t.peer, mismatch);
    memcpy(payload.data + t.received_bytes, message.payload, due);
    run.ReceiveMoved(t, due);
  } else {
    const Span& into = t.receives[t.received];
    memcpy(into.data, message.header, kDataHeaderBytes);
    run.ReceiveMoved(t, kDataHeaderBytes);
    if (!HeaderMatches(run, t, into.data, outcome)) return false;
    t.received++;
    t.received_bytes = 0;
    // The header is this rank's own, so the payload is the one expected: the slot must say so.
    const Span& payload = t.receives[t.received];
    const uint32_t where = shared_.Place(t, payload.size, false);
    const std::string mismatch = RingEntryMismatch(message, false, payload.size, where);
    if (!mismatch.empty()) return Broken(outcome, t.peer, mismatch);
    const size_t in_slot = SlotBytes(payload.size, 0, where);
    if (in_slot > 0) memcpy(payload.data, message.payload, in_slot);
    run.ReceiveMoved(t, in_slot);
  }
  // A payload in the ring is through once its last bytes came; one on the socket comes after.
  if (t.received % 2 == 1 && t.received_bytes == t.receives[t.received].size && message.where != kPayloadOnSocket) {
    t.received++;
    t.received_bytes = 0;
  }
  shared_.Release(t);
  return true;
}

bool DataLinks::Receive(ProgramRun& run, Transfer& t, SingleCopyTransfer& s, Outcome& outcome) {
  // A link of this host starts with its sender's offer.
  if (single_copy_.OfferDue(t)) {
    if (!single_copy_.ReadOffer(t, ReceiveFd(t), outcome)) return false;
    if (single_copy_.OfferDue(t)) return true;
  }
  while (t.received < t.receives.size()) {
    const Span& into = t.receives[t.received];
    // Headers sit at even places, each followed by its payload.
    const bool header = t.received % 2 == 0;
    // A header, or a fragment of a payload in slots, comes by the link's ring.
    if (shared_.ReadDue(t)) {
      bool waiting = false;
      if (!ReceiveFromRing(run, t, outcome, waiting)) return false;
      if (waiting) return true;
      continue;
    }
    if (!header && single_copy_.ReadsInPlace(t, into.size)) {
      bool waiting = false;
      if (!single_copy_.ReadRange(run, t, s, ReceiveFd(t), outcome, waiting)) return false;
      // A piece at a time: the folds and sends move in between, and Advance comes back for the rest.
      if (waiting || s.range_left > 0) return true;
      if (t.received_bytes < into.size) continue;
    } else if (header && t.received_bytes == 0 && t.receives[t.received + 1].size <= kStagedPayloadBytes) {
      // A small message comes in one read, its header and payload through `staged_` (exactly
      // its bytes: the next message stays in the socket), so the payload reaches the caller's
      // memory only once its header is checked.
      const Span& payload = t.receives[t.received + 1];
      const ssize_t got = ReadLink(ReceiveFd(t), t.peer, staged_.data(), kDataHeaderBytes + payload.size, outcome);
      if (got <= 0) return got == 0;
      const size_t head = std::min(size_t(got), kDataHeaderBytes);
      memcpy(into.data, staged_.data(), head);
      run.ReceiveMoved(t, head);
      // The rest of a header cut short comes as any other (below).
      if (head < kDataHeaderBytes) continue;
      if (!HeaderMatches(run, t, into.data, outcome)) return false;
      t.received++;
      t.received_bytes = 0;
      const size_t body = size_t(got) - kDataHeaderBytes;
      if (body > 0) memcpy(payload.data, staged_.data() + kDataHeaderBytes, body);
      run.ReceiveMoved(t, body);
      if (body < payload.size) continue;
    } else if (into.size > 0) {
      // Anything else is read straight into its place; a header is checked before a byte of its
      // payload is read.
      const ssize_t got = ReadLink(ReceiveFd(t), t.peer, into.data + t.received_bytes, into.size - t.received_bytes, outcome);
      if (got <= 0) return got == 0;
      run.ReceiveMoved(t, size_t(got));
      if (t.received_bytes < into.size) continue;
      if (header && !HeaderMatches(run, t, into.data, outcome)) return false;
    }
    t.received++;
    t.received_bytes = 0;
  }
  return true;
}

}  // namespace rxccl
