// Single copy (single_copy.h) on a session's data links: what each link agreed, and the part of a
// collective's messages that goes by it. Sending on a link whose receiver reads in place, a
// message's header and the ranges of its payload go through a queue (the outbox) instead of the
// payload, each range counted sent once the receiver answers it. Receiving, a link of this host
// starts with its sender's offer, which this rank challenges and answers; a payload read in place
// comes as range records, each read out of the sender's memory and answered by a byte back.
//
// What it knows: the agreement's bytes and their order, range records and answers, and a
// transfer's messages (program_executor.h) as far as it moves them. What it does not: when a link
// is ready (the data links poll it: data_links.h), headers and their checks, how an offer's facts
// are verified (single_copy.h). single_copy.{h,cc} hold the protocol's pieces and the calls on
// another process, with no link in sight; this file is where they meet a transfer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "link_io.h"
#include "program_executor.h"
#include "shared_memory_links.h"
#include "single_copy.h"

namespace rxccl {

// What single copy has in flight on one transfer of a collective.
struct SingleCopyTransfer {
  // Sending: bytes for the socket (a message's header, its ranges) and how many went; the ranges
  // not answered yet (their message, their length), oldest first; bytes answered.
  std::vector<uint8_t> outbox;
  size_t outbox_sent = 0;
  std::deque<std::pair<size_t, size_t>> unanswered;
  size_t answered_total = 0;
  // Receiving: the range being read (where in the sender's memory, bytes left), and the record of
  // the next one as far as it has come.
  uint64_t range_address = 0;
  size_t range_left = 0;
  uint8_t range[kRangeBytes] = {};
  size_t range_got = 0;
};

// The single-copy agreements of a session's data links, one each way per link (peer * rails +
// rail), and the calls that move a transfer's messages by them. The fds passed in are the data
// links' (data_links.h): a transfer's send link carries its messages and brings the receiver's
// answers back, its receive link the other way round.
class SingleCopyLinks {
 public:
  // Every link agreed inline until `Offer` starts one with the agreement. single_copy: whether this
  // rank offers and reads memory. `shared` hears each agreement's word on its ring (it outlives this).
  SingleCopyLinks(int world_size, int rails, bool single_copy, SharedMemoryLinks& shared);

  // Writes this rank's offer as the first bytes of `link`, a link to a peer of this host, on its
  // send descriptor `send_fd`, naming where it will hold the receiver's challenge and the ring
  // `shared` offers on the link (a link of another host is agreed inline from the start). `peer`
  // names the link in the error.
  void Offer(size_t link, int send_fd, int peer);
  // What went wrong writing an offer (the session cannot use that link), else empty.
  const std::string& SetupError() const { return setup_error_; }
  // The links agreed to single copy so far: sending, and receiving. For tests and diagnostics,
  // between collectives.
  std::vector<int> Agreed(bool sending) const;

  // Sending. Nothing but the echo of the receiver's challenge goes before its answer to this rank's
  // offer (a link of this host): it says how payloads go.
  bool AwaitsAnswer(const Transfer& t) const { return links_[t.link].answer < 0; }
  // Whether message payloads of `size` bytes go by single copy on the transfer's link.
  bool SendsInPlace(const Transfer& t, size_t size) const { return size >= kSingleCopyBytes && links_[t.link].answer > 0 && (links_[t.link].answer & kAnswerReads) != 0; }
  // Queues the transfer's next message's header, if due, and the range of its payload produced so
  // far (the outbox is empty here: the caller wrote it).
  void Announce(Transfer& t, SingleCopyTransfer& s);
  // Reads what the receiver sent back on `send_fd`: its challenge (then queues its echo), its answer
  // to the offer, and one byte per range it read (those bytes count as sent). False when the
  // collective is over (`outcome`).
  bool ReadAnswers(ProgramRun& run, Transfer& t, SingleCopyTransfer& s, int send_fd, Outcome& outcome);

  // Receiving. Whether the sender's offer and echo are still to be read on the transfer's link
  // (they come before its first message).
  bool OfferDue(const Transfer& t) const { return links_[t.link].offer_due; }
  // Whether bytes for the sender (the challenge, the answer, a byte per range read) wait to go.
  bool Owes(const Transfer& t) const { return !links_[t.link].owed.empty(); }
  // Whether message payloads of `size` bytes come by single copy on the transfer's link.
  bool ReadsInPlace(const Transfer& t, size_t size) const { return size >= kSingleCopyBytes && links_[t.link].reads; }
  // Reads the sender's offer, then its echo, from `receive_fd`, and answers them.
  bool ReadOffer(const Transfer& t, int receive_fd, Outcome& outcome);
  // One piece of the payload due (at most kStreamBytes: the folds and sends move in between): its
  // range's record first, `waiting` while it has not all come.
  bool ReadRange(ProgramRun& run, Transfer& t, SingleCopyTransfer& s, int receive_fd, Outcome& outcome, bool& waiting);
  // Writes what this rank owes the sender on `receive_fd`, as far as the socket takes it.
  bool WriteOwed(const Transfer& t, int receive_fd, Outcome& outcome);

 private:
  // What a data link has agreed about single copy, kept for the session. Held in place (links_
  // never grows): `probe` is memory this rank's offer names.
  struct Agreement {
    // Sending: kAnswerInline, or on a link of this host -1 until the receiver answers this rank's
    // offer, then its bits (kAnswerReads, kAnswerMapped).
    int answer = kAnswerInline;
    // Sending: the receiver's challenge as far as it has come, where this rank's offer said it
    // would hold it (the receiver reads it back from this process before it answers).
    uint8_t probe[kChallengeBytes] = {};
    size_t probe_got = 0;
    // Receiving: the challenge this rank wrote the sender; whether the agreement is still to be
    // read, how much of it has come (the offer, then the sender's echo of the challenge); the
    // process this rank reads the sender's ranges from or took its ring from, and whether it reads
    // the ranges in place (else payloads come inline).
    uint8_t challenge[kChallengeBytes] = {};
    bool offer_due = false;
    size_t offer_got = 0;
    uint8_t offer[kOfferBytes + kChallengeBytes] = {};
    SenderProcess sender;
    bool reads = false;
    // Receiving: bytes for the sender (the challenge, the answer, a byte per range read), written
    // up to owed_sent.
    std::vector<uint8_t> owed;
    size_t owed_sent = 0;
  };

  // Takes back the ptracer grant once every peer of this host answered and none reads in place.
  void KeepPtracerOnlyIfRead();

  std::vector<Agreement> links_;
  const bool single_copy_;
  SharedMemoryLinks& shared_;
  // Held while this rank offers its memory to a peer of its host and until every such peer has
  // answered, then only while one of them reads it in place (single_copy.h).
  std::unique_ptr<PtracerGrant> ptracer_;
  std::string setup_error_;
};

}  // namespace rxccl
