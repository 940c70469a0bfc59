// The ring of one data link between ranks of one host (docs/protocol.md 9.10, "Shared memory"): a
// segment its sender (the writer) and its receiver (the reader) both map, holding a ring of slots,
// each a message's header and, where it fits, its payload, or a fragment of a larger payload, with
// the slot's sequence word in line before them: the reader polls memory, not a socket, and a
// message costs neither side a system call while the other is awake.
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

// Slots per ring, and the payload a slot holds in line. A larger payload goes in the slots after its
// header's (a fragment each, copied in by the writer and out by the reader, as Open MPI's
// shared-memory FIFO does) where the ring holds all of it, unless single copy carries it (then on
// the link's socket as ranges). 32 slots hold any payload below single copy's 256 KiB, so a writer
// never waits for its reader within a message below it: where ranks outnumber cores, each such
// wait is a wake-up of a descheduled reader, which TCP's megabytes of buffer spared the socket.
constexpr size_t kRingSlots = 32;
constexpr size_t kRingPayloadBytes = size_t(8) << 10;
// The segment, byte by byte (little-endian; docs/protocol.md 9.9):
//   identity line, 0..63: "GX1R", 4 version (2), 5..7 zero, 8..11 slots, 12..15 bytes per slot,
//     16..19 payload bytes a slot holds, 20..23 and 24..27 the writer's descriptors of the
//     reader's and the writer's doorbells, 28..63 zero;
//   the writer's line, 64..127: 72..75 "the writer sleeps" (u32, 0 or 1), the rest zero;
//   the reader's line, 128..191: 128..135 slots the reader released (u64), 136..139 "the reader
//     sleeps" (u32), the rest zero;
//   the slots from 192, slot i at 192 + i * kRingSlotBytes: 0..7 its sequence (u64: n + 1 once
//     entry n, n mod slots = i, is in it), 8..11 bytes (u32: a message's payload bytes; a
//     fragment's own), 12..15 what it holds (u32: kPayloadInSlot, kPayloadOnSocket, kPayloadInSlots
//     for a message; kFragment), 16..47 the message's header (a fragment: unused), 48.. payload
//     bytes in line (a message's first kRingPayloadBytes at most, a fragment's).
constexpr size_t kRingLineBytes = 64;
constexpr size_t kRingSlotsOffset = 3 * kRingLineBytes;
constexpr size_t kSlotHeadBytes = 16;
constexpr size_t kSlotHeaderBytes = 32;
constexpr size_t kRingSlotBytes = (kSlotHeadBytes + kSlotHeaderBytes + kRingPayloadBytes + kRingLineBytes - 1) / kRingLineBytes * kRingLineBytes;
constexpr size_t kRingSegmentBytes = kRingSlotsOffset + kRingSlots * kRingSlotBytes;
// Where a message's payload is: all of it in its slot; on the socket after it (single copy's
// ranges, or inline); its first kRingPayloadBytes in its slot and the rest in the slots after it, a
// fragment each. A fragment's slot says kFragment.
constexpr uint32_t kPayloadInSlot = 0, kPayloadOnSocket = 1, kPayloadInSlots = 2, kFragment = 3;

// Where a payload of `bytes` goes on a link with a ring, `by_single_copy` where single copy carries
// payloads of that size on it: both ends decide alike from the size their schedules give. One the
// ring cannot hold whole (single copy off) stays on the socket.
constexpr uint32_t PayloadPlace(size_t bytes, bool by_single_copy) {
  return bytes <= kRingPayloadBytes                         ? kPayloadInSlot
         : !by_single_copy && bytes <= kRingSlots * kRingPayloadBytes ? kPayloadInSlots
                                                            : kPayloadOnSocket;
}
// The bytes of a payload of `bytes` that go in the slot of `done` bytes on (its message's slot at 0,
// then its fragments'): at most kRingPayloadBytes, none where it goes on the socket.
constexpr size_t SlotBytes(size_t bytes, size_t done, uint32_t where) {
  return where == kPayloadOnSocket ? 0 : bytes - done < kRingPayloadBytes ? bytes - done : kRingPayloadBytes;
}

// An entry as the reader finds it in its slot: a message (its header, its payload's bytes and
// place, the part of it in the slot) or a fragment (`where` kFragment, its bytes).
struct RingMessage {
  // Null where the entry has not come; in a fragment's slot, bytes of no meaning.
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
  // Fills the next slot (HasSpace) with `header` and the payload's first SlotBytes(payload_bytes, 0,
  // where) bytes; publishes it and rings the reader if it sleeps.
  void Write(const uint8_t* header, const uint8_t* payload, uint32_t payload_bytes, uint32_t where);
  // The same with a fragment of a payload kPayloadInSlots: `bytes` (at most kRingPayloadBytes).
  void WriteFragment(const uint8_t* fragment, uint32_t bytes);
  // Reader. The next entry, if it has come (else header is null); Release frees its slot.
  RingMessage Next() const;
  void Release();

  // A side about to sleep says so: false where its wait ended meanwhile (a message came, a slot
  // freed), so it must not sleep. Woken, after the sleep: it no longer sleeps, and the doorbell is
  // drained where poll() saw it `rung`. A ring after poll() returned stays in the eventfd and ends
  // the side's next sleep at once (a spurious wake-up, never a lost one): a drain that usually
  // finds nothing would cost a system call each time instead.
  bool Sleep(bool reader);
  void Woken(bool reader, bool rung);
  // The descriptor the writer (!reader) or the reader sleeps on in poll().
  int bell(bool reader) const { return reader ? reader_bell_ : writer_bell_; }

 private:
  SharedMemoryRing(uint8_t* base, bool mapped) : base_(base), mapped_(mapped) {}
  uint8_t* Slot(uint64_t entry) const { return base_ + kRingSlotsOffset + (entry % kRingSlots) * kRingSlotBytes; }
  // Publishes the slot just filled, then rings the reader if it sleeps.
  void Publish(uint8_t* slot);

  uint8_t* const base_;
  // Mapped (munmap), else this process's heap (InMemory).
  const bool mapped_;
  int segment_fd_ = -1;
  int reader_bell_ = -1, writer_bell_ = -1;
  // Entries written (writer), read and released (reader): each side's own count.
  uint64_t written_ = 0, released_ = 0;
};

}  // namespace rxccl
