// Single copy between ranks of one host (docs/protocol.md 9.9, "Single copy"): a receiver reads a
// large payload straight out of its sender's memory with process_vm_readv (Linux cross memory
// attach, as Open MPI's shared-memory transport does) instead of both paying a copy into and out
// of the kernel's TCP buffers. The sender's data link carries where the bytes are; the receiver
// answers each range once it has read it, after which the sender may change that memory.
//
// Whether a link does so is agreed once per link: its sender writes an offer (who and where it is,
// and a probe word of its memory) as the link's first bytes, and its receiver answers with one
// byte, 1 only where it is on the same kernel and network namespace and actually read the probe.
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
//   0..3 "GX1C", 4 version (1), 5 flags (bit 0: it offers its memory), 6..7 zero,
//   8..23 the kernel's boot id, 24..31 its network namespace's inode, 32..35 its pid, 36..39 zero,
//   40..47 the address of its probe word, 48..55 the probe word's value.
constexpr size_t kOfferBytes = 56;
// A range of the sender's memory: its address, then its length (u64 each, little-endian).
constexpr size_t kRangeBytes = 16;
// What a receiver answers to an offer: single copy, or payloads inline; and to each range it read.
constexpr uint8_t kAnswerInline = 0, kAnswerReads = 1, kRangeRead = 1;

// This process's offer, `offering` or not. Offering also lets processes of this user read this
// process's memory where Yama would allow only its ancestors (prctl PR_SET_PTRACER_ANY, as Open MPI
// does): without it no peer could.
void BuildOffer(bool offering, uint8_t* offer);

// Whether `offer` (kOfferBytes) is well formed; else `error` says why.
bool OfferValid(const uint8_t* offer, std::string& error);

// The pid to read the offering sender's memory from, or -1 where this process would not or cannot:
// `reading` off, no offer, another kernel or network namespace (another "host", which these are
// taken to be), a pid not of this user, or the probe word not readable as offered (another pid
// namespace, no permission).
pid_t ReadableSender(const uint8_t* offer, bool reading);

// A range record for `size` bytes at `data`.
void EncodeRange(const uint8_t* data, size_t size, uint8_t* record);
void DecodeRange(const uint8_t* record, uint64_t& address, uint64_t& size);

}  // namespace rxccl
