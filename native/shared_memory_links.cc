#include "shared_memory_links.h"

#include <string.h>

#include <atomic>

#include "single_copy.h"

namespace rxccl {
namespace {

std::atomic<int> failed_joins{0};

// A ring slot's place of a payload, as a protocol error names it.
std::string PlaceName(uint32_t where) {
  switch (where) {
    case kPayloadInSlot:
      return "in the slot";
    case kPayloadOnSocket:
      return "on the socket";
    case kPayloadInSlots:
      return "in the slots";
    default:
      return "at place " + std::to_string(where);
  }
}

}  // namespace

std::string RingEntryMismatch(const RingMessage& message, bool fragment, size_t payload_bytes, uint32_t where) {
  if (fragment) {
    if (message.where == kFragment && message.payload_bytes == payload_bytes) return "";
    return "ring slot of " + (message.where == kFragment ? "a " + std::to_string(message.payload_bytes) + "-byte fragment" : std::string("a message")) +
           " where a fragment of " + std::to_string(payload_bytes) + " bytes is due";
  }
  if (message.payload_bytes == payload_bytes && message.where == where) return "";
  if (message.where == kFragment) {
    return "ring slot of a " + std::to_string(message.payload_bytes) + "-byte fragment where a message of " + std::to_string(payload_bytes) + " bytes is due " + PlaceName(where);
  }
  return "ring slot of a " + std::to_string(message.payload_bytes) + "-byte payload " + PlaceName(message.where) + " where " + std::to_string(payload_bytes) +
         " bytes are due " + PlaceName(where);
}

void FailSharedMemoryJoins(int error) { failed_joins.store(error); }

SharedMemoryLinks::SharedMemoryLinks(int world_size, int rails, bool enabled)
    : enabled_(enabled),
      sending_(size_t(world_size) * size_t(rails)),
      writes_(sending_.size(), 0),
      reading_(sending_.size()),
      sends_in_place_(sending_.size(), 0),
      reads_in_place_(sending_.size(), 0),
      refusals_(sending_.size()) {}

void SharedMemoryLinks::Offer(size_t link) {
  if (!enabled_ || sending_[link] != nullptr) return;
  std::string error;
  sending_[link] = SharedMemoryRing::Create(error);
  if (sending_[link] == nullptr) refusals_[link] = "cannot create its ring: " + error;
}

void SharedMemoryLinks::Answered(size_t link, bool mapped, bool reads_in_place) {
  sends_in_place_[link] = reads_in_place;
  if (sending_[link] == nullptr) return;
  if (!mapped) {
    sending_[link].reset();
    return;
  }
  // Both sides mapped it: no descriptor of the segment is left in either process.
  sending_[link]->Joined();
  writes_[link] = 1;
}

bool SharedMemoryLinks::Join(size_t link, int pidfd, uint32_t segment_fd, bool reads_in_place) {
  reads_in_place_[link] = reads_in_place;
  std::string error;
  const int failed = failed_joins.load();
  if (failed != 0) {
    error = std::string("pidfd_getfd: ") + strerror(failed) + " (forced for a test)";
  } else {
    reading_[link] = SharedMemoryRing::Join(pidfd, segment_fd, error);
  }
  if (reading_[link] == nullptr) refusals_[link] = "cannot map its peer's ring: " + error;
  return reading_[link] != nullptr;
}

void SharedMemoryLinks::Refuse(size_t link, std::string why) { refusals_[link] = std::move(why); }

std::vector<int> SharedMemoryLinks::Agreed(bool sending) const {
  std::vector<int> agreed;
  for (size_t link = 0; link < reading_.size(); link++) {
    if (sending ? writes_[link] != 0 : reading_[link] != nullptr) agreed.push_back(int(link));
  }
  return agreed;
}

uint32_t SharedMemoryLinks::Place(const Transfer& t, size_t bytes, bool sending) const {
  return PayloadPlace(bytes, bytes >= kSingleCopyBytes && (sending ? sends_in_place_ : reads_in_place_)[t.link] != 0);
}

bool SharedMemoryLinks::WriteDue(const Transfer& t) const {
  if (!Writes(t) || t.sent >= t.sends.size()) return false;
  // A header is due at an even place; a payload is under way in slots once its first part went
  // with its header (single copy's ranges move sent_bytes too, but not in slots).
  if (t.sent % 2 == 0) return t.sent_bytes == 0;
  return t.sent_bytes > 0 && Place(t, t.sends[t.sent].size, true) == kPayloadInSlots;
}

bool SharedMemoryLinks::CanWrite(const Transfer& t) const {
  if (!WriteDue(t) || !sending_[t.link]->HasSpace()) return false;
  if (t.sent % 2 == 1) return t.sent_total + SlotBytes(t.sends[t.sent].size, t.sent_bytes, kPayloadInSlots) <= t.send_limit;
  const size_t payload = t.sends[t.sent + 1].size;
  return t.sent_total + t.sends[t.sent].size + SlotBytes(payload, 0, Place(t, payload, true)) <= t.send_limit;
}

void SharedMemoryLinks::Write(ProgramRun& run, Transfer& t) {
  if (t.sent % 2 == 1) {
    const Span& payload = t.sends[t.sent];
    const size_t bytes = SlotBytes(payload.size, t.sent_bytes, kPayloadInSlots);
    sending_[t.link]->WriteFragment(payload.data + t.sent_bytes, uint32_t(bytes));
    run.SendMoved(t, bytes);
    return;
  }
  const Span& header = t.sends[t.sent];
  const Span& payload = t.sends[t.sent + 1];
  const uint32_t where = Place(t, payload.size, true);
  sending_[t.link]->Write(header.data, payload.data, uint32_t(payload.size), where);
  run.SendMoved(t, header.size + SlotBytes(payload.size, 0, where));
}

bool SharedMemoryLinks::ReadDue(const Transfer& t) const {
  if (!Reads(t) || t.received >= t.receives.size()) return false;
  if (t.received % 2 == 0) return t.received_bytes == 0;
  // A payload's fragments come once its first part came with its header.
  return t.received_bytes > 0 && Place(t, t.receives[t.received].size, false) == kPayloadInSlots;
}

RingMessage SharedMemoryLinks::Next(const Transfer& t) const {
  if (!ReadDue(t)) return RingMessage{};
  return reading_[t.link]->Next();
}

int SharedMemoryLinks::Sleep(const Transfer& t, bool reader) {
  if (reader) return ReadDue(t) && reading_[t.link]->Sleep(true) ? reading_[t.link]->bell(true) : -1;
  return WriteDue(t) && !sending_[t.link]->HasSpace() && sending_[t.link]->Sleep(false) ? sending_[t.link]->bell(false) : -1;
}

void SharedMemoryLinks::Woken(const Transfer& t, bool reader, bool rung) {
  (reader ? reading_[t.link] : sending_[t.link])->Woken(reader, rung);
}

}  // namespace rxccl
