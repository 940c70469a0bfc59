#include "program_executor.h"

#include <string.h>

#include <algorithm>
#include <cstdint>

#include "dispatch.h"
#include "run_job.h"

namespace rxccl {
namespace {

// A payload being produced (a relay's, a reduced segment's) goes on at least this much at a time
// (unless it is the end).
constexpr size_t kForwardBytes = size_t(256) << 10;

}  // namespace

ProgramExecutor::ProgramExecutor(int world_size, int rails)
    : rails_(rails), headers_(size_t(world_size) * size_t(rails) * kDataHeaderBytes) {}

uint8_t* ProgramExecutor::Scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

void ProgramExecutor::Prepare(const Program& program, const uint8_t* input, uint8_t* output, const uint8_t* header, ProgramRun& run) {
  memcpy(run.header, header, kDataHeaderBytes);
  run.type = program.type;
  run.width = program.width;
  uint8_t* const memories[3] = {const_cast<uint8_t*>(input), output, Scratch(program.scratch_bytes)};
  auto at = [&](const SpanRef& ref) { return Span{memories[ref.memory] + ref.offset, ref.size}; };
  // One transfer per link the program uses, in its order (Program::links). Each message is the
  // header, then its payload.
  run.transfers.reserve(program.links.size());
  for (const Program::Link& link : program.links) {
    Transfer& t = run.transfers.emplace_back();
    t.peer = link.peer;
    t.rail = link.rail;
    t.link = size_t(link.peer * rails_ + link.rail);
  }
  run.send_headers.resize(program.sends.size() * kDataHeaderBytes);
  for (size_t s = 0; s < program.sends.size(); s++) {
    const ProgramSend& send = program.sends[s];
    Transfer& t = run.transfers[send.link];
    uint8_t* own = run.send_headers.data() + s * kDataHeaderBytes;
    memcpy(own, run.header, kDataHeaderBytes);
    PutLabel(own, send.label);
    t.sends.insert(t.sends.end(), {Span{own, kDataHeaderBytes}, at(send.span)});
    t.send_after.push_back(run.Gates(send.after));
    t.send_ids.push_back(s);
    run.bytes += send.span.size;
  }
  run.sent.assign(program.sends.size(), 0);
  for (size_t r = 0; r < program.receives.size(); r++) {
    const ProgramReceive& receive = program.receives[r];
    Transfer& t = run.transfers[receive.link];
    t.receives.insert(t.receives.end(), {Span{headers_.data() + t.link * kDataHeaderBytes, kDataHeaderBytes}, at(receive.span)});
    t.receive_ids.push_back(r);
    run.bytes += receive.span.size;
  }
  run.received.assign(program.receives.size(), 0);
  run.receive_labels.reserve(program.receives.size());
  for (const ProgramReceive& receive : program.receives) run.receive_labels.push_back(receive.label);
  for (const ProgramFold& fold : program.folds) {
    RunningFold running;
    running.target = at(fold.target).data;
    for (const SpanRef& source : fold.sources) running.sources.push_back(at(source).data);
    running.size = fold.target.size;
    for (const Producers& producers : fold.after) running.after.push_back(run.Gates(producers));
    running.op = fold.op;
    running.divisor = fold.divisor;
    run.folds.push_back(std::move(running));
  }
}

void ProgramRun::Settle() {
  auto progress = [this](const Gate& gate) -> size_t {
    switch (gate.kind) {
      case Gate::Kind::kNone: return SIZE_MAX;
      case Gate::Kind::kReceive: return received[gate.index];
      case Gate::Kind::kFold: return folds[gate.index].done;
      case Gate::Kind::kSend: return sent[gate.index];
    }
    return 0;
  };
  // How far a send's or fold's producers got, as bytes of its own: their bytes laid end to end
  // from its skip on, each part counting once the parts before it are whole; every part whole:
  // all of it.
  auto concatenated = [&](const GateRange& range) -> size_t {
    size_t total = 0;
    for (size_t p = range.first; p < range.first + range.count; p++) {
      const Gate& gate = gates[p];
      const size_t made = std::min(gate.size, progress(gate));
      total += made;
      if (made < gate.size) return total > range.skip ? total - range.skip : 0;
    }
    return SIZE_MAX;
  };
  // Folds, as far as every producer of theirs has got: a MiB or more at a time (a kernel call
  // per few kilobytes would cost more than it overlaps), or whatever is left at the end. A fold may
  // wait for another, so this goes round until nothing moves.
  for (bool moved = true; moved;) {
    moved = false;
    for (RunningFold& fold : folds) {
      if (fold.done == fold.size) continue;
      size_t ready = fold.size;
      for (const GateRange& range : fold.after) ready = std::min(ready, concatenated(range));
      ready -= ready % width;
      if (ready <= fold.done || (ready < fold.size && ready - fold.done < kStreamBytes)) continue;
      const size_t offset = fold.done;
      if (fold.sources.size() == 1 && fold.op != Op::kAvg) {
        if (fold.sources[0] != fold.target) memmove(fold.target + offset, fold.sources[0] + offset, ready - offset);
      } else {
        std::vector<const uint8_t*> bases(fold.sources);
        for (const uint8_t*& base : bases) base += offset;
        Job kernel;
        kernel.body = ReduceSlicesBody(type, fold.op);
        kernel.slice_bases = bases.data();
        kernel.slices = bases.size();
        kernel.divisor = fold.divisor;
        kernel.target = fold.target + offset;
        kernel.count = (ready - offset) / width;
        kernel.bytes_read = (ready - offset) * bases.size();
        RunJob(kernel);
      }
      fold.done = ready;
      moved = true;
    }
  }
  // Sends: every message whose payload is there may go; one still being produced goes as far as
  // its producer, moving on a quarter MiB or more at a time (or to its end), and holds back the
  // messages behind it on its link.
  for (Transfer& t : transfers) {
    size_t limit = 0;
    bool held = false;
    for (size_t m = 0; m < t.send_after.size(); m++) {
      const size_t payload = t.sends[2 * m + 1].size;
      limit += kDataHeaderBytes;
      const size_t produced = std::min(payload, concatenated(t.send_after[m]));
      if (produced < payload) {
        const size_t header_end = limit;
        limit += produced;
        if (t.send_limit < header_end) t.send_limit = header_end;
        if (limit >= t.send_limit + kForwardBytes) t.send_limit = limit;
        held = true;
        break;
      }
      limit += payload;
    }
    if (!held) t.send_limit = SIZE_MAX;
  }
}

}  // namespace rxccl
