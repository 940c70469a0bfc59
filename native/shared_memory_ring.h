// The ring of one data link between ranks of one host (docs/protocol.md 9.10, "Shared memory"): a
// segment its sender (the writer) and its receiver (the reader) both map, holding a ring of slots,
// each a message's header and, where it fits, its payload, with the slot's sequence word in line
// before them: the reader polls memory, not a socket, and a small message costs neither side a
// system call while the other is awake.
//
// The segment is a memfd (memfd_create): it has no name in any filesystem, so no other process can
// open it; the writer's descriptor passes only to the process the single-copy agreement verified at
// the other end of the authenticated link (pidfd_getfd, single_copy.h), both close their descriptor
// once the reader mapped it, and the kernel frees it with its last mapping (a killed rank leaks
// nothing). It is sealed against shrinking and growing, so neither side can make the other's
// mapping fault.
//
// Waiting: a side with nothing to do spins (the data links' spin budget), then says it sleeps (a
// word of its own in the segment) and sleeps in poll() on an eventfd, its doorbell, which the other
// side writes only when it finds that word set after publishing (Dekker's order: each stores its own
// word, then loads the other's, both sequentially consistent, so no wake-up is lost). The reader's
// doorbell rings for a message, the writer's for a slot freed. Both eventfds are the writer's, taken
// by the reader like the segment.
//
// What it knows: the segment's bytes, their order and the two doorbells. What it does not: links,
// transfers, headers' meaning (shared_memory_links.h), how the reader came to trust the writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace rxccl {

// Slots per ring, and the payload a slot holds in line: a larger payload's header goes in a slot,
// saying its payload follows on the link's socket (or by single copy).
constexpr size_t kRingSlots = 16;
constexpr size_t kRingPayloadBytes = size_t(8) << 10;
// The segment, byte by byte (little-endian; docs/protocol.md 9.10):
//   identity line, 0..63: "GX1R", 4 version (1), 5..7 zero, 8..11 slots, 12..15 bytes per slot,
//     16..19 payload bytes a slot holds, 20..23 and 24..27 the writer's descriptors of the
//     reader's and the writer's doorbells, 28..63 zero;
//   the writer's line, 64..127: 72..75 "the writer sleeps" (u32, 0 or 1), the rest zero;
//   the reader's line, 128..191: 128..135 messages the reader released (u64), 136..139 "the reader
//     sleeps" (u32), the rest zero;
//   the slots from 192, slot i at 192 + i * kRingSlotBytes: 0..7 its sequence (u64: n + 1 once
//     message n, n mod slots = i, is in it), 8..11 the payload's bytes (u32), 12..15 where the
//     payload is (u32: 0 in the slot, 1 after it on the socket), 16..47 the message's header,
//     48.. its payload in line.
constexpr size_t kRingLineBytes = 64;
constexpr size_t kRingSlotsOffset = 3 * kRingLineBytes;
constexpr size_t kSlotHeadBytes = 16;
constexpr size_t kSlotHeaderBytes = 32;
constexpr size_t kRingSlotBytes = (kSlotHeadBytes + kSlotHeaderBytes + kRingPayloadBytes + kRingLineBytes - 1) / kRingLineBytes * kRingLineBytes;
constexpr size_t kRingSegmentBytes = kRingSlotsOffset + kRingSlots * kRingSlotBytes;
constexpr uint32_t kPayloadInSlot = 0, kPayloadOnSocket = 1;

// A message as the reader finds it in its slot.
struct RingMessage {
  const uint8_t* header = nullptr;
  uint32_t payload_bytes = 0;
  uint32_t where = kPayloadInSlot;
  const uint8_t* payload = nullptr;
};

class SharedMemoryRing {
 public:
  // The writer's ring: a new sealed memfd, mapped, and its two doorbells; null and `error` where
  // the system refuses one.
  static std::unique_ptr<SharedMemoryRing> Create(std::string& error);
  // The reader's: the writer's segment `segment_fd` (a descriptor in the writer, the process
  // `pidfd` holds), taken with pidfd_getfd, checked (a sealed memfd of the segment's size, its
  // identity line), mapped and closed, and the doorbells it names; null and `error` (which call
  // failed, and why) otherwise.
  static std::unique_ptr<SharedMemoryRing> Join(int pidfd, uint32_t segment_fd, std::string& error);
  // Both ends in this process's memory, without doorbells (the ring's own test, addon.cc).
  static std::unique_ptr<SharedMemoryRing> InMemory();
  ~SharedMemoryRing();
  SharedMemoryRing(const SharedMemoryRing&) = delete;
  SharedMemoryRing& operator=(const SharedMemoryRing&) = delete;

  // The writer's descriptor of the segment, for the reader to take (-1 once Joined).
  int segment_fd() const { return segment_fd_; }
  // The reader answered: the writer closes its descriptor (the mapping stays).
  void Joined();

  // Writer. Whether a slot is free.
  bool HasSpace() const;
  // Fills the next slot (HasSpace) with `header` and, where `in_slot` (payload_bytes at most
  // kRingPayloadBytes), the payload; publishes it and rings the reader if it sleeps.
  void Write(const uint8_t* header, const uint8_t* payload, uint32_t payload_bytes, bool in_slot);
  // Reader. The next message, if it has come (else header is null); Release frees its slot.
  RingMessage Next() const;
  void Release();

  // A side about to sleep says so: false where its wait ended meanwhile (a message came, a slot
  // freed), so it must not sleep. Woken, after the sleep: it no longer sleeps, the doorbell drained.
  bool Sleep(bool reader);
  void Woken(bool reader);
  // The descriptor the writer (!reader) or the reader sleeps on in poll().
  int bell(bool reader) const { return reader ? reader_bell_ : writer_bell_; }

 private:
  SharedMemoryRing(uint8_t* base, bool mapped) : base_(base), mapped_(mapped) {}
  uint8_t* Slot(uint64_t message) const { return base_ + kRingSlotsOffset + (message % kRingSlots) * kRingSlotBytes; }

  uint8_t* const base_;
  // Mapped (munmap), else this process's heap (InMemory).
  const bool mapped_;
  int segment_fd_ = -1;
  int reader_bell_ = -1, writer_bell_ = -1;
  // Messages written (writer), read and released (reader): each side's own count.
  uint64_t written_ = 0, released_ = 0;
};

}  // namespace rxccl
