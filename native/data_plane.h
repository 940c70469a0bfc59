// The native data plane (docs/architecture.md, "The native data plane"): collectives whose data
// phase a C++ thread drives over the session's data links, sockets JavaScript connected,
// authenticated and stopped reading (lib/transport/peer-mesh.ts). JavaScript keeps the agreement's
// meaning, the errors' texts and the Observable API; this runs the bytes.
//
// Every message on a data link is a 32-byte header (the mesh descriptor of the collective, with its
// sequence: docs/protocol.md 9.9) followed by the payload its descriptor implies. A receiver
// compares each header byte for byte with the one it sends itself, so any disagreement (operation,
// shape, sequence, a corrupt byte) stops the collective before a payload byte is read, and the
// peer's header goes back to JavaScript, which names both ranks and both descriptors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codes.h"

namespace rxccl {

constexpr size_t kDataHeaderBytes = 32;

// How a schedule ended. Anything but kDone ends the session (JavaScript aborts the job).
struct Outcome {
  enum class Kind { kDone, kAborted, kTimedOut, kMismatch, kPeerClosed, kSystem };
  Kind kind = Kind::kDone;
  // kMismatch, kPeerClosed, kSystem: the peer whose link it was.
  int peer = -1;
  // kSystem, kPeerClosed (a reset): errno, and what was being done.
  int error = 0;
  std::string what;
  // kTimedOut: the peers whose data had not (all) come, else those not taking this rank's.
  std::vector<int> missing;
  // kMismatch: the header the peer sent.
  uint8_t header[kDataHeaderBytes] = {};
};

// Bytes of a caller's buffer that one message sends or receives.
struct Span {
  uint8_t* data;
  size_t size;
};

// One all-reduce (or reduce-scatter), fully resolved on the JS thread.
struct AllReduceJob {
  bool pairwise = false;  // reduce-scatter + all-gather between every pair; else all-pairs
  // Only the pairwise schedule's reduce-scatter: `output` gets this rank's reduced segment alone
  // (count / W elements; it may be that segment of `input`).
  bool scatter = false;
  DType type = DType::kU8;
  Op op = Op::kSum;
  const uint8_t* input = nullptr;
  uint8_t* output = nullptr;  // may be `input` (in place)
  size_t count = 0;           // elements
  uint8_t header[kDataHeaderBytes] = {};
  int64_t timeout_ms = 0;
};

// One message each way between this rank and every peer, the shape of every collective that only
// moves data (broadcast, all-gather, gather, all-to-all) and of the header-only exchange (barrier,
// agreement): the header and `sends[p]` go to p, p's header and then `receives[p]` come from it.
// An empty span (or none: shorter vectors) is a header-only message. Receives land in place.
// A send may forward a receive (`forward_from[q] = f`: sends[q] is receives[f]), going on as far
// as it has arrived: a relay, as a chain broadcast's middle ranks are.
struct ExchangeJob {
  std::vector<Span> sends;        // by peer rank
  std::vector<Span> receives;     // by peer rank, disjoint from each other and from every send but a forward
  std::vector<int> forward_from;  // by peer rank: -1 (or none), or the peer whose receive the send forwards
  uint8_t header[kDataHeaderBytes] = {};
  int64_t timeout_ms = 0;
};

// Everything one collective moves to and from one peer, in order, and how far each side has got.
struct Transfer {
  int peer;
  std::vector<Span> sends;
  std::vector<Span> receives;  // header, payload, header, payload...
  size_t sent = 0, sent_bytes = 0, received = 0, received_bytes = 0;
  // Bytes of `sends` that may go so far (a reduced segment goes as it is reduced), and gone.
  size_t send_limit = SIZE_MAX, sent_total = 0;
};

// One collective, prepared (DataLinks::Prepare) and then moved on (DataLinks::Advance) by the JS
// thread for a moment and, if its peers are late, by the engine's thread to its end. It owns its
// header, which its transfers point at: it stays where it was made (held by unique_ptr).
struct Collective {
  uint8_t header[kDataHeaderBytes] = {};
  std::vector<Transfer> transfers;
  int64_t deadline_ns = 0;
  // Last progress: a wait spins for a while after it, then sleeps.
  int64_t progressed_ns = 0;
  // Payload bytes sent and received in all: a small collective is tried on the JS thread first.
  size_t bytes = 0;
  // After every receive that made progress (and once first): may raise send limits, and must
  // lift them all once every receive is done (streamed reduction, relays).
  std::function<void()> received;
  // Once every transfer is done (the all-pairs reduction).
  std::function<void()> complete;
};

// The data links of one session and the thread-side state that outlives a call.
class DataLinks {
 public:
  // send_fds[p] carries this rank's data to rank p, recv_fds[p] brings p's (-1 at p == rank).
  // wake_fd: readable once the session ends (abort, failure, close); every wait watches it.
  DataLinks(int rank, int world_size, std::vector<int> send_fds, std::vector<int> recv_fds, int wake_fd);

  // One collective at a time: the next is prepared only once the last is over.
  std::unique_ptr<Collective> Prepare(const AllReduceJob& job);
  std::unique_ptr<Collective> Prepare(const ExchangeJob& job);
  // Moves `collective` on until it is over (true; `outcome` says how, kDone once `complete` ran)
  // or `until_ns` has passed (false: it goes on from where it is at the next call).
  bool Advance(Collective& collective, Outcome& outcome, int64_t until_ns);

 private:
  // One message each way with every peer: header + send(peer) out, header + receive(peer) in.
  std::unique_ptr<Collective> AllPairs(const uint8_t* header, int64_t timeout_ms, const std::function<Span(int)>& send,
                                       const std::function<Span(int)>& receive);
  bool Send(Transfer& transfer, Outcome& outcome);
  bool Receive(Transfer& transfer, const uint8_t* expected_header, Outcome& outcome);
  uint8_t* Scratch(size_t bytes);

  const int rank_;
  const int world_size_;
  const std::vector<int> send_fds_;
  const std::vector<int> recv_fds_;
  const int wake_fd_;
  // Received headers, one per peer, checked once complete.
  std::vector<uint8_t> headers_;
  // Reduction inputs, grown once and kept: fresh memory per call would cost page faults.
  std::vector<uint8_t> scratch_;
};

int64_t MonotonicNs();

}  // namespace rxccl
