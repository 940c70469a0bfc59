// One read or one write on a data link, never blocking, and how a collective on the links ends
// when something goes wrong (Outcome). What the data links (data_links.h) and single copy's side of
// them (single_copy_links.h) share: the socket calls and the names of their failures, no more. It
// knows no message, no schedule and no poll.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <sys/types.h>

#include "schedule_program.h"

namespace rxccl {

// How a collective on the data links ended. Anything but kDone ends the session (JavaScript aborts
// the job).
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

// `error` (errno) came of `what` on `peer`'s link (-1: none in particular).
void SetSystem(Outcome& outcome, int peer, int error, const char* what);

// `peer` broke the data plane's protocol (single copy): the collective fails naming it. False.
bool Broken(Outcome& outcome, int peer, std::string what);

// recv() of up to `size` bytes of `peer`'s link `fd` into `into`: the bytes read, 0 when none are
// there yet, -1 when the link failed or closed (`outcome` says which).
ssize_t ReadLink(int fd, int peer, uint8_t* into, size_t size, Outcome& outcome);

// Writes `bytes` from `written` on to `peer`'s link `fd`, as far as its socket takes them (single
// copy's queues: a message's header and ranges, a receiver's answers). False when the link failed
// (`outcome`).
bool WriteQueued(int fd, const std::vector<uint8_t>& bytes, size_t& written, int peer, Outcome& outcome);

}  // namespace rxccl
