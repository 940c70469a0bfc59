#include "single_copy.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <string>

#include "little_endian.h"

// Linux 5.3's; older C libraries do not name it (the number is the same on every architecture).
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace rxccl {
namespace {

constexpr uint8_t kMagic[4] = {'G', 'X', '1', 'C'};
constexpr uint8_t kVersion = 2;
constexpr uint8_t kOffersMemory = 1, kOffersRing = 2;

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

// Whether process `pid` runs as this process's user: only a process of this job's user is one this
// rank would read.
bool SameUser(pid_t pid) {
  struct stat process {};
  return stat(("/proc/" + std::to_string(pid)).c_str(), &process) == 0 && process.st_uid == geteuid();
}

// A TCP endpoint as /proc/net/tcp6 spells it: an IPv6 address (IPv4 as ::ffff:a.b.c.d), a port. A
// connection's ends may differ in family (an IPv4 dialler accepted on a dual-stack listener).
struct Endpoint {
  uint8_t address[16] = {};
  uint16_t port = 0;
  bool operator==(const Endpoint& other) const { return port == other.port && memcmp(address, other.address, sizeof address) == 0; }
};

void MapIpv4(const void* ipv4, Endpoint& endpoint) {
  endpoint.address[10] = endpoint.address[11] = 0xff;
  memcpy(endpoint.address + 12, ipv4, 4);
}

bool EndpointOf(const sockaddr_storage& socket, Endpoint& endpoint) {
  if (socket.ss_family == AF_INET) {
    const auto& ipv4 = reinterpret_cast<const sockaddr_in&>(socket);
    MapIpv4(&ipv4.sin_addr, endpoint);
    endpoint.port = ntohs(ipv4.sin_port);
    return true;
  }
  if (socket.ss_family != AF_INET6) return false;
  const auto& ipv6 = reinterpret_cast<const sockaddr_in6&>(socket);
  memcpy(endpoint.address, &ipv6.sin6_addr, sizeof endpoint.address);
  endpoint.port = ntohs(ipv6.sin6_port);
  return true;
}

// "0100007F:1F90" (/proc/net/tcp) or 32 hex digits and a port (tcp6): the kernel prints the address
// as words of 8 digits, each the u32 in memory, and the port in host order.
bool ParseEndpoint(const std::string& text, Endpoint& endpoint) {
  const size_t colon = text.find(':');
  if (colon != 8 && colon != 32) return false;
  uint8_t raw[16];
  for (size_t word = 0; word < colon / 8; word++) {
    const uint32_t value = uint32_t(strtoul(text.substr(8 * word, 8).c_str(), nullptr, 16));
    memcpy(raw + 4 * word, &value, 4);
  }
  endpoint = Endpoint{};
  if (colon == 8) {
    MapIpv4(raw, endpoint);
  } else {
    memcpy(endpoint.address, raw, sizeof endpoint.address);
  }
  endpoint.port = uint16_t(strtoul(text.c_str() + colon + 1, nullptr, 16));
  return true;
}

// The inode of the socket at the other end of TCP connection `fd`, in this network namespace: the
// one whose local and remote endpoints are fd's, swapped (a connection's 4-tuple is unique in a
// namespace). 0 where there is none here.
uint64_t PeerSocketInode(int fd) {
  sockaddr_storage local{}, remote{};
  socklen_t local_size = sizeof local, remote_size = sizeof remote;
  Endpoint near, far;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_size) != 0 || getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &remote_size) != 0 ||
      !EndpointOf(local, near) || !EndpointOf(remote, far)) {
    return 0;
  }
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream lines(table);
    std::string line;
    std::getline(lines, line);  // the column names
    while (std::getline(lines, line)) {
      // sl, local, remote, st, tx:rx queues, tr:when, retrnsmt, uid, timeout, inode, ...
      std::istringstream fields(line);
      std::string slot, own, other, skipped;
      fields >> slot >> own >> other;
      for (int column = 0; column < 6; column++) fields >> skipped;
      uint64_t inode = 0;
      fields >> inode;
      Endpoint at, to;
      if (inode != 0 && ParseEndpoint(own, at) && ParseEndpoint(other, to) && at == far && to == near) return inode;
    }
  }
  return 0;
}

// Whether process `pid` holds socket `inode` among its descriptors.
bool HoldsSocket(pid_t pid, uint64_t inode) {
  DIR* descriptors = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (descriptors == nullptr) return false;
  const std::string wanted = "socket:[" + std::to_string(inode) + "]";
  bool held = false;
  char target[64];
  for (const dirent* entry; !held && (entry = readdir(descriptors)) != nullptr;) {
    const ssize_t length = readlinkat(dirfd(descriptors), entry->d_name, target, sizeof target);
    held = length == ssize_t(wanted.size()) && memcmp(target, wanted.data(), wanted.size()) == 0;
  }
  closedir(descriptors);
  return held;
}

// Yama's ptrace scope (/proc/sys/kernel/yama/ptrace_scope), -1 without Yama.
int YamaScope() {
  std::ifstream setting("/proc/sys/kernel/yama/ptrace_scope");
  int scope = -1;
  setting >> scope;
  return setting ? scope : -1;
}

std::mutex ptracer_mutex;
int ptracer_grants = 0;
bool ptracer_set = false;

}  // namespace

void NewChallenge(uint8_t* challenge) {
  size_t got = 0;
  while (got < kChallengeBytes) {
    const ssize_t read = getrandom(challenge + got, kChallengeBytes - got, 0);
    if (read > 0) {
      got += size_t(read);
    } else if (errno != EINTR) {
      // No getrandom (a kernel before 3.17): the C++ library's source, /dev/urandom.
      std::random_device device;
      for (; got < kChallengeBytes; got++) challenge[got] = uint8_t(device());
    }
  }
}

void BuildOffer(bool offering, int ring_fd, const uint8_t* challenge, uint8_t* offer) {
  memset(offer, 0, kOfferBytes);
  memcpy(offer, kMagic, sizeof kMagic);
  offer[4] = kVersion;
  const Whereabouts& here = Here();
  if ((!offering && ring_fd < 0) || !here.known) return;
  offer[5] = uint8_t((offering ? kOffersMemory : 0) | (ring_fd >= 0 ? kOffersRing : 0));
  if (ring_fd >= 0) PutLittleEndian(offer + 36, uint32_t(ring_fd));
  memcpy(offer + 8, here.boot_id, sizeof here.boot_id);
  PutLittleEndian<uint64_t>(offer + 24, here.network);
  const uint32_t pid = uint32_t(getpid());
  PutLittleEndian(offer + 32, pid);
  PutLittleEndian<uint64_t>(offer + 40, uint64_t(reinterpret_cast<uintptr_t>(challenge)));
}

bool OfferValid(const uint8_t* offer, std::string& error) {
  if (memcmp(offer, kMagic, sizeof kMagic) != 0 || offer[4] != kVersion || (offer[5] & ~(kOffersMemory | kOffersRing)) != 0) {
    static const char* hex = "0123456789abcdef";
    error = "single-copy offer expected, got ";
    for (size_t i = 0; i < 8; i++) error += {hex[offer[i] >> 4], hex[offer[i] & 15]};
    return false;
  }
  const bool ring = (offer[5] & kOffersRing) != 0;
  if (offer[6] != 0 || offer[7] != 0 || (!ring && (offer[36] != 0 || offer[37] != 0 || offer[38] != 0 || offer[39] != 0))) {
    error = "single-copy offer whose bytes 6..7, or 36..39 without a ring, are not zero";
    return false;
  }
  if (ring && OfferedRing(offer) < 0) {
    error = "single-copy offer naming a ring descriptor above 2^31";
    return false;
  }
  return true;
}

bool OffersMemory(const uint8_t* offer) { return (offer[5] & kOffersMemory) != 0; }

int OfferedRing(const uint8_t* offer) {
  if ((offer[5] & kOffersRing) == 0) return -1;
  const uint32_t fd = GetLittleEndian<uint32_t>(offer + 36);
  return fd > uint32_t(INT32_MAX) ? -1 : int(fd);
}

SenderProcess::~SenderProcess() {
  if (pidfd_ >= 0) close(pidfd_);
}

bool SenderProcess::Verify(const uint8_t* offer, const uint8_t* challenge, int link_fd, bool reading) {
  const Whereabouts& here = Here();
  if (!reading || (offer[5] & (kOffersMemory | kOffersRing)) == 0 || !here.known) return false;
  if (memcmp(offer + 8, here.boot_id, sizeof here.boot_id) != 0 || GetLittleEndian<uint64_t>(offer + 24) != here.network) return false;
  const uint32_t pid = GetLittleEndian<uint32_t>(offer + 32);
  if (pid == 0 || pid > uint32_t(INT32_MAX)) return false;
  // The checks below are of the process this pidfd holds: if it is gone by their end, its pid may
  // have named another meanwhile, and Alive() fails them.
  const int pidfd = int(syscall(SYS_pidfd_open, pid_t(pid), 0));
  if (pidfd < 0) return false;
  pid_ = pid_t(pid);
  pidfd_ = pidfd;
  uint8_t seen[kChallengeBytes];
  bool holds_challenge = SameUser(pid_) && Read(GetLittleEndian<uint64_t>(offer + 40), seen, sizeof seen) == ssize_t(sizeof seen);
  for (size_t i = 0; i < kChallengeBytes; i++) holds_challenge = holds_challenge && seen[i] == ProbeOf(challenge[i]);
  const uint64_t socket = holds_challenge ? PeerSocketInode(link_fd) : 0;
  if (socket != 0 && HoldsSocket(pid_, socket) && Alive()) return true;
  close(pidfd_);
  pidfd_ = -1;
  pid_ = -1;
  return false;
}

ssize_t SenderProcess::Read(uint64_t address, uint8_t* into, size_t size) const {
  iovec local{into, size};
  iovec remote{reinterpret_cast<void*>(uintptr_t(address)), size};
  const ssize_t got = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
  // Bytes read from the pid are the verified process's only if it still lives after the read: a
  // pid passes to another process only once its own is gone.
  if (got >= 0 && !Alive()) {
    // Nor do they stay in the caller's memory: they may be another process's.
    memset(into, 0, size_t(got));
    errno = ESRCH;
    return -1;
  }
  return got;
}

bool SenderProcess::Alive() const {
  // A pidfd becomes readable once its process has ended.
  pollfd ended{pidfd_, POLLIN, 0};
  int ready = 0;
  do {
    ready = poll(&ended, 1, 0);
  } while (ready < 0 && errno == EINTR);
  return ready == 0;
}

PtracerGrant::PtracerGrant() {
  std::lock_guard<std::mutex> lock(ptracer_mutex);
  // Under Yama's scope 0 any process of this user may read it already, under 2 and 3 none may
  // whatever it allows, and without Yama the call means nothing: only scope 1 needs it.
  if (ptracer_grants++ == 0 && YamaScope() == 1) ptracer_set = prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) == 0;
}

PtracerGrant::~PtracerGrant() {
  std::lock_guard<std::mutex> lock(ptracer_mutex);
  if (--ptracer_grants == 0 && ptracer_set) {
    prctl(PR_SET_PTRACER, 0, 0, 0, 0);
    ptracer_set = false;
  }
}

std::string SingleCopyRefusal() {
  if (!Here().known) return "no /proc/sys/kernel/random/boot_id or /proc/self/ns/net to say which host this is";
  const int pidfd = int(syscall(SYS_pidfd_open, getpid(), 0));
  if (pidfd < 0) return std::string("pidfd_open: ") + strerror(errno);
  close(pidfd);
  const uint64_t source = 0x5eed;
  uint64_t target = 0;
  iovec local{&target, sizeof target};
  iovec remote{const_cast<uint64_t*>(&source), sizeof source};
  const ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  if (got != ssize_t(sizeof target)) return std::string("process_vm_readv: ") + (got < 0 ? strerror(errno) : "short read");
  return target == source ? "" : "process_vm_readv: read other bytes than were there";
}

void EncodeRange(const uint8_t* data, size_t size, uint8_t* record) {
  PutLittleEndian<uint64_t>(record, uint64_t(reinterpret_cast<uintptr_t>(data)));
  PutLittleEndian<uint64_t>(record + 8, uint64_t(size));
}

void DecodeRange(const uint8_t* record, uint64_t& address, uint64_t& size) {
  address = GetLittleEndian<uint64_t>(record);
  size = GetLittleEndian<uint64_t>(record + 8);
}

}  // namespace rxccl
