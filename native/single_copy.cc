#include "single_copy.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

namespace rxccl {
namespace {

constexpr uint8_t kMagic[4] = {'G', 'X', '1', 'C'};
constexpr uint8_t kVersion = 1;
constexpr uint8_t kOffersMemory = 1;

void PutU64(uint8_t* at, uint64_t value) {
  for (int i = 0; i < 8; i++) at[i] = uint8_t(value >> (8 * i));
}

uint64_t GetU64(const uint8_t* at) {
  uint64_t value = 0;
  for (int i = 0; i < 8; i++) value |= uint64_t(at[i]) << (8 * i);
  return value;
}

// Where this process is: the kernel's boot id and its network namespace's inode; `known` false
// where either cannot be read (not Linux's /proc): such a process offers and reads nothing.
struct Whereabouts {
  bool known = false;
  uint8_t boot_id[16] = {};
  uint64_t network = 0;
};

const Whereabouts& Here() {
  static const Whereabouts here = [] {
    Whereabouts found;
    const int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return found;
    char text[64] = {};
    const ssize_t got = read(fd, text, sizeof text - 1);
    close(fd);
    size_t digits = 0;
    for (ssize_t i = 0; i < got && digits < 32; i++) {
      const char c = text[i];
      const int value = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (value < 0) continue;
      found.boot_id[digits / 2] = uint8_t(digits % 2 == 0 ? value << 4 : found.boot_id[digits / 2] | value);
      digits++;
    }
    struct stat namespace_file {};
    if (digits != 32 || stat("/proc/self/ns/net", &namespace_file) != 0) return found;
    found.network = uint64_t(namespace_file.st_ino);
    found.known = true;
    return found;
  }();
  return here;
}

// Whether process `pid` runs as this process's user: a peer names its own pid, and only a process
// of this job's user is one this rank would read.
bool SameUser(pid_t pid) {
  struct stat process {};
  return stat(("/proc/" + std::to_string(pid)).c_str(), &process) == 0 && process.st_uid == geteuid();
}

// A word of this process's memory with a value no other process has: a receiver that reads it back
// from the pid and address the offer names has reached this very process.
const uint64_t& ProbeWord() {
  static const uint64_t word = [] {
    std::random_device device;
    return (uint64_t(device()) << 32 | device()) | 1;
  }();
  return word;
}

}  // namespace

void BuildOffer(bool offering, uint8_t* offer) {
  memset(offer, 0, kOfferBytes);
  memcpy(offer, kMagic, sizeof kMagic);
  offer[4] = kVersion;
  const Whereabouts& here = Here();
  if (!offering || !here.known) return;
  // Where Yama restricts reading another process's memory to its ancestors, allow this user's
  // processes (the ranks of this job are siblings). Elsewhere this fails harmlessly.
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  offer[5] = kOffersMemory;
  memcpy(offer + 8, here.boot_id, sizeof here.boot_id);
  PutU64(offer + 24, here.network);
  const uint32_t pid = uint32_t(getpid());
  for (int i = 0; i < 4; i++) offer[32 + i] = uint8_t(pid >> (8 * i));
  PutU64(offer + 40, uint64_t(reinterpret_cast<uintptr_t>(&ProbeWord())));
  PutU64(offer + 48, ProbeWord());
}

bool OfferValid(const uint8_t* offer, std::string& error) {
  if (memcmp(offer, kMagic, sizeof kMagic) != 0 || offer[4] != kVersion || (offer[5] & ~kOffersMemory) != 0) {
    static const char* hex = "0123456789abcdef";
    error = "single-copy offer expected, got ";
    for (size_t i = 0; i < 8; i++) error += {hex[offer[i] >> 4], hex[offer[i] & 15]};
    return false;
  }
  if (offer[6] != 0 || offer[7] != 0 || offer[36] != 0 || offer[37] != 0 || offer[38] != 0 || offer[39] != 0) {
    error = "single-copy offer whose bytes 6..7 or 36..39 are not zero";
    return false;
  }
  return true;
}

pid_t ReadableSender(const uint8_t* offer, bool reading) {
  const Whereabouts& here = Here();
  if (!reading || (offer[5] & kOffersMemory) == 0 || !here.known) return -1;
  if (memcmp(offer + 8, here.boot_id, sizeof here.boot_id) != 0 || GetU64(offer + 24) != here.network) return -1;
  uint32_t pid = 0;
  for (int i = 0; i < 4; i++) pid |= uint32_t(offer[32 + i]) << (8 * i);
  if (pid == 0 || pid > uint32_t(INT32_MAX) || !SameUser(pid_t(pid))) return -1;
  uint64_t seen = 0;
  iovec local{&seen, sizeof seen};
  iovec remote{reinterpret_cast<void*>(uintptr_t(GetU64(offer + 40))), sizeof seen};
  if (process_vm_readv(pid_t(pid), &local, 1, &remote, 1, 0) != ssize_t(sizeof seen)) return -1;
  return seen == GetU64(offer + 48) ? pid_t(pid) : -1;
}

void EncodeRange(const uint8_t* data, size_t size, uint8_t* record) {
  PutU64(record, uint64_t(reinterpret_cast<uintptr_t>(data)));
  PutU64(record + 8, uint64_t(size));
}

void DecodeRange(const uint8_t* record, uint64_t& address, uint64_t& size) {
  address = GetU64(record);
  size = GetU64(record + 8);
}

}  // namespace rxccl
