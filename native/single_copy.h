// Single copy between ranks of one host (docs/protocol.md 9.9, "Single copy"): a receiver reads a
// large payload straight out of its sender's memory with process_vm_readv (Linux cross memory
// attach, as Open MPI's shared-memory transport does) instead of both paying a copy into and out
// of the kernel's TCP buffers. The sender's data link carries where the bytes are; the receiver
// answers each range once it has read it, after which the sender may change that memory.
//
// Whether a link does so is agreed once per link (revision 8). Its sender writes an offer (who and
// where it is, and the address where it will hold a challenge) as the link's first bytes; its
// receiver answers that with a fresh random challenge on the link's other direction; the sender
// reads it into that memory and echoes it; the receiver answers with one byte, 1 only where the
// process the offer names is the very one at the other end of this link: it holds this link's
// socket, and the challenge no third process has seen where the offer said. Everything in the offer
// is the sender's word; those two facts are not, so a rank cannot make its peer read (and send on)
// the memory of another process of the peer's user.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <sys/types.h>

namespace rxccl {

// Payloads of at least this many bytes go by single copy on a link agreed to it: below, waiting for
// the receiver's answer (a wake-up each way where ranks outnumber cores) costs more than the copies
// it saves (4 ranks on 2 cores: 64 KiB messages 10-50 % slower, 256 KiB level, 1 MiB 2-4x faster).
constexpr size_t kSingleCopyBytes = size_t(256) << 10;

// The offer a sender writes as its link's first bytes (little-endian):
//   0..3 "GX1C", 4 version (2), 5 flags (bit 0: it offers its memory; bit 1: it offers a
//   shared-memory ring, shared_memory_links.h), 6..7 zero, 8..23 the kernel's boot id, 24..31 its
//   network namespace's inode, 32..35 its pid, 36..39 its descriptor of the ring's segment (bit 1;
//   else zero), 40..47 the address of the kChallengeBytes where it will hold the receiver's challenge.
// Facts 8..35 and 40..47 are written where either flag is set: the receiver verifies the sender
// for either.
constexpr size_t kOfferBytes = 48;
// The challenge a receiver writes, once it has the offer, as the first bytes of its link's other
// direction (getrandom); the sender echoes it once it holds it.
constexpr size_t kChallengeBytes = 16;
// A range of the sender's memory: its address, then its length (u64 each, little-endian).
constexpr size_t kRangeBytes = 16;
// What a receiver answers to an offer, bits: it reads payloads in place (else they come inline),
// it mapped the ring offered; and to each range it read.
constexpr uint8_t kAnswerInline = 0, kAnswerReads = 1, kAnswerMapped = 2, kRangeRead = 1;

// What a sender holds in its probe for a byte of the receiver's challenge: its complement. A value
// that never crosses the link, so a process that only relays the link's bytes (a proxy holding the
// socket, socat, a port forward) never holds it in its buffers, and cannot pass for the sender.
constexpr uint8_t ProbeOf(uint8_t challenge_byte) { return uint8_t(~challenge_byte); }

// A fresh random challenge (kChallengeBytes, getrandom).
void NewChallenge(uint8_t* challenge);

// This process's offer, `offering` its memory or not, `ring_fd` its ring's segment (-1: none), naming
// `challenge` (where this process will hold the receiver's challenge; it must stay there until the
// receiver answered).
void BuildOffer(bool offering, int ring_fd, const uint8_t* challenge, uint8_t* offer);

// Whether a valid offer offers the sender's memory, and the ring segment's descriptor it names (-1: none).
bool OffersMemory(const uint8_t* offer);
int OfferedRing(const uint8_t* offer);

// Whether `offer` (kOfferBytes) is well formed; else `error` says why.
bool OfferValid(const uint8_t* offer, std::string& error);

// The process a receiver reads its sender's ranges from, once the offer is verified (Verify): its
// pid, and a pidfd of it, so that a read can tell the process is still the one verified (a pid
// names another process once its own is gone and reaped; a pidfd never does).
class SenderProcess {
 public:
  SenderProcess() = default;
  SenderProcess(const SenderProcess&) = delete;
  SenderProcess& operator=(const SenderProcess&) = delete;
  ~SenderProcess();

  // Whether the sender of the link received on `link_fd` is verified, having offered `offer` after
  // this rank wrote it `challenge` (then its ranges may be read in place, its ring taken): `reading`
  // on (this rank would read or map something the offer offers), a flag of the offer set, this kernel and
  // network namespace (another "host", which these are taken to be), a pid of this user that holds
  // the socket at the other end of `link_fd` and holds `challenge` at the address offered. Anything
  // else (a forged offer, another pid namespace, no permission, a seccomp filter) is false: the
  // link's payloads come inline.
  bool Verify(const uint8_t* offer, const uint8_t* challenge, int link_fd, bool reading);
  // Whether Verify succeeded: ranges are read from this process.
  bool verified() const { return pid_ > 0; }
  // Its pidfd, once verified: what the ring's segment is taken through (shared_memory_ring.h).
  int pidfd() const { return pidfd_; }
  // Reads `size` bytes at `address` of the sender into `into`: the bytes read, else -1 and errno
  // (ESRCH: the verified process is gone, even where its pid names another by now).
  ssize_t Read(uint64_t address, uint8_t* into, size_t size) const;

 private:
  bool Alive() const;
  pid_t pid_ = -1;
  int pidfd_ = -1;
};

// While one is held (a plane that offers its memory is open), where Yama's ptrace scope is 1 (only
// a process's ancestors may read it, and the ranks of a job are siblings), any process of this user
// may read this process's memory: prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY), as Open MPI does. The
// last one released takes it back (PR_SET_PTRACER 0). Process-wide: the planes of a process share it.
class PtracerGrant {
 public:
  PtracerGrant();
  PtracerGrant(const PtracerGrant&) = delete;
  PtracerGrant& operator=(const PtracerGrant&) = delete;
  ~PtracerGrant();
};

// Why this process cannot take part in single copy at all, "" where it can as far as it alone
// decides (`rxccl doctor`): it knows where it is (boot id, network namespace), and the calls a
// receiver makes are allowed, pidfd_open (Linux 5.3) and process_vm_readv, which a seccomp filter
// may refuse; each tried on itself. Yama's scope, which judges reading another process, is not.
std::string SingleCopyRefusal();

// A range record for `size` bytes at `data`.
void EncodeRange(const uint8_t* data, size_t size, uint8_t* record);
void DecodeRange(const uint8_t* record, uint64_t& address, uint64_t& size);

}  // namespace rxccl
