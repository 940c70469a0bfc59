// The data links of one session (docs/architecture.md, "The native data plane"): sockets
// JavaScript connected, authenticated and stopped reading (lib/transport/peer-mesh.ts), one each
// way per peer and rail. This moves a collective's messages over them without blocking: sendmsg()
// as far as each socket takes them and as far as their payloads are produced, recv() straight into
// their place (a small message staged whole), poll() over every link and the session's wake
// descriptor, spinning a while after progress before it sleeps (spin_budget.h), until the
// collective is done, its deadline passes or the session ends.
//
// Every message is a 32-byte header, then its payload (schedule_program.h). A receiver compares
// each header byte for byte with the one it sends itself, so any disagreement (operation, shape,
// sequence, a corrupt byte) stops the collective before a payload byte is read, and the peer's
// header goes back to JavaScript, which names both ranks and both descriptors.
//
// What it knows: sockets, their readiness, headers and time. What it does not: what the messages
// and folds are, or when a payload may go (the program's executor, program_executor.h, which it
// tells of every move); single copy's agreements and ranges (single_copy_links.h, which it hands a
// link's turn to where they apply); the rings of links agreed to shared memory (shared_memory_links.h:
// it routes a header there, and waits on a ring's doorbell as on a socket); JavaScript
// (data_plane_entry.cc holds the thread and the calls).
#pragma once

#include <poll.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "link_io.h"
#include "program_executor.h"
#include "schedule_program.h"
#include "shared_memory_links.h"
#include "single_copy_links.h"
#include "spin_budget.h"

namespace rxccl {

// A message whose payload is at most this is read whole, header and payload, in one recv(): a
// copy of this many bytes costs less than a second system call.
constexpr size_t kStagedPayloadBytes = size_t(8) << 10;

// One collective, prepared (DataLinks::Prepare) and then moved on (DataLinks::Advance) by the JS
// thread for a moment and, if its peers are late, by the engine's thread to its end (handed over
// as a unique_ptr).
struct Collective {
  // Its program bound to the caller's memory, and how far it has got.
  ProgramRun run;
  // Per transfer of the run, what single copy has in flight on it.
  std::vector<SingleCopyTransfer> single_copy;
  int64_t deadline_ns = 0;
  // Last progress: a wait spins for a while after it (SpinBudget), then sleeps.
  int64_t progressed_ns = 0;
  // The wait since then outlasted its spin.
  bool slept = false;
};

// The data links of one session and the thread-side state that outlives a call.
class DataLinks {
 public:
  // send_fds[p * rails + r] carries this rank's data to rank p on rail r, recv_fds[p * rails + r]
  // brings p's (-1 at p == rank). wake_fd: readable once the session ends (abort, failure, close);
  // every wait watches it. spin_ns: how long a wait spins before it sleeps, < 0 adaptive (SpinBudget).
  // same_host: the peers on this rank's host, whose links start with the single-copy agreement
  // (this rank's offers written here); single_copy: whether this rank offers and reads memory;
  // shared_memory: whether it offers and maps rings. A link not open yet is -1 both ways: `Open`
  // adds it once its peer is first needed (links on demand).
  DataLinks(int rank, int world_size, int rails, std::vector<int> send_fds, std::vector<int> recv_fds, int wake_fd, int64_t spin_ns,
            const std::vector<int>& same_host, bool single_copy, bool shared_memory);

  // Adds link `link` (peer * rails + rail), not open yet, both ways, as the constructor takes an
  // open one (its offer written where the peer is on this host). Between collectives only. What
  // went wrong writing its offer, else empty.
  std::string Open(size_t link, int send_fd, int recv_fd);
  // Whether link `link` is open (the constructor had it, or `Open` added it).
  bool IsOpen(size_t link) const { return send_fds_[link] >= 0; }

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
  // How many times a wait looked at the links' descriptors (poll()) so far: a collective whose
  // every message crosses a ring it finds ready makes none (diagnostics, tests).
  uint64_t polls() const { return polls_.load(std::memory_order_relaxed); }
  // The links' single-copy agreements: what went wrong writing the offers, which links agreed.
  const SingleCopyLinks& single_copy() const { return single_copy_; }
  // The links' rings: which links agreed, and why the others did not.
  const SharedMemoryLinks& shared_memory() const { return shared_; }

 private:
  enum class Direction { kSend, kReceive };
  // Sends or receives what transfer `i`'s link takes now; any progress moves the folds and sends
  // on (ProgramRun::Settle). False when the collective is over (`outcome` says how).
  bool Move(Collective& collective, size_t i, Direction direction, Outcome& outcome);
  bool Send(ProgramRun& run, Transfer& transfer, SingleCopyTransfer& single_copy, Outcome& outcome);
  bool Receive(ProgramRun& run, Transfer& transfer, SingleCopyTransfer& single_copy, Outcome& outcome);
  // The transfer's next message from its link's ring, header checked (`waiting`: none has come).
  bool ReceiveFromRing(ProgramRun& run, Transfer& transfer, Outcome& outcome, bool& waiting);
  // Whether a ring of the transfer's link has a message to take, or a slot for its next one with
  // nothing of single copy's queued before it, now.
  bool RingReady(const Transfer& transfer, const SingleCopyTransfer& single_copy) const;
  // Watches the rings' memory until one of `collective`'s transfers is RingReady (true), or
  // `until_ns` passes or the session ends (false).
  bool WatchRings(const Collective& collective, int64_t until_ns) const;
  // Moves every transfer whose socket poll() found ready (`ready`: Advance's, revents 0 where it
  // did not look), or whose ring is ready, or whose range is being read. False when the collective
  // is over (`outcome`).
  bool MoveReady(Collective& collective, const std::vector<pollfd>& ready, Outcome& outcome);
  // Whether a received header is the collective's own; else the outcome is a mismatch naming it.
  static bool HeaderMatches(const ProgramRun& run, const Transfer& transfer, const uint8_t* header, Outcome& outcome);
  // A send or a receive moved: the wait before it tells the spin budget.
  void Progressed(Collective& collective);

  // The descriptor of a transfer's link, one way or the other.
  int SendFd(const Transfer& t) const { return send_fds_[t.link]; }
  int ReceiveFd(const Transfer& t) const { return recv_fds_[t.link]; }

  const int rails_;
  // By link, -1 until it is open.
  std::vector<int> send_fds_;
  std::vector<int> recv_fds_;
  // By peer: on this rank's host (its links start with the single-copy agreement).
  std::vector<char> same_host_;
  const int wake_fd_;
  ProgramExecutor executor_;
  SpinBudget spin_;
  std::atomic<bool> ended_{false};
  std::atomic<uint64_t> polls_{0};
  // Before single_copy_, whose offers name its rings.
  SharedMemoryLinks shared_;
  // After shared_, whose rings its offers name.
  SingleCopyLinks single_copy_;
  // A small message's header and payload, read in one call (Receive).
  std::vector<uint8_t> staged_ = std::vector<uint8_t>(kDataHeaderBytes + kStagedPayloadBytes);
};

int64_t MonotonicNs();

}  // namespace rxccl
