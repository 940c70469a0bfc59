#include "schedule_program.h"

#include <algorithm>
#include <cmath>

#include "dispatch.h"

namespace rxccl {
namespace {

constexpr double kMaxSafeInteger = 9007199254740991.0;

// Reads the encoding front to back; the first problem sticks.
class Reader {
 public:
  Reader(const double* data, size_t length) : data_(data), length_(length) {}

  size_t Count(const char* what) {
    if (!error_.empty()) return 0;
    if (at_ >= length_) return Fail(std::string("program ends before its ") + what);
    const double value = data_[at_++];
    if (!(value >= 0 && value <= kMaxSafeInteger && value == std::floor(value))) return Fail(std::string("program ") + what + " is not a count");
    return size_t(value);
  }

  size_t Fail(const std::string& what) {
    if (error_.empty()) error_ = what;
    return 0;
  }

  bool Finished() const { return at_ == length_; }
  const std::string& error() const { return error_; }

 private:
  const double* data_;
  size_t length_;
  size_t at_ = 0;
  std::string error_;
};

}  // namespace

bool DecodeProgram(const double* data, size_t length, int rank, int world_size, int rails, Program& program, std::string& error) {
  Reader in(data, length);
  const size_t type = in.Count("element type");
  if (type != 0 && (type < size_t(DType::kU8) || type > size_t(DType::kF64))) in.Fail("program element type is not 0 or 1..12");
  program.type = type == 0 ? DType::kU8 : DType(int(type));
  program.width = ElementWidth(program.type);
  program.scratch_bytes = in.Count("scratch bytes");
  auto peer = [&](const char* what) {
    const size_t value = in.Count(what);
    if (value >= size_t(world_size) || int(value) == rank) in.Fail(std::string("program ") + what + " is not another rank");
    return int(value);
  };
  auto rail = [&](const char* what) {
    const size_t value = in.Count(what);
    if (value >= size_t(rails)) in.Fail(std::string("program ") + what + " is not one of the job's rails (0.." + std::to_string(rails - 1) + ")");
    return int(value);
  };
  auto label = [&](const char* what) {
    const size_t value = in.Count(what);
    if (value > kMaxLabel) in.Fail(std::string("program ") + what + " is not a 32-bit label");
    return uint32_t(value);
  };
  auto span = [&](bool sized) {
    SpanRef ref;
    ref.memory = int(in.Count("memory"));
    if (ref.memory > 2) in.Fail("program memory is not 0, 1 or 2");
    ref.offset = in.Count("offset");
    if (sized) ref.size = in.Count("size");
    return ref;
  };
  auto gate_of = [&](size_t kind) {
    Gate g;
    g.kind = Gate::Kind(kind);
    g.index = in.Count("gate index");
    return g;
  };
  // A gate: kind 0 (none), 1..3 and its index (one producer), or 4, its skip, its part count and
  // (kind 1..3, index) per part.
  auto gate = [&]() {
    Producers producers;
    const size_t kind = in.Count("gate kind");
    if (kind > 4) in.Fail("program gate kind is not 0..4");
    if (kind != 4) {
      const Gate g = gate_of(std::min<size_t>(kind, 3));
      if (g.kind != Gate::Kind::kNone) producers.parts.push_back(g);
      return producers;
    }
    producers.skip = in.Count("gate skip");
    producers.parts.resize(std::min(in.Count("gate part count"), length));
    if (producers.parts.empty()) in.Fail("program gate of producers names none");
    for (Gate& g : producers.parts) {
      const size_t part = in.Count("gate part kind");
      if (part < 1 || part > 3) in.Fail("program gate part is not a receive, fold or send (kind 1..3)");
      g = gate_of(std::min<size_t>(std::max<size_t>(part, 1), 3));
    }
    return producers;
  };
  program.sends.resize(std::min(in.Count("send count"), length));
  for (ProgramSend& send : program.sends) {
    send.peer = peer("send peer");
    send.rail = rail("send rail");
    send.label = label("send label");
    send.span = span(true);
    send.after = gate();
  }
  program.receives.resize(std::min(in.Count("receive count"), length));
  for (ProgramReceive& receive : program.receives) {
    receive.peer = peer("receive peer");
    receive.rail = rail("receive rail");
    receive.label = label("receive label");
    receive.span = span(true);
  }
  program.folds.resize(std::min(in.Count("fold count"), length));
  for (ProgramFold& fold : program.folds) {
    fold.target = span(true);
    const size_t op = in.Count("fold op");
    if (op < size_t(Op::kSum) || op > size_t(Op::kBxor)) in.Fail("program fold op is not 1..8");
    fold.op = Op(int(op));
    fold.divisor = in.Count("fold divisor");
    if (fold.divisor == 0) in.Fail("program fold divisor is 0");
    fold.sources.resize(std::min(in.Count("fold source count"), length));
    if (fold.sources.empty()) in.Fail("program fold has no source");
    for (SpanRef& source : fold.sources) {
      source = span(false);
      source.size = fold.target.size;
    }
    fold.after.resize(std::min(in.Count("fold gate count"), length));
    for (Producers& g : fold.after) g = gate();
    const bool copy = fold.sources.size() == 1 && fold.op != Op::kAvg;
    if (!copy && ReduceSlicesBody(program.type, fold.op) == nullptr) in.Fail("program fold op is not defined on its element type");
    if (fold.target.size % program.width != 0) in.Fail("program fold is not whole elements");
  }
  if (in.error().empty() && !in.Finished()) in.Fail("program has numbers after its last fold");
  // Every gate names a producer that exists; every span fits its memory.
  auto valid = [&](const Gate& g) {
    switch (g.kind) {
      case Gate::Kind::kNone: return true;
      case Gate::Kind::kReceive: return g.index < program.receives.size();
      case Gate::Kind::kFold: return g.index < program.folds.size();
      case Gate::Kind::kSend: return g.index < program.sends.size();
    }
    return false;
  };
  auto fit = [&](const SpanRef& ref) {
    const size_t end = ref.offset + ref.size;
    if (end < ref.offset) return in.Fail("program span overflows"), void();
    if (ref.memory == 0) program.input_bytes = std::max(program.input_bytes, end);
    if (ref.memory == 1) program.output_bytes = std::max(program.output_bytes, end);
    if (ref.memory == 2 && end > program.scratch_bytes) in.Fail("program span lies outside its scratch");
  };
  // The bytes a producer makes (a send's: those it reads).
  auto size = [&](const Gate& g) {
    switch (g.kind) {
      case Gate::Kind::kReceive: return program.receives[g.index].span.size;
      case Gate::Kind::kFold: return program.folds[g.index].target.size;
      case Gate::Kind::kSend: return program.sends[g.index].span.size;
      default: return size_t(0);
    }
  };
  // Every part exists; the parts hold the dependent's bytes (`bytes` of them) from their skip on.
  auto check = [&](Producers& producers, size_t bytes, const char* what) {
    size_t produced = 0;
    for (Gate& g : producers.parts) {
      if (!valid(g)) return in.Fail(std::string("program ") + what + " waits for a producer it does not have"), void();
      g.size = size(g);
      produced += g.size;
    }
    if (!producers.parts.empty() && produced < producers.skip + bytes) in.Fail(std::string("program ") + what + " waits for producers of fewer bytes than it has");
    // The first part holds the first byte it waits for: the executor counts a part only once every
    // earlier one is whole, where the JS plane waits for the parts that hold its bytes alone.
    if (!producers.parts.empty() && producers.skip >= producers.parts.front().size && bytes > 0) {
      in.Fail(std::string("program ") + what + " waits for a first producer wholly before its bytes");
    }
  };
  for (ProgramSend& send : program.sends) {
    check(send.after, send.span.size, "send");
    fit(send.span);
  }
  for (const ProgramReceive& receive : program.receives) fit(receive.span);
  for (ProgramFold& fold : program.folds) {
    for (Producers& producers : fold.after) check(producers, fold.target.size, "fold");
    fit(fold.target);
    for (const SpanRef& source : fold.sources) fit(source);
  }
  error = in.error();
  if (!error.empty()) return false;
  // Decided once per program, not per call: which links it uses, in the order the plane serves them.
  const auto id = [rails](int peer, int rail) { return size_t(peer * rails + rail); };
  std::vector<size_t> place(size_t(world_size) * size_t(rails), SIZE_MAX);
  for (const ProgramSend& send : program.sends) place[id(send.peer, send.rail)] = 0;
  for (const ProgramReceive& receive : program.receives) place[id(receive.peer, receive.rail)] = 0;
  for (int k = 1; k < world_size; k++) {
    const int peer = (rank + k) % world_size;
    for (int rail = 0; rail < rails; rail++) {
      if (place[id(peer, rail)] == SIZE_MAX) continue;
      place[id(peer, rail)] = program.links.size();
      program.links.push_back({peer, rail});
    }
  }
  for (ProgramSend& send : program.sends) send.link = place[id(send.peer, send.rail)];
  for (ProgramReceive& receive : program.receives) receive.link = place[id(receive.peer, receive.rail)];
  return true;
}

}  // namespace rxccl
