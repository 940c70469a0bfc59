// A collective's schedule as the native data plane runs it (lib/collectives/schedule/schedule.ts):
// the messages on each link and the folds, with the producers each waits for, over three memories
// bound at run time. JavaScript writes the schedule (every algorithm lives there) and encodes it
// once per shape (lib/collectives/schedule/plane-executor.ts `encodeProgram`); this decodes and checks it, and
// the data plane runs it on every call of that shape. No algorithm lives here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codes.h"
#include "little_endian.h"

namespace rxccl {

// What a send or fold waits for: a receive or a fold (what produces its bytes), or a send (done once
// its bytes have left, so memory it read may be overwritten). `size`: the producer's bytes.
struct Gate {
  enum class Kind : uint8_t { kNone = 0, kReceive = 1, kFold = 2, kSend = 3 };
  Kind kind = Kind::kNone;
  size_t index = 0;
  size_t size = 0;
};

// What a send's payload or a fold's target waits for: `parts` in order, its byte j being byte
// skip + j of their bytes laid end to end (one part of its size from byte 0, the common case; no
// part: there from the start).
struct Producers {
  std::vector<Gate> parts;
  size_t skip = 0;
};

// Bytes [offset, offset + size) of memory 0 (the caller's input), 1 (its output) or 2 (scratch).
struct SpanRef {
  int memory = 0;
  size_t offset = 0;
  size_t size = 0;
};

// Rails of data links per pair of ranks (GX1_P2P_RAILS' range).
constexpr int kMaxDataRails = 64;

// A message's label (docs/protocol.md 9.9, "Message labels"): which of the schedule's messages it
// is, written in its header's bytes 28..31 (any u32), so one that arrives where another is due is
// named, never folded in its place.
constexpr uint32_t kMaxLabel = UINT32_MAX;

// Every message is a header of kDataHeaderBytes (the mesh descriptor of the collective, with its
// sequence: docs/protocol.md 9.9) followed by its payload. The header carries the message's label
// at kLabelOffset, u32 little-endian: the bytes before it are the collective's, the same in each
// of its messages.
constexpr size_t kDataHeaderBytes = 32;
constexpr size_t kLabelOffset = 28;

inline void PutLabel(uint8_t* header, uint32_t label) { PutLittleEndian(header + kLabelOffset, label); }

inline uint32_t GetLabel(const uint8_t* header) { return GetLittleEndian<uint32_t>(header + kLabelOffset); }

struct ProgramSend {
  int peer = 0;
  int rail = 0;
  uint32_t label = 0;
  // Its link's place in Program::links.
  size_t link = 0;
  SpanRef span;
  Producers after;
};

struct ProgramReceive {
  int peer = 0;
  int rail = 0;
  uint32_t label = 0;
  // Its link's place in Program::links.
  size_t link = 0;
  SpanRef span;
};

// target = op over sources, folded left in order (avg: the sum divided by `divisor`); a single
// source with another op than avg is a copy.
struct ProgramFold {
  SpanRef target;
  std::vector<SpanRef> sources;
  std::vector<Producers> after;
  Op op = Op::kSum;
  uint64_t divisor = 1;
};

struct Program {
  DType type = DType::kU8;
  size_t width = 1;
  size_t scratch_bytes = 0;
  // The smallest input and output every span fits in.
  size_t input_bytes = 0, output_bytes = 0;
  std::vector<ProgramSend> sends;
  std::vector<ProgramReceive> receives;
  std::vector<ProgramFold> folds;
  // The (peer, rail) links the messages use, peers in the order rank + 1, rank + 2, ... (every
  // rank starts with a different one), rails in turn: the data plane's transfers, in this order.
  struct Link {
    int peer = 0;
    int rail = 0;
  };
  std::vector<Link> links;
};

// Decodes `length` numbers (plane-executor.ts `encodeProgram`) for `rank` of `world_size` ranks
// with `rails` data links per pair. On a malformed program returns false with `error` saying what.
bool DecodeProgram(const double* data, size_t length, int rank, int world_size, int rails, Program& program, std::string& error);

}  // namespace rxccl
