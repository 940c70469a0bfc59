// Shared memory (shared_memory_ring.h) on a session's data links: which links of this host agreed
// to a ring, and the part of a collective's messages that goes by it. On such a link every message's
// header goes through the ring, in order, and a payload of up to kRingPayloadBytes with it in its
// slot; a larger payload's first kRingPayloadBytes go with it and the rest in the slots after it, a
// fragment each, as the payload is produced, unless single copy carries payloads of its size on the
// link: then they follow the header on the socket as single copy's ranges. So the ring is the one
// place a receiver finds headers, and checks them byte for byte before a payload byte is read, as
// on any link (data_links.h).
//
// The agreement rides on single copy's (single_copy_links.h): a sender that creates a ring for a
// link names the segment's descriptor in its offer; the receiver, once it verified that the offer
// comes from the process at the other end of the authenticated link, takes the segment from it
// (pidfd_getfd on the verified pidfd), maps it, and says so in its answer. A receiver that cannot
// (another pid namespace, a seccomp filter, EPERM, shared memory off) answers without it and the
// link keeps TCP; its reason is kept for diagnostics (Refusals).
//
// What it knows: the rings of the links, whether each agreed and why not, and a transfer's messages
// as far as they go by the ring. What it does not: sockets and poll (data_links.h), headers' checks,
// how the sender is verified (single_copy.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "program_executor.h"
#include "shared_memory_ring.h"

namespace rxccl {

class SharedMemoryLinks {
 public:
  // No ring yet: `Offer` makes one per link to a peer of this host as the link is opened.
  SharedMemoryLinks(int world_size, int rails, bool enabled);

  // A ring for `link` (send side), a link to a peer of this host, where `enabled`: offered with the
  // link's single-copy offer. One the system refuses is not offered (its reason kept).
  void Offer(size_t link);

  // Whether this rank maps the rings its peers offer.
  bool enabled() const { return enabled_; }
  // The sender's descriptor of the segment link `link` offers, -1 for none.
  int Offered(size_t link) const { return sending_[link] ? sending_[link]->segment_fd() : -1; }
  // Sending: the receiver answered this rank's offer on `link`, `mapped` or not (a ring it did not
  // map is dropped), and whether it reads large payloads in place (single copy).
  void Answered(size_t link, bool mapped, bool reads_in_place);
  // Receiving: takes the segment `segment_fd` the verified sender (`pidfd`) offered on `link` and
  // maps it; false where it cannot, its reason kept. `reads_in_place`: whether this rank reads the
  // link's large payloads by single copy.
  bool Join(size_t link, int pidfd, uint32_t segment_fd, bool reads_in_place);
  // Receiving: the sender offered a ring on `link` this rank will not map, and why.
  void Refuse(size_t link, std::string why);

  // The links agreed to a ring: sending, and receiving. For tests and diagnostics, between collectives.
  std::vector<int> Agreed(bool sending) const;
  // Per link, why it did not agree to a ring ("" where it did or none was offered).
  const std::vector<std::string>& Refusals() const { return refusals_; }

  // Sending. Whether the transfer's link agreed, so its next header goes by the ring.
  bool Writes(const Transfer& t) const { return writes_[t.link] != 0; }
  // Whether the transfer's next entry goes by the ring: a header, or a fragment of a payload
  // kPayloadInSlots.
  bool WriteDue(const Transfer& t) const;
  // Whether it may go now: a slot is free, and what goes in it (the header, the payload's part in
  // its slot) is produced.
  bool CanWrite(const Transfer& t) const;
  // Writes it (CanWrite): the header and the payload's bytes that went along count as sent.
  void Write(ProgramRun& run, Transfer& t);

  // Receiving. Whether the transfer's link agreed, so its next header comes by the ring.
  bool Reads(const Transfer& t) const { return reading_[t.link] != nullptr; }
  // Whether the transfer's next entry comes by the ring: a header, or a fragment of the payload
  // being received.
  bool ReadDue(const Transfer& t) const;
  // The transfer's next entry if one is due and it has come (else its header is null).
  RingMessage Next(const Transfer& t) const;
  // Frees its slot (read: its header, and its payload's part in the slot; or its fragment).
  void Release(const Transfer& t) { reading_[t.link]->Release(); }
  // Where a payload of `bytes` goes on the transfer's link, sending or receiving (PayloadPlace).
  uint32_t Place(const Transfer& t, size_t bytes, bool sending) const;

  // Waiting: where the transfer waits on the ring (reader: for a header; writer: for a slot), its
  // side says it sleeps; the doorbell to sleep on, else -1 (it waits for nothing there, or its wait
  // just ended: it must not sleep). Woken undoes Sleep after the poll, which saw the doorbell `rung` or not.
  int Sleep(const Transfer& t, bool reader);
  void Woken(const Transfer& t, bool reader, bool rung);

 private:
  const bool enabled_;
  // By link: the ring this rank writes (offered, then kept where the receiver mapped it), whether
  // the receiver mapped it, and the ring this rank reads.
  std::vector<std::unique_ptr<SharedMemoryRing>> sending_;
  std::vector<char> writes_;
  std::vector<std::unique_ptr<SharedMemoryRing>> reading_;
  // By link: whether single copy carries its large payloads, sending and receiving.
  std::vector<char> sends_in_place_, reads_in_place_;
  std::vector<std::string> refusals_;
};

// Why the entry `message` is not the one due, "" where it is: a message whose payload of
// `payload_bytes` goes at `where` (PayloadPlace), or (`fragment`) a fragment of `payload_bytes`. The
// writer's word, checked before a byte of it is copied; the copy then takes the bytes due, never
// the slot's own count.
std::string RingEntryMismatch(const RingMessage& message, bool fragment, size_t payload_bytes, uint32_t where);

// Makes every later Join of this process fail as pidfd_getfd would with `error` (0: no longer): a
// receiver that cannot take the segment, for tests where no seccomp filter can be installed.
void FailSharedMemoryJoins(int error);

}  // namespace rxccl
