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

// Buffers per sendmsg(); a transfer has at most a handful.
constexpr int kMaxParts = 16;

// A fold runs at least this much at a time (unless it is the end): a kernel call per few
// kilobytes would cost more than it overlaps.
constexpr size_t kStreamBytes = size_t(1) << 20;

// A payload being produced (a relay's, a reduced segment's) goes on at least this much at a time
// (unless it is the end).
constexpr size_t kForwardBytes = size_t(256) << 10;

void SetSystem(Outcome& outcome, int peer, int error, const char* what) {
  // A peer that reset its connection, or whose process is no more (single copy), has gone (it died
  // or aborted): that is how it is named.
  const bool gone = error == ECONNRESET || error == EPIPE || error == ESRCH;
  outcome.kind = gone ? Outcome::Kind::kPeerClosed : Outcome::Kind::kSystem;
  outcome.peer = peer;
  outcome.error = error;
  outcome.what = std::string(what) + ": " + strerror(error);
}

// Writes `bytes` from `written` on to `fd`, as far as its socket takes them (single copy's queues:
// a message's header and ranges, a receiver's answers). False when the link failed (`outcome`).
bool WriteQueued(int fd, const std::vector<uint8_t>& bytes, size_t& written, int peer, Outcome& outcome) {
  while (written < bytes.size()) {
    const ssize_t wrote = send(fd, bytes.data() + written, bytes.size() - written, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (wrote < 0) {
      if (errno == EAGAIN || errno == EINTR) return true;
      SetSystem(outcome, peer, errno, "send");
      return false;
    }
    written += size_t(wrote);
  }
  return true;
}

void PutLabel(uint8_t* header, uint32_t label) {
  for (size_t i = 0; i < 4; i++) header[kLabelOffset + i] = uint8_t(label >> (8 * i));
}

uint32_t GetLabel(const uint8_t* header) {
  uint32_t label = 0;
  for (size_t i = 0; i < 4; i++) label |= uint32_t(header[kLabelOffset + i]) << (8 * i);
  return label;
}

// A peer broke the data plane's protocol (single copy): the collective fails naming it.
bool Broken(Outcome& outcome, int peer, std::string what) {
  outcome.kind = Outcome::Kind::kSystem;
  outcome.peer = peer;
  outcome.error = EPROTO;
  outcome.what = std::move(what);
  return false;
}

}  // namespace

int64_t MonotonicNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

DataLinks::DataLinks(int rank, int world_size, int rails, std::vector<int> send_fds, std::vector<int> recv_fds, int wake_fd, int64_t spin_ns,
                     const std::vector<int>& same_host, bool single_copy)
    : rank_(rank), world_size_(world_size), rails_(rails), send_fds_(std::move(send_fds)), recv_fds_(std::move(recv_fds)), wake_fd_(wake_fd),
      headers_(size_t(world_size) * size_t(rails) * kDataHeaderBytes), spin_(spin_ns), memory_(size_t(world_size) * size_t(rails)),
      single_copy_(single_copy) {
  // Each message leaves in one sendmsg(); Nagle would hold a small one back for an ACK.
  const int on = 1;
  for (int fd : send_fds_) {
    if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  }
  // A link to a peer of this host starts with this rank's offer, naming where it will hold the
  // receiver's challenge (ReadAnswers); the receiver answers before the first message (Send waits
  // for that). A fresh socket takes these few bytes at once. The sender writes first: the receiver
  // (the mesh's dialler) stopped reading the link in Node before it said ready, while the sender's
  // Node read it until ready came, and could have taken a byte the receiver wrote first.
  for (int peer : same_host) {
    if (peer == rank || peer < 0 || peer >= world_size) continue;
    if (single_copy && ptracer_ == nullptr) ptracer_ = std::make_unique<PtracerGrant>();
    for (int rail = 0; rail < rails; rail++) {
      const size_t l = size_t(peer * rails + rail);
      LinkMemory& link = memory_[l];
      if (link.offer_due) continue;
      link.answer = -1;
      link.offer_due = true;
      uint8_t offer[kOfferBytes];
      BuildOffer(single_copy, link.probe, offer);
      const ssize_t wrote = send(send_fds_[l], offer, kOfferBytes, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (wrote != ssize_t(kOfferBytes) && setup_error_.empty()) {
        setup_error_ = "cannot write its single-copy offer to rank " + std::to_string(peer) + ": " + (wrote < 0 ? strerror(errno) : "the socket took part of it");
      }
    }
  }
}

void DataLinks::KeepPtracerOnlyIfRead() {
  if (ptracer_ == nullptr) return;
  for (const LinkMemory& link : memory_) {
    if (link.answer < 0 || link.answer == kAnswerReads) return;
  }
  ptracer_.reset();
}

std::vector<int> DataLinks::SingleCopyLinks(bool sending) const {
  std::vector<int> links;
  for (size_t l = 0; l < memory_.size(); l++) {
    if (sending ? memory_[l].answer == kAnswerReads : memory_[l].sender.verified()) links.push_back(int(l));
  }
  return links;
}

void DataLinks::Progressed(Collective& c) {
  const int64_t now = MonotonicNs();
  spin_.Waited(now - c.progressed_ns, c.slept);
  c.progressed_ns = now;
  c.slept = false;
}

uint8_t* DataLinks::Scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

std::unique_ptr<Collective> DataLinks::Prepare(const Program& program, const uint8_t* input, uint8_t* output, const uint8_t* header,
                                               int64_t timeout_ms) {
  auto collective = std::make_unique<Collective>();
  Collective& c = *collective;
  memcpy(c.header, header, kDataHeaderBytes);
  c.type = program.type;
  c.width = program.width;
  c.progressed_ns = MonotonicNs();
  c.deadline_ns = c.progressed_ns + timeout_ms * 1'000'000;
  uint8_t* const memories[3] = {const_cast<uint8_t*>(input), output, Scratch(program.scratch_bytes)};
  auto at = [&](const SpanRef& ref) { return Span{memories[ref.memory] + ref.offset, ref.size}; };
  // One transfer per link the program uses, in its order (Program::links). Each message is the
  // header, then its payload.
  c.transfers.reserve(program.links.size());
  for (const Program::Link& link : program.links) {
    Transfer& t = c.transfers.emplace_back();
    t.peer = link.peer;
    t.rail = link.rail;
  }
  c.send_headers.resize(program.sends.size() * kDataHeaderBytes);
  for (size_t s = 0; s < program.sends.size(); s++) {
    const ProgramSend& send = program.sends[s];
    Transfer& t = c.transfers[send.link];
    uint8_t* own = c.send_headers.data() + s * kDataHeaderBytes;
    memcpy(own, c.header, kDataHeaderBytes);
    PutLabel(own, send.label);
    t.sends.insert(t.sends.end(), {Span{own, kDataHeaderBytes}, at(send.span)});
    t.send_after.push_back(send.after);
    t.send_ids.push_back(s);
    c.bytes += send.span.size;
  }
  c.sent.assign(program.sends.size(), 0);
  for (size_t r = 0; r < program.receives.size(); r++) {
    const ProgramReceive& receive = program.receives[r];
    Transfer& t = c.transfers[receive.link];
    const size_t header = size_t(receive.peer * rails_ + receive.rail) * kDataHeaderBytes;
    t.receives.insert(t.receives.end(), {Span{headers_.data() + header, kDataHeaderBytes}, at(receive.span)});
    t.receive_ids.push_back(r);
    c.bytes += receive.span.size;
  }
  c.received.assign(program.receives.size(), 0);
  c.receive_labels.reserve(program.receives.size());
  for (const ProgramReceive& receive : program.receives) c.receive_labels.push_back(receive.label);
  for (const ProgramFold& fold : program.folds) {
    RunningFold running;
    running.target = at(fold.target).data;
    for (const SpanRef& source : fold.sources) running.sources.push_back(at(source).data);
    running.size = fold.target.size;
    running.after = fold.after;
    running.op = fold.op;
    running.divisor = fold.divisor;
    c.folds.push_back(std::move(running));
  }
  return collective;
}

void DataLinks::Settle(Collective& c) {
  auto progress = [&c](const Gate& gate) -> size_t {
    switch (gate.kind) {
      case Gate::Kind::kNone: return SIZE_MAX;
      case Gate::Kind::kReceive: return c.received[gate.index];
      case Gate::Kind::kFold: return c.folds[gate.index].done;
      case Gate::Kind::kSend: return c.sent[gate.index];
    }
    return 0;
  };
  // Folds, as far as every producer of theirs has got: a MiB or more at a time (a kernel call
  // per few kilobytes would cost more than it overlaps), or whatever is left at the end. A fold may
  // wait for another, so this goes round until nothing moves.
  for (bool moved = true; moved;) {
    moved = false;
    for (RunningFold& fold : c.folds) {
      if (fold.done == fold.size) continue;
      size_t ready = fold.size;
      for (const Gate& gate : fold.after) ready = std::min(ready, progress(gate));
      ready -= ready % c.width;
      if (ready <= fold.done || (ready < fold.size && ready - fold.done < kStreamBytes)) continue;
      const size_t offset = fold.done;
      if (fold.sources.size() == 1 && fold.op != Op::kAvg) {
        if (fold.sources[0] != fold.target) memmove(fold.target + offset, fold.sources[0] + offset, ready - offset);
      } else {
        std::vector<const uint8_t*> bases(fold.sources);
        for (const uint8_t*& base : bases) base += offset;
        Job kernel;
        kernel.body = ReduceSlicesBody(c.type, fold.op);
        kernel.slice_bases = bases.data();
        kernel.slices = bases.size();
        kernel.divisor = fold.divisor;
        kernel.target = fold.target + offset;
        kernel.count = (ready - offset) / c.width;
        kernel.bytes_read = (ready - offset) * bases.size();
        RunJob(kernel);
      }
      fold.done = ready;
      moved = true;
    }
  }
  // Sends: every message whose payload is there may go; one still being produced goes as far as
  // its producer, moving on a quarter MiB or more at a time (or to its end), and holds back the
  // messages behind it on its link.
  for (Transfer& t : c.transfers) {
    size_t limit = 0;
    bool held = false;
    for (size_t m = 0; m < t.send_after.size(); m++) {
      const size_t payload = t.sends[2 * m + 1].size;
      limit += kDataHeaderBytes;
      const size_t produced = std::min(payload, progress(t.send_after[m]));
      if (produced < payload) {
        const size_t header_end = limit;
        limit += produced;
        if (t.send_limit < header_end) t.send_limit = header_end;
        if (limit >= t.send_limit + kForwardBytes) t.send_limit = limit;
        held = true;
        break;
      }
      limit += payload;
    }
    if (!held) t.send_limit = SIZE_MAX;
  }
}

std::vector<int> DataLinks::Missing(const Collective& c) {
  std::vector<int> missing;
  for (const Transfer& t : c.transfers) {
    if (t.received < t.receives.size()) missing.push_back(t.peer);
  }
  if (missing.empty()) {
    for (const Transfer& t : c.transfers) {
      // Single copy: a receiver that has not answered every range has not taken it all.
      if (t.sent < t.sends.size() || !t.unanswered.empty()) missing.push_back(t.peer);
    }
  }
  // A peer late on several rails is named once.
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  return missing;
}

std::vector<int> DataLinks::Silent(const Collective& c, std::vector<size_t>& progress) {
  std::vector<int> silent = Missing(c);
  progress.resize(c.transfers.size(), 0);
  for (size_t i = 0; i < c.transfers.size(); i++) {
    const Transfer& t = c.transfers[i];
    const size_t moved = t.received_total + t.sent_total + t.answered_total;
    if (moved != progress[i]) silent.erase(std::remove(silent.begin(), silent.end(), t.peer), silent.end());
    progress[i] = moved;
  }
  return silent;
}

bool DataLinks::Advance(Collective& c, Outcome& outcome, int64_t until_ns) {
  std::vector<Transfer>& phase = c.transfers;
  if (ended_.load(std::memory_order_acquire)) {
    outcome.kind = Outcome::Kind::kAborted;
    return true;
  }
  Settle(c);
  // A socket can nearly always take a message: what may go is tried before the first poll.
  for (Transfer& t : phase) {
    if (t.sent < t.sends.size() && t.sent_total < t.send_limit && !Move(c, t, Direction::kSend, outcome)) return true;
  }
  // Per transfer its send and its receive socket (two sockets: a data link carries one direction;
  // single copy's answers come back the other way), and the wake descriptor last.
  std::vector<pollfd> ready(phase.size() * 2 + 1);
  for (;;) {
    bool pending = false, reading = false;
    for (size_t i = 0; i < phase.size(); i++) {
      const Transfer& t = phase[i];
      const LinkMemory& link = memory_[Link(t)];
      // A finished side is left out: poll() would keep reporting a peer that hung up after it.
      const bool unsent = t.sent < t.sends.size(), receiving = t.received < t.receives.size();
      const bool queued = t.outbox_sent < t.outbox.size(), owing = !link.owed.empty();
      // The receiver's answer to this rank's offer (nothing goes before it), or to its ranges.
      const bool answers = (unsent && link.answer < 0) || !t.unanswered.empty();
      // A send held back by its limit waits for receives, not for the socket.
      const bool sending = queued || (unsent && link.answer >= 0 && t.sent_total < t.send_limit);
      ready[2 * i] = {sending || answers ? SendFd(t) : -1, short((sending ? POLLOUT : 0) | (answers ? POLLIN : 0)), 0};
      ready[2 * i + 1] = {receiving || owing ? ReceiveFd(t) : -1, short((receiving ? POLLIN : 0) | (owing ? POLLOUT : 0)), 0};
      pending = pending || unsent || queued || answers || receiving || owing;
      reading = reading || t.range_left > 0;
    }
    // Folds run as their producers arrive (Settle), so with every message through they are done.
    if (!pending) return true;
    ready.back() = {wake_fd_, POLLIN, 0};
    const int64_t now = MonotonicNs();
    if (now >= until_ns) return false;
    const bool spin = now - c.progressed_ns < spin_.spin_ns();
    c.slept = c.slept || !(spin || reading);
    const int64_t left_ms = (std::min(c.deadline_ns, until_ns) - now + 999'999) / 1'000'000;
    // A range being read goes on at once (below), so the poll only looks.
    const int count = poll(ready.data(), ready.size(), spin || reading ? 0 : int(std::clamp<int64_t>(left_ms, 0, 60'000)));
    if (count < 0) {
      if (errno == EINTR) continue;
      SetSystem(outcome, -1, errno, "poll");
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
    for (size_t i = 0; i < phase.size(); i++) {
      Transfer& t = phase[i];
      if (ready[2 * i].revents != 0 && !Move(c, t, Direction::kSend, outcome)) return true;
      if ((ready[2 * i + 1].revents != 0 || t.range_left > 0) && !Move(c, t, Direction::kReceive, outcome)) return true;
    }
  }
}

bool DataLinks::Move(Collective& c, Transfer& t, Direction direction, Outcome& outcome) {
  const bool send = direction == Direction::kSend;
  const auto total = [&] { return send ? t.sent_total + t.answered_total : t.received_total; };
  const size_t before = total();
  const LinkMemory& link = memory_[Link(t)];
  if (send) {
    if ((link.answer < 0 || !t.unanswered.empty()) && !ReadAnswers(c, t, outcome)) return false;
    if (!Send(c, t, outcome)) return false;
  } else {
    if (!link.owed.empty() && !WriteOwed(t, outcome)) return false;
    if (!Receive(c, t, outcome)) return false;
  }
  if (total() != before) {
    Progressed(c);
    Settle(c);
  }
  return true;
}

bool DataLinks::Send(Collective& c, Transfer& t, Outcome& outcome) {
  for (;;) {
    if (!WriteQueued(SendFd(t), t.outbox, t.outbox_sent, t.peer, outcome)) return false;
    // How a payload goes depends on the receiver's answer to this rank's offer: nothing goes before
    // it but the echo of the receiver's challenge (the outbox's first bytes, ReadAnswers).
    if (t.outbox_sent < t.outbox.size() || memory_[Link(t)].answer < 0 || t.sent == t.sends.size() || t.sent_total >= t.send_limit) return true;
    if (SendsInPlace(t, t.sends[t.sent | 1].size)) {
      Announce(t);
      continue;
    }
    iovec parts[kMaxParts];
    int used = 0;
    size_t allowed = t.send_limit - t.sent_total;
    for (size_t k = t.sent, skip = t.sent_bytes; k < t.sends.size() && used < kMaxParts && allowed > 0; k++, skip = 0) {
      // A message going by single copy goes through the outbox, after these.
      if (k % 2 == 0 && SendsInPlace(t, t.sends[k + 1].size)) break;
      const size_t take = std::min(t.sends[k].size - skip, allowed);
      parts[used++] = {t.sends[k].data + skip, take};
      allowed -= take;
    }
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = size_t(used);
    ssize_t written = sendmsg(SendFd(t), &message, MSG_NOSIGNAL | MSG_DONTWAIT);
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
      if (t.sent % 2 == 1) c.sent[t.send_ids[t.sent / 2]] = t.sends[t.sent].size;
      t.sent++;
      t.sent_bytes = 0;
    }
    if (t.sent < t.sends.size() && t.sent % 2 == 1) c.sent[t.send_ids[t.sent / 2]] = t.sent_bytes;
  }
}

void DataLinks::Announce(Transfer& t) {
  // The outbox is empty here (Send wrote it): it is refilled.
  t.outbox.clear();
  t.outbox_sent = 0;
  if (t.sent % 2 == 0) {
    const Span& header = t.sends[t.sent];
    t.outbox.insert(t.outbox.end(), header.data, header.data + header.size);
    t.sent_total += header.size;
    t.sent++;
    t.sent_bytes = 0;
  }
  const Span& payload = t.sends[t.sent];
  const size_t take = std::min(payload.size - t.sent_bytes, t.send_limit - t.sent_total);
  if (take == 0) return;
  uint8_t record[kRangeBytes];
  EncodeRange(payload.data + t.sent_bytes, take, record);
  t.outbox.insert(t.outbox.end(), record, record + kRangeBytes);
  // Its bytes count as sent (their memory may change) only once the receiver answers (ReadAnswers).
  t.unanswered.emplace_back(t.sent / 2, take);
  t.sent_bytes += take;
  t.sent_total += take;
  if (t.sent_bytes == payload.size) {
    t.sent++;
    t.sent_bytes = 0;
  }
}

bool DataLinks::ReadAnswers(Collective& c, Transfer& t, Outcome& outcome) {
  LinkMemory& link = memory_[Link(t)];
  uint8_t bytes_in[256];
  for (;;) {
    const ssize_t got = recv(SendFd(t), bytes_in, sizeof bytes_in, MSG_DONTWAIT);
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
    for (ssize_t i = 0; i < got; i++) {
      const uint8_t byte = bytes_in[i];
      if (link.answer < 0 && link.probe_got < kChallengeBytes) {
        // The receiver's challenge, complemented (ProbeOf), into the memory this rank's offer
        // named. Once whole, the challenge is echoed, saying so (the receiver reads the probe
        // back from this process, then answers): the outbox is empty until the answer.
        link.probe[link.probe_got++] = ProbeOf(byte);
        if (link.probe_got == kChallengeBytes) {
          for (const uint8_t held : link.probe) t.outbox.push_back(ProbeOf(held));
        }
        continue;
      }
      if (link.answer < 0) {
        if (byte != kAnswerInline && byte != kAnswerReads) return Broken(outcome, t.peer, "single-copy answer " + std::to_string(byte) + " to this rank's offer (expected 0 or 1)");
        link.answer = byte;
        KeepPtracerOnlyIfRead();
        continue;
      }
      if (byte != kRangeRead || t.unanswered.empty()) return Broken(outcome, t.peer, "single-copy answer " + std::to_string(byte) + " where no range was due");
      const auto [message, bytes] = t.unanswered.front();
      t.unanswered.pop_front();
      c.sent[t.send_ids[message]] += bytes;
      t.answered_total += bytes;
    }
  }
}

ssize_t DataLinks::ReadLink(const Transfer& t, uint8_t* into, size_t size, Outcome& outcome) {
  const ssize_t got = recv(ReceiveFd(t), into, size, MSG_DONTWAIT);
  if (got > 0) return got;
  if (got == 0) {
    outcome.kind = Outcome::Kind::kPeerClosed;
    outcome.peer = t.peer;
    return -1;
  }
  if (errno == EAGAIN || errno == EINTR) return 0;
  SetSystem(outcome, t.peer, errno, "receive");
  return -1;
}

bool DataLinks::HeaderMatches(const Collective& c, const Transfer& t, const uint8_t* header, Outcome& outcome) {
  // The message due on this link is the transfer's next receive: the collective's header with that
  // receive's label.
  const uint32_t label = c.receive_labels[t.receive_ids[t.received / 2]];
  if (memcmp(header, c.header, kLabelOffset) == 0 && GetLabel(header) == label) return true;
  outcome.kind = Outcome::Kind::kMismatch;
  outcome.peer = t.peer;
  outcome.rail = t.rail;
  outcome.label = label;
  memcpy(outcome.header, header, kDataHeaderBytes);
  return false;
}

void DataLinks::Took(Collective& c, Transfer& t, size_t bytes) {
  t.received_bytes += bytes;
  t.received_total += bytes;
  if (t.received % 2 == 1) c.received[t.receive_ids[t.received / 2]] = t.received_bytes;
}

bool DataLinks::Receive(Collective& c, Transfer& t, Outcome& outcome) {
  LinkMemory& link = memory_[Link(t)];
  // A link of this host starts with its sender's offer.
  if (link.offer_due) {
    if (!ReadOffer(t, outcome)) return false;
    if (link.offer_due) return true;
  }
  while (t.received < t.receives.size()) {
    const Span& into = t.receives[t.received];
    // Headers sit at even places, each followed by its payload.
    const bool header = t.received % 2 == 0;
    if (!header && ReadsInPlace(t, into.size)) {
      bool waiting = false;
      if (!ReadRange(c, t, outcome, waiting)) return false;
      // A piece at a time: the folds and sends move in between, and Advance comes back for the rest.
      if (waiting || t.range_left > 0) return true;
      if (t.received_bytes < into.size) continue;
    } else if (header && t.received_bytes == 0 && t.receives[t.received + 1].size <= kStagedPayloadBytes) {
      // A small message comes in one read, its header and payload through `staged_` (exactly
      // its bytes: the next message stays in the socket), so the payload reaches the caller's
      // memory only once its header is checked.
      const Span& payload = t.receives[t.received + 1];
      const ssize_t got = ReadLink(t, staged_.data(), kDataHeaderBytes + payload.size, outcome);
      if (got <= 0) return got == 0;
      const size_t head = std::min(size_t(got), kDataHeaderBytes);
      memcpy(into.data, staged_.data(), head);
      Took(c, t, head);
      // The rest of a header cut short comes as any other (below).
      if (head < kDataHeaderBytes) continue;
      if (!HeaderMatches(c, t, into.data, outcome)) return false;
      t.received++;
      t.received_bytes = 0;
      const size_t body = size_t(got) - kDataHeaderBytes;
      if (body > 0) memcpy(payload.data, staged_.data() + kDataHeaderBytes, body);
      Took(c, t, body);
      if (body < payload.size) continue;
    } else if (into.size > 0) {
      // Anything else is read straight into its place; a header is checked before a byte of its
      // payload is read.
      const ssize_t got = ReadLink(t, into.data + t.received_bytes, into.size - t.received_bytes, outcome);
      if (got <= 0) return got == 0;
      Took(c, t, size_t(got));
      if (t.received_bytes < into.size) continue;
      if (header && !HeaderMatches(c, t, into.data, outcome)) return false;
    }
    t.received++;
    t.received_bytes = 0;
  }
  return true;
}

bool DataLinks::ReadOffer(Transfer& t, Outcome& outcome) {
  LinkMemory& link = memory_[Link(t)];
  // The offer; then, once this rank challenged it, the sender's echo of the challenge.
  const size_t due = link.offer_got < kOfferBytes ? kOfferBytes : kOfferBytes + kChallengeBytes;
  const ssize_t got = ReadLink(t, link.offer + link.offer_got, due - link.offer_got, outcome);
  if (got < 0) return false;
  link.offer_got += size_t(got);
  if (link.offer_got < due) return true;
  if (due == kOfferBytes) {
    std::string error;
    if (!OfferValid(link.offer, error)) return Broken(outcome, t.peer, error);
    // A fresh challenge, the first bytes of the link's other direction: the sender's Node stopped
    // reading the link before it offered.
    NewChallenge(link.challenge);
    link.owed.insert(link.owed.end(), link.challenge, link.challenge + kChallengeBytes);
    return WriteOwed(t, outcome);
  }
  if (memcmp(link.offer + kOfferBytes, link.challenge, kChallengeBytes) != 0) return Broken(outcome, t.peer, "single-copy echo of another challenge than this rank's");
  link.offer_due = false;
  const bool reads = link.sender.Verify(link.offer, link.challenge, ReceiveFd(t), single_copy_);
  link.owed.push_back(reads ? kAnswerReads : kAnswerInline);
  return WriteOwed(t, outcome);
}

bool DataLinks::ReadRange(Collective& c, Transfer& t, Outcome& outcome, bool& waiting) {
  const Span& into = t.receives[t.received];
  LinkMemory& link = memory_[Link(t)];
  if (t.range_left == 0) {
    const ssize_t got = ReadLink(t, t.range + t.range_got, kRangeBytes - t.range_got, outcome);
    if (got < 0) return false;
    t.range_got += size_t(got);
    waiting = t.range_got < kRangeBytes;
    if (waiting) return true;
    t.range_got = 0;
    uint64_t address = 0, size = 0;
    DecodeRange(t.range, address, size);
    const size_t left = into.size - t.received_bytes;
    if (size == 0 || size > left) {
      return Broken(outcome, t.peer, "single-copy range of " + std::to_string(size) + " bytes where " + std::to_string(left) + " bytes of the payload are left");
    }
    t.range_address = address;
    t.range_left = size_t(size);
  }
  const size_t piece = std::min(t.range_left, kStreamBytes);
  const ssize_t got = link.sender.Read(t.range_address, into.data + t.received_bytes, piece);
  if (got <= 0) {
    if (got < 0 && errno == EINTR) return true;
    SetSystem(outcome, t.peer, got < 0 ? errno : EFAULT, "process_vm_readv");
    return false;
  }
  t.range_address += uint64_t(got);
  t.range_left -= size_t(got);
  Took(c, t, size_t(got));
  if (t.range_left > 0) return true;
  link.owed.push_back(kRangeRead);
  return WriteOwed(t, outcome);
}

bool DataLinks::WriteOwed(const Transfer& t, Outcome& outcome) {
  LinkMemory& link = memory_[Link(t)];
  if (!WriteQueued(ReceiveFd(t), link.owed, link.owed_sent, t.peer, outcome)) return false;
  if (link.owed_sent == link.owed.size()) {
    link.owed.clear();
    link.owed_sent = 0;
  }
  return true;
}

}  // namespace rxccl
