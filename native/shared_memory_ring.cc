#include "shared_memory_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "little_endian.h"

// Linux 5.6's; older C libraries do not name it (the number is the same on every architecture).
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x0002U
#endif

namespace rxccl {
namespace {

constexpr uint8_t kMagic[4] = {'G', 'X', '1', 'R'};
// 2: payloads past a slot's size go in the slots after it (1 sent them on the socket); a build of
// the other version refuses the segment at its identity line, and the link keeps TCP.
constexpr uint8_t kVersion = 2;
// Offsets of the words the two sides share (shared_memory_ring.h).
constexpr size_t kReaderBellAt = 20, kWriterBellAt = 24;
constexpr size_t kWriterSleepsAt = kRingLineBytes + 8;
constexpr size_t kReleasedAt = 2 * kRingLineBytes, kReaderSleepsAt = 2 * kRingLineBytes + 8;

// The words both processes touch, as atomics: aligned, so lock-free on every architecture Node runs
// on. Little-endian, as the layout says (the two sides are one host).
uint32_t* Word32(uint8_t* base, size_t at) { return reinterpret_cast<uint32_t*>(base + at); }
uint64_t* Word64(uint8_t* base, size_t at) { return reinterpret_cast<uint64_t*>(base + at); }

void Ring(int bell) {
  if (bell < 0) return;
  const uint64_t one = 1;
  // EAGAIN: the counter is full, so the sleeper is woken anyway.
  while (write(bell, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void Drain(int bell) {
  if (bell < 0) return;
  uint64_t count;
  while (read(bell, &count, sizeof count) < 0 && errno == EINTR) {
  }
}

std::string Failed(const char* call) { return std::string(call) + ": " + strerror(errno); }

// `fd` (this process's) is an eventfd.
bool IsEventFd(int fd) {
  char target[64];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t length = readlink(link.c_str(), target, sizeof target - 1);
  return length > 0 && std::string(target, size_t(length)) == "anon_inode:[eventfd]";
}

int TakeFd(int pidfd, uint32_t fd, std::string& error) {
  const int taken = int(syscall(SYS_pidfd_getfd, pidfd, int(fd), 0));
  if (taken < 0) error = Failed("pidfd_getfd");
  return taken;
}

}  // namespace

std::unique_ptr<SharedMemoryRing> SharedMemoryRing::Create(std::string& error) {
  const int fd = int(syscall(SYS_memfd_create, "rxccl-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (fd < 0) {
    error = Failed("memfd_create");
    return nullptr;
  }
  void* base = MAP_FAILED;
  if (ftruncate(fd, off_t(kRingSegmentBytes)) != 0) {
    error = Failed("ftruncate");
  } else if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    error = Failed("fcntl(F_ADD_SEALS)");
  } else if ((base = mmap(nullptr, kRingSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
    error = Failed("mmap");
  }
  if (base == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  std::unique_ptr<SharedMemoryRing> ring(new SharedMemoryRing(static_cast<uint8_t*>(base), true));
  ring->segment_fd_ = fd;
  ring->reader_bell_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ring->writer_bell_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (ring->reader_bell_ < 0 || ring->writer_bell_ < 0) {
    error = Failed("eventfd");
    return nullptr;
  }
  // A fresh memfd reads as zeros: the identity line is all that is written.
  uint8_t* identity = ring->base_;
  memcpy(identity, kMagic, sizeof kMagic);
  identity[4] = kVersion;
  PutLittleEndian<uint32_t>(identity + 8, uint32_t(kRingSlots));
  PutLittleEndian<uint32_t>(identity + 12, uint32_t(kRingSlotBytes));
  PutLittleEndian<uint32_t>(identity + 16, uint32_t(kRingPayloadBytes));
  PutLittleEndian<uint32_t>(identity + kReaderBellAt, uint32_t(ring->reader_bell_));
  PutLittleEndian<uint32_t>(identity + kWriterBellAt, uint32_t(ring->writer_bell_));
  return ring;
}

std::unique_ptr<SharedMemoryRing> SharedMemoryRing::Join(int pidfd, uint32_t segment_fd, std::string& error) {
  const int fd = TakeFd(pidfd, segment_fd, error);
  if (fd < 0) return nullptr;
  struct stat segment {};
  const int seals = fcntl(fd, F_GET_SEALS);
  void* base = MAP_FAILED;
  if (fstat(fd, &segment) != 0 || size_t(segment.st_size) != kRingSegmentBytes) {
    error = "the segment offered is not " + std::to_string(kRingSegmentBytes) + " bytes";
  } else if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
    error = "the segment offered is not a memfd sealed against shrinking and growing";
  } else if ((base = mmap(nullptr, kRingSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
    error = Failed("mmap");
  }
  // Mapped or not, the descriptor goes: from here on only the two mappings hold the segment.
  close(fd);
  if (base == MAP_FAILED) return nullptr;
  std::unique_ptr<SharedMemoryRing> ring(new SharedMemoryRing(static_cast<uint8_t*>(base), true));
  const uint8_t* identity = ring->base_;
  if (memcmp(identity, kMagic, sizeof kMagic) != 0 || identity[4] != kVersion || GetLittleEndian<uint32_t>(identity + 8) != kRingSlots ||
      GetLittleEndian<uint32_t>(identity + 12) != kRingSlotBytes || GetLittleEndian<uint32_t>(identity + 16) != kRingPayloadBytes) {
    error = "the segment offered has another identity line than this build's";
    return nullptr;
  }
  ring->reader_bell_ = TakeFd(pidfd, GetLittleEndian<uint32_t>(identity + kReaderBellAt), error);
  if (ring->reader_bell_ < 0) return nullptr;
  ring->writer_bell_ = TakeFd(pidfd, GetLittleEndian<uint32_t>(identity + kWriterBellAt), error);
  if (ring->writer_bell_ < 0) return nullptr;
  if (!IsEventFd(ring->reader_bell_) || !IsEventFd(ring->writer_bell_)) {
    error = "the doorbells the segment names are not eventfds";
    return nullptr;
  }
  return ring;
}

std::unique_ptr<SharedMemoryRing> SharedMemoryRing::InMemory() {
  void* base = aligned_alloc(kRingLineBytes, kRingSegmentBytes);
  memset(base, 0, kRingSegmentBytes);
  return std::unique_ptr<SharedMemoryRing>(new SharedMemoryRing(static_cast<uint8_t*>(base), false));
}

SharedMemoryRing::~SharedMemoryRing() {
  if (mapped_) {
    munmap(base_, kRingSegmentBytes);
  } else {
    free(base_);
  }
  for (const int fd : {segment_fd_, reader_bell_, writer_bell_}) {
    if (fd >= 0) close(fd);
  }
}

void SharedMemoryRing::Joined() {
  if (segment_fd_ >= 0) close(segment_fd_);
  segment_fd_ = -1;
}

bool SharedMemoryRing::HasSpace() const {
  // Sequentially consistent, as Sleep's second look must be.
  return written_ - __atomic_load_n(Word64(base_, kReleasedAt), __ATOMIC_SEQ_CST) < kRingSlots;
}

void SharedMemoryRing::Write(const uint8_t* header, const uint8_t* payload, uint32_t payload_bytes, uint32_t where) {
  uint8_t* slot = Slot(written_);
  const size_t in_slot = SlotBytes(payload_bytes, 0, where);
  PutLittleEndian<uint32_t>(slot + 8, payload_bytes);
  PutLittleEndian<uint32_t>(slot + 12, where);
  memcpy(slot + kSlotHeadBytes, header, kSlotHeaderBytes);
  if (in_slot > 0) memcpy(slot + kSlotHeadBytes + kSlotHeaderBytes, payload, in_slot);
  Publish(slot);
}

void SharedMemoryRing::WriteFragment(const uint8_t* fragment, uint32_t bytes) {
  uint8_t* slot = Slot(written_);
  PutLittleEndian<uint32_t>(slot + 8, bytes);
  PutLittleEndian<uint32_t>(slot + 12, kFragment);
  memcpy(slot + kSlotHeadBytes + kSlotHeaderBytes, fragment, bytes);
  Publish(slot);
}

void SharedMemoryRing::Publish(uint8_t* slot) {
  written_++;
  // Publish, then look whether the reader sleeps (its side: Sleep).
  __atomic_store_n(Word64(slot, 0), written_, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(Word32(base_, kReaderSleepsAt), __ATOMIC_SEQ_CST) != 0 && __atomic_exchange_n(Word32(base_, kReaderSleepsAt), 0u, __ATOMIC_SEQ_CST) != 0) {
    Ring(reader_bell_);
  }
}

RingMessage SharedMemoryRing::Next() const {
  RingMessage message;
  const uint8_t* slot = Slot(released_);
  if (__atomic_load_n(Word64(const_cast<uint8_t*>(slot), 0), __ATOMIC_SEQ_CST) != released_ + 1) return message;
  message.header = slot + kSlotHeadBytes;
  message.payload_bytes = GetLittleEndian<uint32_t>(slot + 8);
  message.where = GetLittleEndian<uint32_t>(slot + 12);
  message.payload = slot + kSlotHeadBytes + kSlotHeaderBytes;
  return message;
}

void SharedMemoryRing::Release() {
  released_++;
  __atomic_store_n(Word64(base_, kReleasedAt), released_, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(Word32(base_, kWriterSleepsAt), __ATOMIC_SEQ_CST) != 0 && __atomic_exchange_n(Word32(base_, kWriterSleepsAt), 0u, __ATOMIC_SEQ_CST) != 0) {
    Ring(writer_bell_);
  }
}

bool SharedMemoryRing::Sleep(bool reader) {
  __atomic_store_n(Word32(base_, reader ? kReaderSleepsAt : kWriterSleepsAt), 1u, __ATOMIC_SEQ_CST);
  const bool still = reader ? Next().header == nullptr : !HasSpace();
  if (!still) Woken(reader, false);
  return still;
}

void SharedMemoryRing::Woken(bool reader, bool rung) {
  __atomic_store_n(Word32(base_, reader ? kReaderSleepsAt : kWriterSleepsAt), 0u, __ATOMIC_SEQ_CST);
  if (rung) Drain(bell(reader));
}

}  // namespace rxccl
