// JavaScript entry points of rxccl_kernels.node. Offsets and counts are in elements; buffers are
// Uint8Arrays at any byte offset. Each kernel runs synchronously when its last argument is
// undefined, else on a worker thread with that argument as its completion callback (see
// kernel_worker.h). lib/kernels/addon.ts declares these signatures for TypeScript.
#include <napi.h>
#include <sched.h>

#include <algorithm>
#include <vector>

#include "args.h"
#include "data_plane_entry.h"
#include "dispatch.h"
#include "errors.h"
#include "kernel_simd.h"
#include "kernel_worker.h"
#include "result_memory.h"
#include "shared_memory_links.h"
#include "shared_memory_ring.h"
#include "single_copy.h"
#include "spin_budget.h"
#include "thread_pool.h"

namespace rxccl {
namespace {

// reduceSlices(dtype, op, input, inputOffset, count, slices, output, outputOffset, done?)
// output[0 .. count) = op over the `slices` slices of `count` elements laid end to end in input.
Napi::Value ReduceSlicesEntry(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ExpectArgumentCount(info, 8, 9);
  const DType type = DTypeArgument(info, 0);
  const Op op = OpArgument(info, 1, type);
  const size_t width = ElementWidth(type);
  const Bytes input = BytesArgument(info, 2, "input");
  const size_t input_offset = CountArgument(info, 3, "inputOffset");
  const size_t count = CountArgument(info, 4, "count");
  const size_t slices = CountArgument(info, 5, "slices");
  if (slices == 0) ThrowKernelError(env, "slices must be at least 1");
  const Bytes output = BytesArgument(info, 6, "output");
  const size_t output_offset = CountArgument(info, 7, "outputOffset");

  const size_t input_elements = CheckedProduct(env, count, slices, "count * slices");
  const uint8_t* source = ElementRange(env, input, input_offset, input_elements, width, "input");
  uint8_t* target = ElementRange(env, output, output_offset, count, width, "output");
  const size_t slice_bytes = count * width;
  const size_t input_bytes = input_elements * width;
  // Writing into slice 0 is safe (see ReduceSlices); any other overlap would feed results back in.
  if (target != source && Overlaps(target, slice_bytes, source, input_bytes)) {
    ThrowKernelError(env, "output overlaps the input somewhere other than exactly slice 0");
  }

  Job job;
  job.body = ReduceSlicesBody(type, op);
  job.source = source;
  job.slice_stride = slice_bytes;
  job.slices = slices;
  job.divisor = slices;
  job.target = target;
  job.count = count;
  job.bytes_read = input_bytes;
  return RunOrQueue(info, 8, job, {info[2], info[6]});
}

// reduceSpans(dtype, op, sources, output, count, divisor, done?)
// output[0 .. count) = op over the Uint8Arrays in `sources` (count elements each, anywhere), folded
// left in their order; avg divides the sum by `divisor`. The output may be any one source itself.
Napi::Value ReduceSpansEntry(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ExpectArgumentCount(info, 6, 7);
  const DType type = DTypeArgument(info, 0);
  const Op op = OpArgument(info, 1, type);
  const size_t width = ElementWidth(type);
  if (!info[2].IsArray() || info[2].As<Napi::Array>().Length() == 0) ThrowKernelError(env, "sources must be a non-empty array of Uint8Arrays");
  const Napi::Array list = info[2].As<Napi::Array>();
  const Bytes output = BytesArgument(info, 3, "output");
  const size_t count = CountArgument(info, 4, "count");
  const size_t divisor = CountArgument(info, 5, "divisor");
  if (divisor == 0) ThrowKernelError(env, "divisor must be at least 1");
  uint8_t* target = ElementRange(env, output, 0, count, width, "output");
  const size_t bytes = count * width;
  std::vector<const uint8_t*> bases(list.Length());
  std::vector<Napi::Value> held{info[3]};
  for (uint32_t i = 0; i < list.Length(); i++) {
    const Napi::Value entry = list.Get(i);
    bases[i] = ElementRange(env, BytesOf(env, entry, "source"), 0, count, width, "source");
    if (bases[i] != target && Overlaps(bases[i], bytes, target, bytes)) ThrowKernelError(env, "the output overlaps a source without being it");
    held.push_back(entry);
  }
  Job job;
  job.body = ReduceSlicesBody(type, op);
  job.slices = bases.size();
  job.divisor = divisor;
  job.target = target;
  job.count = count;
  job.bytes_read = bytes * bases.size();
  return RunOrQueue(info, 6, job, held, std::move(bases));
}

// accumulate(dtype, op, accumulator, accumulatorOffset, source, sourceOffset, count, done?)
// accumulator[i] = op(accumulator[i], source[i]) for `count` elements; avg accumulates a sum.
Napi::Value AccumulateEntry(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ExpectArgumentCount(info, 7, 8);
  const DType type = DTypeArgument(info, 0);
  const Op op = OpArgument(info, 1, type);
  const size_t width = ElementWidth(type);
  const Bytes accumulator = BytesArgument(info, 2, "accumulator");
  const size_t accumulator_offset = CountArgument(info, 3, "accumulatorOffset");
  const Bytes source = BytesArgument(info, 4, "source");
  const size_t source_offset = CountArgument(info, 5, "sourceOffset");
  const size_t count = CountArgument(info, 6, "count");

  uint8_t* target = ElementRange(env, accumulator, accumulator_offset, count, width, "accumulator");
  const uint8_t* from = ElementRange(env, source, source_offset, count, width, "source");
  const size_t bytes = count * width;
  // The same range is fine (element i only reads element i); a shifted overlap is order-dependent.
  if (target != from && Overlaps(target, bytes, from, bytes)) {
    ThrowKernelError(env, "accumulator and source overlap without being the same range");
  }

  Job job;
  job.body = AccumulateBody(type, op);
  job.source = from;
  job.target = target;
  job.count = count;
  job.bytes_read = 2 * bytes;
  return RunOrQueue(info, 7, job, {info[2], info[4]});
}

// divide(dtype, data, offset, count, divisor, done?): data[i] = data[i] / divisor (avg's finish).
Napi::Value DivideEntry(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ExpectArgumentCount(info, 5, 6);
  const DType type = DTypeArgument(info, 0);
  const size_t width = ElementWidth(type);
  const Bytes data = BytesArgument(info, 1, "data");
  const size_t offset = CountArgument(info, 2, "offset");
  const size_t count = CountArgument(info, 3, "count");
  const size_t divisor = CountArgument(info, 4, "divisor");
  if (divisor == 0) ThrowKernelError(env, "divisor must be at least 1");

  Job job;
  job.body = DivideBody(type);
  job.target = ElementRange(env, data, offset, count, width, "data");
  job.count = count;
  job.divisor = divisor;
  job.bytes_read = count * width;
  return RunOrQueue(info, 5, job, {info[1]});
}

// kernelThreads(): threads one large kernel splits across (RXCCL_KERNEL_THREADS or the CPUs).
Napi::Value KernelThreadsEntry(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), double(KernelThreads()));
}

// kernelSimd(): the vector instructions the kernel loops run on this CPU (kernel_simd.h).
Napi::Value KernelSimdEntry(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), KernelSimd());
}

// singleCopyRefusal(): why this process cannot take part in single copy, "" where it can as far as
// it alone decides (single_copy.h).
Napi::Value SingleCopyRefusalEntry(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), SingleCopyRefusal());
}

// yieldCpu(): sched_yield(), for a JavaScript loop that polls while others may want the core (the
// coordinator's busy window, lib/transport/busy-window.ts): the core stays awake for this process
// (a wake-up on a halted core costs tens of microseconds on a VM) without keeping it from others.
Napi::Value YieldCpuEntry(const Napi::CallbackInfo& info) {
  sched_yield();
  return info.Env().Undefined();
}

// spinBudgetTrace(spinUs, waitsUs): replays waits of these lengths (microseconds) through the data
// plane's spin budget (spin_budget.h), each slept where it outlasted the spin; returns the spin each
// wait had. The policy's exact behaviour, for tests: a real wait's length is the machine's.
Napi::Value SpinBudgetTraceEntry(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ExpectArgumentCount(info, 2, 2);
  if (!info[0].IsNumber()) ThrowKernelError(env, "spinUs must be a number");
  if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
    ThrowKernelError(env, "waitsUs must be a Float64Array");
  }
  const int64_t spin_us = info[0].As<Napi::Number>().Int64Value();
  Napi::Float64Array waits = info[1].As<Napi::Float64Array>();
  Napi::Float64Array spins = Napi::Float64Array::New(env, waits.ElementLength());
  SpinBudget budget(spin_us < 0 ? -1 : spin_us * 1000);
  for (size_t i = 0; i < waits.ElementLength(); i++) {
    const int64_t waited_ns = int64_t(waits[i] * 1000);
    spins[i] = double(budget.spin_ns()) / 1000;
    budget.Waited(waited_ns, waited_ns >= budget.spin_ns());
  }
  return spins;
}


// failSharedMemoryJoins(errno): every later ring this process's planes are offered is refused as if
// pidfd_getfd failed with errno (0: no longer), as under a seccomp filter (shared_memory_links.h).
Napi::Value FailSharedMemoryJoinsEntry(const Napi::CallbackInfo& info) {
  ExpectArgumentCount(info, 1, 1);
  if (!info[0].IsNumber()) ThrowKernelError(info.Env(), "errno must be a number");
  FailSharedMemoryJoins(info[0].As<Napi::Number>().Int32Value());
  return info.Env().Undefined();
}

// sharedMemoryRingTrace(steps): replays steps on one shared-memory ring (shared_memory_ring.h) held
// in this process's memory, writer and reader alike: {header, payload, bySingleCopy?} writes a
// message (its payload where PayloadPlace puts it on a link whose receiver reads in place, or not:
// in its slot, on the socket, or its first part in its slot and the rest due as fragments), answered true, or false where the ring is full or the
// last payload's fragments are still due; "fragment" writes the next fragment due, answered true,
// false where the ring is full, null where none is due; "read" takes the next entry, answered
// {header, where, payloadBytes, payload (the bytes in the slot)} for a message, {where: "fragment",
// payloadBytes, payload} for a fragment, or null where none has come; {expect: "message" |
// "fragment", payloadBytes, bySingleCopy?} takes it as a data link's reader would expecting that
// entry: answered as "read", or the mismatch's text (RingEntryMismatch); "reader sleeps" and "writer
// sleeps" ask whether that side may sleep (Sleep), then wake it. The ring's exact behaviour, for its
// property test.
Napi::Value SharedMemoryRingTraceEntry(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ExpectArgumentCount(info, 1, 1);
  if (!info[0].IsArray()) ThrowKernelError(env, "steps must be an array");
  const Napi::Array steps = info[0].As<Napi::Array>();
  const std::unique_ptr<SharedMemoryRing> ring = SharedMemoryRing::InMemory();
  Napi::Array answers = Napi::Array::New(env, steps.Length());
  const auto bytes = [&](const Napi::Value value, const char* name) {
    if (!value.IsTypedArray() || value.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) ThrowKernelError(env, std::string(name) + " must be a Uint8Array");
    return value.As<Napi::Uint8Array>();
  };
  static const char* const kPlaces[] = {"slot", "socket", "slots", "fragment"};
  // An entry as "read" answers it: its header (a message's), where, its length, the bytes in its slot.
  const auto read = [&](const RingMessage& message) {
    Napi::Object entry = Napi::Object::New(env);
    const bool fragment = message.where == kFragment;
    if (!fragment) entry.Set("header", Napi::Buffer<uint8_t>::Copy(env, message.header, kSlotHeaderBytes));
    entry.Set("where", kPlaces[message.where < 4 ? message.where : 3]);
    entry.Set("payloadBytes", double(message.payload_bytes));
    // The slot's own count, capped at the slot: the trace's writer is this process, but an expect step may be wrong.
    const size_t in_slot = std::min(fragment ? size_t(message.payload_bytes) : SlotBytes(message.payload_bytes, 0, message.where), kRingPayloadBytes);
    entry.Set("payload", Napi::Buffer<uint8_t>::Copy(env, message.payload, in_slot));
    return entry;
  };
  // The payload whose fragments are due, and how much of it went.
  std::vector<uint8_t> due;
  size_t due_sent = 0;
  for (uint32_t i = 0; i < steps.Length(); i++) {
    const Napi::Value step = steps.Get(i);
    if (step.IsString()) {
      const std::string what = step.As<Napi::String>().Utf8Value();
      if (what == "read") {
        const RingMessage message = ring->Next();
        if (message.header == nullptr) {
          answers.Set(i, env.Null());
          continue;
        }
        answers.Set(i, read(message));
        ring->Release();
      } else if (what == "fragment") {
        if (due_sent == due.size()) {
          answers.Set(i, env.Null());
        } else if (!ring->HasSpace()) {
          answers.Set(i, false);
        } else {
          const size_t fragment = SlotBytes(due.size(), due_sent, kPayloadInSlots);
          ring->WriteFragment(due.data() + due_sent, uint32_t(fragment));
          due_sent += fragment;
          answers.Set(i, true);
        }
      } else if (what == "reader sleeps" || what == "writer sleeps") {
        const bool reader = what == "reader sleeps";
        const bool sleeps = ring->Sleep(reader);
        if (sleeps) ring->Woken(reader, true);
        answers.Set(i, sleeps);
      } else {
        ThrowKernelError(env, "unknown step \"" + what + "\"");
      }
      continue;
    }
    if (!step.IsObject()) ThrowKernelError(env, "a step must be a string, {header, payload, bySingleCopy} or {expect, payloadBytes, bySingleCopy}");
    const Napi::Object write = step.As<Napi::Object>();
    if (write.Has("expect")) {
      // The next entry checked as a data link's reader checks it (RingEntryMismatch), then taken.
      const RingMessage message = ring->Next();
      if (message.header == nullptr) {
        answers.Set(i, env.Null());
        continue;
      }
      const bool fragment = write.Get("expect").ToString().Utf8Value() == "fragment";
      const size_t bytes = size_t(write.Get("payloadBytes").ToNumber().Int64Value());
      const uint32_t where = fragment ? kFragment : PayloadPlace(bytes, write.Get("bySingleCopy").ToBoolean().Value() && bytes >= kSingleCopyBytes);
      const std::string mismatch = RingEntryMismatch(message, fragment, bytes, where);
      answers.Set(i, mismatch.empty() ? Napi::Value(read(message)) : Napi::Value(Napi::String::New(env, mismatch)));
      ring->Release();
      continue;
    }
    const Napi::Uint8Array header = bytes(write.Get("header"), "header");
    const Napi::Uint8Array payload = bytes(write.Get("payload"), "payload");
    if (header.ByteLength() != kSlotHeaderBytes) ThrowKernelError(env, "header must be 32 bytes");
    if (!ring->HasSpace() || due_sent < due.size()) {
      answers.Set(i, false);
      continue;
    }
    // bySingleCopy: the link's receiver reads in place, so single copy carries payloads from its threshold.
    const uint32_t where = PayloadPlace(payload.ByteLength(), write.Get("bySingleCopy").ToBoolean().Value() && payload.ByteLength() >= kSingleCopyBytes);
    ring->Write(header.Data(), payload.Data(), uint32_t(payload.ByteLength()), where);
    due.assign(payload.Data(), payload.Data() + (where == kPayloadInSlots ? payload.ByteLength() : 0));
    due_sent = SlotBytes(due.size(), 0, where);
    answers.Set(i, true);
  }
  return answers;
}

}  // namespace
}  // namespace rxccl

namespace {

Napi::Object InitKernels(Napi::Env env, Napi::Object exports) {
  using namespace rxccl;
  exports.Set("reduceSlices", Napi::Function::New(env, ReduceSlicesEntry, "reduceSlices"));
  exports.Set("reduceSpans", Napi::Function::New(env, ReduceSpansEntry, "reduceSpans"));
  exports.Set("accumulate", Napi::Function::New(env, AccumulateEntry, "accumulate"));
  exports.Set("divide", Napi::Function::New(env, DivideEntry, "divide"));
  exports.Set("cancel", Napi::Function::New(env, Cancel, "cancel"));
  exports.Set("kernelThreads", Napi::Function::New(env, KernelThreadsEntry, "kernelThreads"));
  exports.Set("kernelSimd", Napi::Function::New(env, KernelSimdEntry, "kernelSimd"));
  exports.Set("singleCopyRefusal", Napi::Function::New(env, SingleCopyRefusalEntry, "singleCopyRefusal"));
  exports.Set("yieldCpu", Napi::Function::New(env, YieldCpuEntry, "yieldCpu"));
  exports.Set("spinBudgetTrace", Napi::Function::New(env, SpinBudgetTraceEntry, "spinBudgetTrace"));
  exports.Set("failSharedMemoryJoins", Napi::Function::New(env, FailSharedMemoryJoinsEntry, "failSharedMemoryJoins"));
  exports.Set("sharedMemoryRingTrace", Napi::Function::New(env, SharedMemoryRingTraceEntry, "sharedMemoryRingTrace"));
  exports.Set("allocateResult", Napi::Function::New(env, AllocateResult, "allocateResult"));
  exports.Set("resultPoolBytes", Napi::Function::New(env, ResultPoolBytes, "resultPoolBytes"));
  exports.Set("releaseResultPool", Napi::Function::New(env, ReleaseResultPool, "releaseResultPool"));
  exports.Set("DataPlane", DefineDataPlane(env));
  return exports;
}

}  // namespace

NODE_API_MODULE(rxccl_kernels, InitKernels)
