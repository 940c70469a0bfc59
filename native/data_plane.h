// The native data plane (docs/architecture.md, "The native data plane"): an executor of collective
// schedules (schedule_program.h) whose data phase a C++ thread drives over the session's data
// links, sockets JavaScript connected, authenticated and stopped reading (lib/transport/peer-mesh.ts).
// JavaScript writes the schedules and keeps the agreement's meaning, the errors' texts and the
// Observable API; this runs the bytes and the folds, and knows no algorithm.
//
// Every message on a data link is a 32-byte header (the mesh descriptor of the collective, with its
// sequence: docs/protocol.md 9.9) followed by the payload its descriptor implies. A receiver
// compares each header byte for byte with the one it sends itself, so any disagreement (operation,
// shape, sequence, a corrupt byte) stops the collective before a payload byte is read, and the
// peer's header goes back to JavaScript, which names both ranks and both descriptors.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

#include "codes.h"
#include "schedule_program.h"
#include "single_copy.h"
#include "spin_budget.h"

namespace rxccl {

constexpr size_t kDataHeaderBytes = 32;
// Where a header carries its message's label (ProgramSend::label), u32 little-endian: the bytes
// before it are the collective's, the same in each of its messages.
constexpr size_t kLabelOffset = 28;

// A message whose payload is at most this is read whole, header and payload, in one recv(): a
// copy of this many bytes costs less than a second system call.
constexpr size_t kStagedPayloadBytes = size_t(8) << 10;

// How a schedule ended. Anything but kDone ends the session (JavaScript aborts the job).
struct Outcome {
  enum class Kind { kDone, kAborted, kTimedOut, kMismatch, kPeerClosed, kSystem };
  Kind kind = Kind::kDone;
  // kMismatch, kPeerClosed, kSystem: the peer whose link it was.
  int peer = -1;
  // kMismatch: the link's rail, and the label of the message this rank expected there.
  int rail = 0;
  uint32_t label = 0;
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

// Everything one collective moves to and from one peer on one rail (a data link each way), in
// order, and how far each side has got.
struct Transfer {
  int peer = -1;
  int rail = 0;
  std::vector<Span> sends;     // header, payload, header, payload...
  std::vector<Span> receives;  // header, payload, header, payload...
  std::vector<Gate> send_after;   // per message: what produces its payload
  std::vector<size_t> receive_ids;  // per message: its receive in the program
  std::vector<size_t> send_ids;     // per message: its send in the program
  size_t sent = 0, sent_bytes = 0, received = 0, received_bytes = 0;
  // Bytes of `sends` that may go so far (a payload goes as its producer makes it), and gone; bytes
  // of `receives` come so far.
  size_t send_limit = 0, sent_total = 0, received_total = 0;
  // Single copy, sending: bytes for the socket (a message's header, its ranges) and how many went;
  // the ranges not answered yet (their message, their length), oldest first; bytes answered.
  std::vector<uint8_t> outbox;
  size_t outbox_sent = 0;
  std::deque<std::pair<size_t, size_t>> unanswered;
  size_t answered_total = 0;
  // Single copy, receiving: the range being read (where in the sender's memory, bytes left), and
  // the record of the next one as far as it has come.
  uint64_t range_address = 0;
  size_t range_left = 0;
  uint8_t range[kRangeBytes] = {};
  size_t range_got = 0;
};

// What a data link has agreed about single copy (single_copy.h), kept for the session. A link
// between ranks of one host (JavaScript names those peers) starts with the agreement; any other is
// agreed inline from the start. Held in place for the session (DataLinks::memory_ never grows):
// `probe` is memory this rank's offer names.
struct LinkMemory {
  // Sending: kAnswerInline, or on a link of this host -1 until the receiver answers this rank's
  // offer, then kAnswerInline or kAnswerReads.
  int answer = kAnswerInline;
  // Sending: the receiver's challenge as far as it has come, where this rank's offer said it would
  // hold it (the receiver reads it back from this process before it answers).
  uint8_t probe[kChallengeBytes] = {};
  size_t probe_got = 0;
  // Receiving: the challenge this rank wrote the sender; whether the agreement is still to be read,
  // how much of it has come (the offer, then the sender's echo of the challenge); the process this
  // rank reads the sender's ranges from (not verified: payloads come inline).
  uint8_t challenge[kChallengeBytes] = {};
  bool offer_due = false;
  size_t offer_got = 0;
  uint8_t offer[kOfferBytes + kChallengeBytes] = {};
  SenderProcess sender;
  // Receiving: bytes for the sender (the challenge, the answer, a byte per range read), written up
  // to owed_sent.
  std::vector<uint8_t> owed;
  size_t owed_sent = 0;
};

// A fold, its memory resolved, and how far it has got.
struct RunningFold {
  uint8_t* target = nullptr;
  std::vector<const uint8_t*> sources;
  size_t size = 0;
  std::vector<Gate> after;
  Op op = Op::kSum;
  uint64_t divisor = 1;
  size_t done = 0;
};

// One collective, prepared (DataLinks::Prepare) and then moved on (DataLinks::Advance) by the JS
// thread for a moment and, if its peers are late, by the engine's thread to its end. It owns its
// header, which its transfers point at: it stays where it was made (held by unique_ptr).
struct Collective {
  // The collective's header (label 0); each send's own, its label in place (the transfers' header
  // spans point into it: sized once, never grown); each receive's expected label.
  uint8_t header[kDataHeaderBytes] = {};
  std::vector<uint8_t> send_headers;
  std::vector<uint32_t> receive_labels;
  DType type = DType::kU8;
  size_t width = 1;
  std::vector<Transfer> transfers;
  // Payload bytes received so far, per receive of the program; sent (taken by the socket), per send.
  std::vector<size_t> received, sent;
  std::vector<RunningFold> folds;
  int64_t deadline_ns = 0;
  // Last progress: a wait spins for a while after it (SpinBudget), then sleeps.
  int64_t progressed_ns = 0;
  // The wait since then outlasted its spin.
  bool slept = false;
  // Payload bytes sent and received in all: a small collective is tried on the JS thread first.
  size_t bytes = 0;
};

// The data links of one session and the thread-side state that outlives a call.
class DataLinks {
 public:
  // send_fds[p * rails + r] carries this rank's data to rank p on rail r, recv_fds[p * rails + r]
  // brings p's (-1 at p == rank). wake_fd: readable once the session ends (abort, failure, close);
  // every wait watches it. spin_ns: how long a wait spins before it sleeps, < 0 adaptive (SpinBudget).
  // same_host: the peers on this rank's host, whose links start with the single-copy agreement
  // (this rank's offers written here); single_copy: whether this rank offers and reads memory.
  DataLinks(int rank, int world_size, int rails, std::vector<int> send_fds, std::vector<int> recv_fds, int wake_fd, int64_t spin_ns,
            const std::vector<int>& same_host, bool single_copy);

  // One collective at a time: the next is prepared only once the last is over. `input` and
  // `output` hold at least the program's input_bytes and output_bytes.
  std::unique_ptr<Collective> Prepare(const Program& program, const uint8_t* input, uint8_t* output, const uint8_t* header, int64_t timeout_ms);
  // Moves `collective` on until it is over (true; `outcome` says how) or `until_ns` has passed
  // (false: it goes on from where it is at the next call).
  bool Advance(Collective& collective, Outcome& outcome, int64_t until_ns);
  // The peers `collective` waits for: those whose data has not all come, else those not taking
  // this rank's. What a timeout names; the engine's thread also reports it while it waits.
  static std::vector<int> Missing(const Collective& collective);
  // The Missing peers none of whose transfers moved since `progress` (each transfer's bytes moved,
  // as this last saw them; updated): those the collective waits for in silence, not those still
  // sending or taking a large message slowly. What the engine's thread reports while it waits.
  static std::vector<int> Silent(const Collective& collective, std::vector<size_t>& progress);
  // The session ended (any thread): the running collective and every later one end "aborted"
  // before they send anything more. The wake descriptor tells a waiting poll(); this tells the
  // sends a collective tries before its first poll.
  void End() { ended_.store(true, std::memory_order_release); }
  // The links (p * rails + r) agreed to single copy so far: sending, and receiving. For tests and
  // diagnostics, between collectives.
  std::vector<int> SingleCopyLinks(bool sending) const;
  // What went wrong writing the offers (the session cannot use its links), else empty.
  const std::string& SetupError() const { return setup_error_; }

 private:
  // Runs every fold as far as its producers allow, then lets every send go as far as its own.
  void Settle(Collective& collective);
  enum class Direction { kSend, kReceive };
  // Sends or receives what the transfer's link takes now; any progress moves the folds and sends
  // on (Settle). False when the collective is over (`outcome` says how).
  bool Move(Collective& collective, Transfer& transfer, Direction direction, Outcome& outcome);
  bool Send(Collective& collective, Transfer& transfer, Outcome& outcome);
  bool Receive(Collective& collective, Transfer& transfer, Outcome& outcome);
  // Single copy (single_copy.h). Sending: queues a message's header and the ranges of its payload
  // produced so far; reads the receiver's challenge (then queues its echo) and answers. Receiving:
  // the sender's offer and echo, then one piece of a range (at most kStreamBytes: the folds and
  // sends move in between).
  void Announce(Transfer& transfer);
  bool ReadAnswers(Collective& collective, Transfer& transfer, Outcome& outcome);
  // Takes back the ptracer grant once every peer of this host answered and none reads in place.
  void KeepPtracerOnlyIfRead();
  bool ReadOffer(Transfer& transfer, Outcome& outcome);
  bool ReadRange(Collective& collective, Transfer& transfer, Outcome& outcome, bool& waiting);
  bool WriteOwed(const Transfer& transfer, Outcome& outcome);
  // Whether message payloads of `size` bytes go by single copy on the link, sending or receiving.
  bool SendsInPlace(const Transfer& t, size_t size) const { return size >= kSingleCopyBytes && memory_[Link(t)].answer == kAnswerReads; }
  bool ReadsInPlace(const Transfer& t, size_t size) const { return size >= kSingleCopyBytes && memory_[Link(t)].sender.verified(); }
  // recv() of up to `size` bytes of the transfer's link into `into`: the bytes read, 0 when none
  // are there yet, -1 when the link failed or closed (`outcome` says which).
  ssize_t ReadLink(const Transfer& transfer, uint8_t* into, size_t size, Outcome& outcome);
  // Whether a received header is the collective's own; else the outcome is a mismatch naming it.
  static bool HeaderMatches(const Collective& collective, const Transfer& transfer, const uint8_t* header, Outcome& outcome);
  // `bytes` more of the transfer's current receive have come.
  static void Took(Collective& collective, Transfer& transfer, size_t bytes);
  uint8_t* Scratch(size_t bytes);
  // A send or a receive moved: the wait before it tells the spin budget.
  void Progressed(Collective& collective);

  // The descriptor of a transfer's link, one way or the other.
  size_t Link(const Transfer& t) const { return size_t(t.peer * rails_ + t.rail); }
  int SendFd(const Transfer& t) const { return send_fds_[Link(t)]; }
  int ReceiveFd(const Transfer& t) const { return recv_fds_[Link(t)]; }

  const int rank_;
  const int world_size_;
  const int rails_;
  const std::vector<int> send_fds_;
  const std::vector<int> recv_fds_;
  const int wake_fd_;
  // Received headers, one per link (peer and rail), each checked as soon as it is complete.
  std::vector<uint8_t> headers_;
  // Scratch memory of the schedules, grown once and kept: fresh memory per call would cost page faults.
  std::vector<uint8_t> scratch_;
  SpinBudget spin_;
  std::atomic<bool> ended_{false};
  // Per link (peer * rails + rail): its single-copy agreement, one side each way.
  std::vector<LinkMemory> memory_;
  const bool single_copy_;
  // Held while this rank offers its memory to a peer of its host and until every such peer has
  // answered, then only while one of them reads it in place (single_copy.h).
  std::unique_ptr<PtracerGrant> ptracer_;
  std::string setup_error_;
  // A small message's header and payload, read in one call (Receive).
  std::vector<uint8_t> staged_ = std::vector<uint8_t>(kDataHeaderBytes + kStagedPayloadBytes);
};

int64_t MonotonicNs();

}  // namespace rxccl
