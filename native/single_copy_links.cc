#include "single_copy_links.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <algorithm>

namespace rxccl {

SingleCopyLinks::SingleCopyLinks(int world_size, int rails, bool single_copy, SharedMemoryLinks& shared)
    : links_(size_t(world_size) * size_t(rails)), single_copy_(single_copy), shared_(shared) {}

void SingleCopyLinks::Offer(size_t l, int send_fd, int peer) {
  Agreement& link = links_[l];
  if (link.offer_due) return;
  // The receiver verifies the sender by reading its memory, for single copy or a ring alike: held
  // again where an earlier peer's answer let it go (KeepPtracerOnlyIfRead).
  if ((single_copy_ || shared_.enabled()) && ptracer_ == nullptr) ptracer_ = std::make_unique<PtracerGrant>();
  // The receiver answers before the first message (AwaitsAnswer). A fresh socket takes these few
  // bytes at once. The sender writes first: the receiver (the mesh's dialler) stopped reading the
  // link in Node before it said ready, while the sender's Node read it until ready came, and could
  // have taken a byte the receiver wrote first.
  link.answer = -1;
  link.offer_due = true;
  uint8_t offer[kOfferBytes];
  BuildOffer(single_copy_, shared_.Offered(l), link.probe, offer);
  const ssize_t wrote = send(send_fd, offer, kOfferBytes, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (wrote != ssize_t(kOfferBytes) && setup_error_.empty()) {
    setup_error_ = "cannot write its single-copy offer to rank " + std::to_string(peer) + ": " + (wrote < 0 ? strerror(errno) : "the socket took part of it");
  }
}

void SingleCopyLinks::KeepPtracerOnlyIfRead() {
  if (ptracer_ == nullptr) return;
  for (const Agreement& link : links_) {
    if (link.answer < 0 || (link.answer & kAnswerReads) != 0) return;
  }
  ptracer_.reset();
}

std::vector<int> SingleCopyLinks::Agreed(bool sending) const {
  std::vector<int> agreed;
  for (size_t l = 0; l < links_.size(); l++) {
    if (sending ? links_[l].answer > 0 && (links_[l].answer & kAnswerReads) != 0 : links_[l].reads) agreed.push_back(int(l));
  }
  return agreed;
}

void SingleCopyLinks::Announce(Transfer& t, SingleCopyTransfer& s) {
  s.outbox.clear();
  s.outbox_sent = 0;
  if (t.sent % 2 == 0) {
    const Span& header = t.sends[t.sent];
    s.outbox.insert(s.outbox.end(), header.data, header.data + header.size);
    t.sent_total += header.size;
    t.sent++;
    t.sent_bytes = 0;
  }
  const Span& payload = t.sends[t.sent];
  const size_t take = std::min(payload.size - t.sent_bytes, t.send_limit - t.sent_total);
  if (take == 0) return;
  uint8_t record[kRangeBytes];
  EncodeRange(payload.data + t.sent_bytes, take, record);
  s.outbox.insert(s.outbox.end(), record, record + kRangeBytes);
  // Its bytes count as sent (their memory may change) only once the receiver answers (ReadAnswers).
  s.unanswered.emplace_back(t.sent / 2, take);
  t.sent_bytes += take;
  t.sent_total += take;
  if (t.sent_bytes == payload.size) {
    t.sent++;
    t.sent_bytes = 0;
  }
}

bool SingleCopyLinks::ReadAnswers(ProgramRun& run, Transfer& t, SingleCopyTransfer& s, int send_fd, Outcome& outcome) {
  Agreement& link = links_[t.link];
  uint8_t bytes_in[256];
  for (;;) {
    const ssize_t got = ReadLink(send_fd, t.peer, bytes_in, sizeof bytes_in, outcome);
    if (got <= 0) return got == 0;
    for (ssize_t i = 0; i < got; i++) {
      const uint8_t byte = bytes_in[i];
      if (link.answer < 0 && link.probe_got < kChallengeBytes) {
        // The receiver's challenge, complemented (ProbeOf), into the memory this rank's offer
        // named. Once whole, the challenge is echoed, saying so (the receiver reads the probe
        // back from this process, then answers): the outbox is empty until the answer.
        link.probe[link.probe_got++] = ProbeOf(byte);
        if (link.probe_got == kChallengeBytes) {
          for (const uint8_t held : link.probe) s.outbox.push_back(ProbeOf(held));
        }
        continue;
      }
      if (link.answer < 0) {
        // A bit set for what was not offered is the receiver's error too.
        const uint8_t offered = uint8_t((single_copy_ ? kAnswerReads : 0) | (shared_.Offered(t.link) >= 0 ? kAnswerMapped : 0));
        if ((byte & ~offered) != 0) {
          return Broken(outcome, t.peer, "single-copy answer " + std::to_string(byte) + " to this rank's offer (expected bits of " + std::to_string(offered) + ")");
        }
        link.answer = byte;
        shared_.Answered(t.link, (byte & kAnswerMapped) != 0, (byte & kAnswerReads) != 0);
        KeepPtracerOnlyIfRead();
        continue;
      }
      if (byte != kRangeRead || s.unanswered.empty()) return Broken(outcome, t.peer, "single-copy answer " + std::to_string(byte) + " where no range was due");
      const auto [message, bytes] = s.unanswered.front();
      s.unanswered.pop_front();
      run.SendTaken(t, message, bytes);
      s.answered_total += bytes;
    }
  }
}

bool SingleCopyLinks::ReadOffer(const Transfer& t, int receive_fd, Outcome& outcome) {
  Agreement& link = links_[t.link];
  // The offer; then, once this rank challenged it, the sender's echo of the challenge.
  const size_t due = link.offer_got < kOfferBytes ? kOfferBytes : kOfferBytes + kChallengeBytes;
  const ssize_t got = ReadLink(receive_fd, t.peer, link.offer + link.offer_got, due - link.offer_got, outcome);
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
    return WriteOwed(t, receive_fd, outcome);
  }
  if (memcmp(link.offer + kOfferBytes, link.challenge, kChallengeBytes) != 0) return Broken(outcome, t.peer, "single-copy echo of another challenge than this rank's");
  link.offer_due = false;
  const int ring = OfferedRing(link.offer);
  const bool verified = link.sender.Verify(link.offer, link.challenge, receive_fd, (single_copy_ && OffersMemory(link.offer)) || (shared_.enabled() && ring >= 0));
  link.reads = verified && single_copy_ && OffersMemory(link.offer);
  bool mapped = false;
  if (ring >= 0 && !shared_.enabled()) {
    shared_.Refuse(t.link, "shared memory is off here");
  } else if (ring >= 0 && !verified) {
    shared_.Refuse(t.link, "cannot verify the process offering it (another host, pid namespace or user, or a filter refusing pidfd_open or process_vm_readv)");
  } else if (ring >= 0) {
    mapped = shared_.Join(t.link, link.sender.pidfd(), uint32_t(ring), link.reads);
  }
  link.owed.push_back(uint8_t((link.reads ? kAnswerReads : 0) | (mapped ? kAnswerMapped : 0)));
  return WriteOwed(t, receive_fd, outcome);
}

bool SingleCopyLinks::ReadRange(ProgramRun& run, Transfer& t, SingleCopyTransfer& s, int receive_fd, Outcome& outcome, bool& waiting) {
  const Span& into = t.receives[t.received];
  Agreement& link = links_[t.link];
  if (s.range_left == 0) {
    const ssize_t got = ReadLink(receive_fd, t.peer, s.range + s.range_got, kRangeBytes - s.range_got, outcome);
    if (got < 0) return false;
    s.range_got += size_t(got);
    waiting = s.range_got < kRangeBytes;
    if (waiting) return true;
    s.range_got = 0;
    uint64_t address = 0, size = 0;
    DecodeRange(s.range, address, size);
    const size_t left = into.size - t.received_bytes;
    if (size == 0 || size > left) {
      return Broken(outcome, t.peer, "single-copy range of " + std::to_string(size) + " bytes where " + std::to_string(left) + " bytes of the payload are left");
    }
    s.range_address = address;
    s.range_left = size_t(size);
  }
  const size_t piece = std::min(s.range_left, kStreamBytes);
  const ssize_t got = link.sender.Read(s.range_address, into.data + t.received_bytes, piece);
  if (got <= 0) {
    if (got < 0 && errno == EINTR) return true;
    SetSystem(outcome, t.peer, got < 0 ? errno : EFAULT, "process_vm_readv");
    return false;
  }
  s.range_address += uint64_t(got);
  s.range_left -= size_t(got);
  run.ReceiveMoved(t, size_t(got));
  if (s.range_left > 0) return true;
  link.owed.push_back(kRangeRead);
  return WriteOwed(t, receive_fd, outcome);
}

bool SingleCopyLinks::WriteOwed(const Transfer& t, int receive_fd, Outcome& outcome) {
  Agreement& link = links_[t.link];
  if (!WriteQueued(receive_fd, link.owed, link.owed_sent, t.peer, outcome)) return false;
  if (link.owed_sent == link.owed.size()) {
    link.owed.clear();
    link.owed_sent = 0;
  }
  return true;
}

}  // namespace rxccl
