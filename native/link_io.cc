#include "link_io.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

namespace rxccl {

void SetSystem(Outcome& outcome, int peer, int error, const char* what) {
  // A peer that reset its connection, or whose process is no more (single copy), has gone (it died
  // or aborted): that is how it is named.
  const bool gone = error == ECONNRESET || error == EPIPE || error == ESRCH;
  outcome.kind = gone ? Outcome::Kind::kPeerClosed : Outcome::Kind::kSystem;
  outcome.peer = peer;
  outcome.error = error;
  outcome.what = std::string(what) + ": " + strerror(error);
}

bool Broken(Outcome& outcome, int peer, std::string what) {
  outcome.kind = Outcome::Kind::kSystem;
  outcome.peer = peer;
  outcome.error = EPROTO;
  outcome.what = std::move(what);
  return false;
}

ssize_t ReadLink(int fd, int peer, uint8_t* into, size_t size, Outcome& outcome) {
  const ssize_t got = recv(fd, into, size, MSG_DONTWAIT);
  if (got > 0) return got;
  if (got == 0) {
    outcome.kind = Outcome::Kind::kPeerClosed;
    outcome.peer = peer;
    return -1;
  }
  if (errno == EAGAIN || errno == EINTR) return 0;
  SetSystem(outcome, peer, errno, "receive");
  return -1;
}

bool WriteQueued(int fd, const std::vector<uint8_t>& bytes, size_t& written, int peer, Outcome& outcome) {
  while (written < bytes.size()) {
    const ssize_t wrote = send(fd, bytes.data() + written, bytes.size() - written, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (wrote < 0) {
      if (errno == EAGAIN || errno == EINTR) return true;
      SetSystem(outcome, peer, errno, "send");
      return false;
    }
    written += size_t(wrote);
  }
  return true;
}

}  // namespace rxccl
