// The executor of a compiled program (schedule_program.h): one collective's messages and folds
// bound to its caller's memory (ProgramExecutor::Prepare), how far each has got, and what may move
// next (ProgramRun::Settle): each fold runs as far as its producers got, each send may go as far
// as what produces its payload. The data links (data_links.h) move the bytes and say how far they
// got (ReceiveMoved, SendMoved, SendTaken); this decides the rest.
//
// Like the program it runs, it knows no collective (every algorithm is JavaScript's), and it knows
// no socket, poll, thread or clock: a file of its own, beside the program, so what a schedule's
// dependencies mean reads without the I/O that serves them. To it a message is a header and a
// payload on a link, in the program's order; single copy (single_copy_links.h) is one more way a
// payload leaves, counted sent once its receiver says it took it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codes.h"
#include "schedule_program.h"

namespace rxccl {

// A fold runs at least this much at a time (unless it is the end): a kernel call per few
// kilobytes would cost more than it overlaps. Whatever moves a payload in pieces of its own (single
// copy's reads) takes this much at a time too, so the folds and sends move in between.
constexpr size_t kStreamBytes = size_t(1) << 20;

// Bytes of a caller's buffer that one message sends or receives.
struct Span {
  uint8_t* data;
  size_t size;
};

// What produces one send's payload or fold's target (Producers): parts [first, first + count) of
// ProgramRun::gates, its byte j being byte skip + j of their bytes laid end to end (no part: there
// from the start).
struct GateRange {
  size_t first = 0, count = 0, skip = 0;
};

// Everything one collective moves to and from one peer on one rail (a data link each way), in
// order, and how far each side has got.
struct Transfer {
  int peer = -1;
  int rail = 0;
  // Its link's place among the session's, peer * rails + rail.
  size_t link = 0;
  std::vector<Span> sends;     // header, payload, header, payload...
  std::vector<Span> receives;  // header, payload, header, payload...
  std::vector<GateRange> send_after;  // per message: what produces its payload
  std::vector<size_t> receive_ids;  // per message: its receive in the program
  std::vector<size_t> send_ids;     // per message: its send in the program
  size_t sent = 0, sent_bytes = 0, received = 0, received_bytes = 0;
  // Bytes of `sends` that may go so far (a payload goes as its producer makes it), and gone; bytes
  // of `receives` come so far.
  size_t send_limit = 0, sent_total = 0, received_total = 0;
};

// A fold, its memory resolved, and how far it has got.
struct RunningFold {
  uint8_t* target = nullptr;
  std::vector<const uint8_t*> sources;
  size_t size = 0;
  std::vector<GateRange> after;
  Op op = Op::kSum;
  uint64_t divisor = 1;
  size_t done = 0;
};

// One run of a program over its caller's memory, as the data links move it on.
struct ProgramRun {
  // The collective's header (label 0); each send's own, its label in place (the transfers' header
  // spans point into it: sized once, never grown); each receive's expected label.
  uint8_t header[kDataHeaderBytes] = {};
  std::vector<uint8_t> send_headers;
  std::vector<uint32_t> receive_labels;
  DType type = DType::kU8;
  size_t width = 1;
  // One per link the program uses, in its order (Program::links).
  std::vector<Transfer> transfers;
  // Payload bytes received so far, per receive of the program; sent, per send (taken by the
  // socket, or by single copy's receiver: the memory it read may change).
  std::vector<size_t> received, sent;
  std::vector<RunningFold> folds;
  // Every send's and fold's producers, one after the other (GateRange).
  std::vector<Gate> gates;
  // Payload bytes sent and received in all.
  size_t bytes = 0;

  // Runs every fold as far as its producers allow, then lets every send go as far as its own.
  void Settle();

  // `producers`' parts appended to `gates`, as the range they take there.
  GateRange Gates(const Producers& producers) {
    const GateRange range{gates.size(), producers.parts.size(), producers.skip};
    gates.insert(gates.end(), producers.parts.begin(), producers.parts.end());
    return range;
  }

  // The label of the message due next on the transfer's link.
  uint32_t ExpectedLabel(const Transfer& t) const { return receive_labels[t.receive_ids[t.received / 2]]; }

  // `bytes` more of the transfer's current receive (a header or a payload) have come.
  void ReceiveMoved(Transfer& t, size_t bytes) {
    t.received_bytes += bytes;
    t.received_total += bytes;
    if (t.received % 2 == 1) received[t.receive_ids[t.received / 2]] = t.received_bytes;
  }

  // `bytes` more of the transfer's sends, from its current one on, were taken by the socket.
  void SendMoved(Transfer& t, size_t bytes) {
    t.sent_total += bytes;
    while (t.sent < t.sends.size()) {
      const size_t left = t.sends[t.sent].size - t.sent_bytes;
      if (bytes < left) {
        t.sent_bytes += bytes;
        break;
      }
      bytes -= left;
      if (t.sent % 2 == 1) sent[t.send_ids[t.sent / 2]] = t.sends[t.sent].size;
      t.sent++;
      t.sent_bytes = 0;
    }
    if (t.sent < t.sends.size() && t.sent % 2 == 1) sent[t.send_ids[t.sent / 2]] = t.sent_bytes;
  }

  // `bytes` more of the payload of the transfer's `message`th send were taken by its receiver
  // (single copy: it read them in place).
  void SendTaken(const Transfer& t, size_t message, size_t bytes) { sent[t.send_ids[message]] += bytes; }
};

// What the runs of a session's programs share, one run at a time: scratch memory, and where each
// link's received headers land.
class ProgramExecutor {
 public:
  ProgramExecutor(int world_size, int rails);

  // Binds `program` to `input` and `output` (holding at least its input_bytes and output_bytes)
  // and to `header`, the collective's: `run` (fresh) gets one transfer per link the program uses,
  // each message its header then its payload. The next run is prepared only once this one is over.
  void Prepare(const Program& program, const uint8_t* input, uint8_t* output, const uint8_t* header, ProgramRun& run);

 private:
  uint8_t* Scratch(size_t bytes);

  const int rails_;
  // Received headers, one per link (peer * rails + rail), each checked as soon as it is complete.
  std::vector<uint8_t> headers_;
  // Scratch memory of the programs, grown once and kept: fresh memory per call would cost page faults.
  std::vector<uint8_t> scratch_;
};

}  // namespace rxccl
