#include "shared_memory_links.h"

#include <string.h>

#include <atomic>

namespace rxccl {
namespace {

std::atomic<int> failed_joins{0};

}  // namespace

void FailSharedMemoryJoins(int error) { failed_joins.store(error); }

SharedMemoryLinks::SharedMemoryLinks(int world_size, int rails, bool enabled)
    : enabled_(enabled),
      sending_(size_t(world_size) * size_t(rails)),
      writes_(sending_.size(), 0),
      reading_(sending_.size()),
      refusals_(sending_.size()) {}

void SharedMemoryLinks::Offer(size_t link) {
  if (!enabled_ || sending_[link] != nullptr) return;
  std::string error;
  sending_[link] = SharedMemoryRing::Create(error);
  if (sending_[link] == nullptr) refusals_[link] = "cannot create its ring: " + error;
}

void SharedMemoryLinks::Answered(size_t link, bool mapped) {
  if (sending_[link] == nullptr) return;
  if (!mapped) {
    sending_[link].reset();
    return;
  }
  // Both sides mapped it: no descriptor of the segment is left in either process.
  sending_[link]->Joined();
  writes_[link] = 1;
}

bool SharedMemoryLinks::Join(size_t link, int pidfd, uint32_t segment_fd) {
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

bool SharedMemoryLinks::CanWrite(const Transfer& t) const {
  if (!Writes(t) || t.sent >= t.sends.size() || t.sent % 2 != 0 || t.sent_bytes != 0 || !sending_[t.link]->HasSpace()) return false;
  const size_t payload = t.sends[t.sent + 1].size;
  return t.sent_total + t.sends[t.sent].size + (payload <= kRingPayloadBytes ? payload : 0) <= t.send_limit;
}

void SharedMemoryLinks::Write(ProgramRun& run, Transfer& t) {
  const Span& header = t.sends[t.sent];
  const Span& payload = t.sends[t.sent + 1];
  const bool in_slot = payload.size <= kRingPayloadBytes;
  sending_[t.link]->Write(header.data, payload.data, uint32_t(payload.size), in_slot);
  run.SendMoved(t, header.size + (in_slot ? payload.size : 0));
}

RingMessage SharedMemoryLinks::Next(const Transfer& t) const {
  if (!Reads(t) || t.received >= t.receives.size() || t.received % 2 != 0 || t.received_bytes != 0) return RingMessage{};
  return reading_[t.link]->Next();
}

int SharedMemoryLinks::Sleep(const Transfer& t, bool reader) {
  if (reader) {
    const bool waits = Reads(t) && t.received < t.receives.size() && t.received % 2 == 0 && t.received_bytes == 0;
    return waits && reading_[t.link]->Sleep(true) ? reading_[t.link]->bell(true) : -1;
  }
  const bool waits = Writes(t) && t.sent < t.sends.size() && t.sent % 2 == 0 && !sending_[t.link]->HasSpace();
  return waits && sending_[t.link]->Sleep(false) ? sending_[t.link]->bell(false) : -1;
}

void SharedMemoryLinks::Woken(const Transfer& t, bool reader) {
  (reader ? reading_[t.link] : sending_[t.link])->Woken(reader);
}

}  // namespace rxccl
