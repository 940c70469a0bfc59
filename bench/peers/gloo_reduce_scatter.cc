// Gloo's own reduce-scatter (gloo::ReduceScatterHalvingDoubling<float>, sum) on one host over
// loopback, for `rxccl bench --peers`: torch.distributed's Gloo backend has no reduce_scatter, so
// the peers' gloo_bench.py cannot measure one. Same method and row format as gloo_bench.py:
//
//   gloo_reduce_scatter --world 4 --ops reducescatter --sizes 8,1048576 --tag rxccl-bench
//
// forks `world` rank processes that meet through a gloo FileStore in a fresh temp folder and
// connect over TCP on 127.0.0.1. Its result is checked once, at a small size (wrongElements).
// Per size: the algorithm is built once (as Gloo's class-based algorithms are meant to be used),
// then W warm-up calls and S samples of "barrier; t0; B back-to-back calls; t1", per-call time
// (t1-t0)/B; a sample's time is the MAX over ranks; rank 0 prints the median / min / max over
// samples.
//
// Size = bytes of each rank's whole input (nccl-tests' reducescatter, as rxccl's plan.ts): count
// rounded down to a multiple of the world size, at least one element per rank; each rank gets
// count / world elements.
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct Arguments {
  int world = 2;
  std::vector<long> sizes{8, 4096, 65536, 1 << 20, 16 << 20, 64 << 20};
  std::string tag = "run1";
};

struct Plan {
  int warmup;
  int batch;
  int samples;
};

// gloo_bench.py's plan(nbytes): fewer calls for larger sizes.
Plan planFor(long bytes) {
  if (bytes <= 4096) return {50, 200, 11};
  if (bytes <= 65536) return {20, 50, 11};
  if (bytes <= (1 << 20)) return {5, 10, 11};
  if (bytes <= (16 << 20)) return {3, 2, 7};
  return {2, 1, 7};
}

// gloo_bench.py's TIME_BUDGET_S: per size, no further samples past this (at least 3 samples).
constexpr double kTimeBudgetSeconds = 30.0;

using ReduceFunction = void (*)(void*, const void*, const void*, size_t);

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double cpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto of = [](const timeval& time) { return static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_usec) * 1e-6; };
  return of(usage.ru_utime) + of(usage.ru_stime);
}

template <typename T>
void allreduceInPlace(const std::shared_ptr<gloo::Context>& context, std::vector<T>& values, ReduceFunction reduce) {
  gloo::AllreduceOptions options(context);
  options.setOutput(values.data(), values.size());
  options.setReduceFunction(reduce);
  gloo::allreduce(options);
}

void barrier(const std::shared_ptr<gloo::Context>& context) {
  gloo::BarrierOptions options(context);
  gloo::barrier(options);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

// The one correctness check: 1000 elements per rank, small enough that every send fits the
// socket's buffer at once. At tens of MiB, Gloo's ReduceScatterHalvingDoubling (Debian's 0.0~git20220518)
// can return wrong sums: a rank whose reduced slice is already its own copies it to the front of
// the buffer before waiting for its peer to finish reading that buffer's first half (at 64 MiB,
// 2 ranks on one core, rank 0 read rank 1's copied result). The timed calls sum zeros, which that
// copy cannot change, nor does it change what is sent: the times stand.
constexpr long kCheckElementsPerRank = 1000;

// Element i of `rank`'s input is i + rank: every sum is exact in f32 and says where it came from
// (a misplaced slice sums to other values). Returns this rank's wrong output elements.
long wrongElements(const std::shared_ptr<gloo::Context>& context, int rank, int world) {
  std::vector<float> buffer(kCheckElementsPerRank * world);
  gloo::ReduceScatterHalvingDoubling<float> algorithm(
      context, {buffer.data()}, static_cast<int>(buffer.size()), std::vector<int>(world, static_cast<int>(kCheckElementsPerRank)));
  for (size_t index = 0; index < buffer.size(); index++) buffer[index] = static_cast<float>(index + rank);
  barrier(context);
  algorithm.run();
  long wrong = 0;
  for (long index = 0; index < kCheckElementsPerRank; index++) {
    const long global = rank * kCheckElementsPerRank + index;
    if (buffer[index] != static_cast<float>(world * global + world * (world - 1) / 2)) wrong++;
  }
  return wrong;
}

// One rank: connects, then checks and measures every size. Rank 0 prints the rows.
int runRank(int rank, const Arguments& arguments, const std::string& storePath) {
  const int world = arguments.world;
  gloo::transport::tcp::attr loopback("127.0.0.1");
  auto device = gloo::transport::tcp::CreateDevice(loopback);
  auto connected = std::make_shared<gloo::rendezvous::Context>(rank, world);
  gloo::rendezvous::FileStore store(storePath);
  connected->connectFullMesh(store, device);
  const std::shared_ptr<gloo::Context> context = connected;

  std::vector<long> wrong{wrongElements(context, rank, world)};
  allreduceInPlace(context, wrong, static_cast<ReduceFunction>(&gloo::sum<long>));
  if (wrong[0] != 0) {
    if (rank == 0) {
      std::fprintf(stderr, "gloo reduce-scatter check failed at %d ranks: %ld of %ld elements wrong\n", world, wrong[0], kCheckElementsPerRank * world);
    }
    return 1;
  }

  for (const long requested : arguments.sizes) {
    const long elements = std::max(1L, requested / 4);
    const long perRank = std::max(1L, elements / world);
    const long count = perRank * world;
    const long bytes = count * 4;
    if (count > INT32_MAX) throw std::runtime_error("size " + std::to_string(requested) + " B is past gloo's int element count");

    // Zeros, as gloo_bench.py's buffers: the in-place sums stay zero call after call.
    std::vector<float> buffer(count);
    gloo::ReduceScatterHalvingDoubling<float> algorithm(
        context, {buffer.data()}, static_cast<int>(count), std::vector<int>(world, static_cast<int>(perRank)));
    // Every rank's buffers registered before the first call.
    barrier(context);

    const Plan plan = planFor(requested);
    for (int call = 0; call < plan.warmup; call++) algorithm.run();
    std::vector<double> times;
    const double cpuStart = cpuSeconds();
    const double start = seconds();
    for (int sample = 0; sample < plan.samples; sample++) {
      barrier(context);
      const double t0 = seconds();
      for (int call = 0; call < plan.batch; call++) algorithm.run();
      times.push_back((seconds() - t0) / plan.batch);
      // Outside the timed region: every rank agrees on stopping early.
      std::vector<double> over{seconds() - start > kTimeBudgetSeconds && sample >= 2 ? 1.0 : 0.0};
      allreduceInPlace(context, over, static_cast<ReduceFunction>(&gloo::max<double>));
      if (over[0] > 0) break;
    }
    const double wall = seconds() - start;
    // CPU cores busy during the samples, summed over ranks (every thread of each rank).
    std::vector<double> cpu{(cpuSeconds() - cpuStart) / wall};
    allreduceInPlace(context, cpu, static_cast<ReduceFunction>(&gloo::sum<double>));
    allreduceInPlace(context, times, static_cast<ReduceFunction>(&gloo::max<double>));

    if (rank == 0) {
      std::vector<double> us;
      for (const double time : times) us.push_back(time * 1e6);
      const double medianUs = median(us);
      const double algbw = bytes / (medianUs * 1e-6) / 1e9;
      const double busbw = algbw * (world - 1) / world;
      std::printf("gloo\t%d\treducescatter\t%ld\t%.1f\t%.1f\t%.1f\t%.3f\t%.3f\t%zux%d\t%s\t%.2f\n", world, bytes, medianUs,
                  *std::min_element(us.begin(), us.end()), *std::max_element(us.begin(), us.end()), algbw, busbw, us.size(), plan.batch,
                  arguments.tag.c_str(), cpu[0]);
      std::fflush(stdout);
    }
  }
  barrier(context);
  return 0;
}

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "gloo_reduce_scatter: %s\nusage: gloo_reduce_scatter [--world N] [--ops reducescatter] [--sizes B,B,...] [--tag T]\n", why.c_str());
  std::exit(2);
}

long positive(const std::string& text, const char* what) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 1) usage(std::string(what) + " must be a positive integer, got \"" + text + "\"");
  return value;
}

std::vector<std::string> commaList(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

Arguments parse(int argc, char** argv) {
  Arguments arguments;
  for (int index = 1; index < argc; index += 2) {
    const std::string flag = argv[index];
    if (index + 1 >= argc) usage(flag + " needs a value");
    const std::string value = argv[index + 1];
    if (flag == "--world") {
      arguments.world = static_cast<int>(positive(value, "--world"));
    } else if (flag == "--ops") {
      // The peers' benchmarks share one command line; this one knows a single collective.
      for (const auto& op : commaList(value))
        if (op != "reducescatter") usage("measures reducescatter only, not " + op);
    } else if (flag == "--sizes") {
      arguments.sizes.clear();
      for (const auto& size : commaList(value)) arguments.sizes.push_back(positive(size, "a size"));
    } else if (flag == "--tag") {
      arguments.tag = value;
    } else {
      usage("unknown flag " + flag);
    }
  }
  return arguments;
}

std::vector<pid_t> ranks;

// A stopped benchmark stops its ranks, and still removes its temp folder.
void stopRanks(int) {
  for (const pid_t rank : ranks) kill(rank, SIGTERM);
}

}  // namespace

int main(int argc, char** argv) {
  const Arguments arguments = parse(argc, argv);
  char folder[] = "/tmp/rxccl-gloo-reduce-scatter-XXXXXX";
  if (mkdtemp(folder) == nullptr) {
    std::perror("gloo_reduce_scatter: mkdtemp");
    return 1;
  }
  std::printf("#peer\tworld\top\tbytes\tmedian_us\tmin_us\tmax_us\talgbw_GBps\tbusbw_GBps\tsamples\ttag\tcpu_cores\n");
  // Flushed before forking, or every rank would print it again.
  std::fflush(stdout);

  // Reserved first: the signal handler reads this list while the loop below fills it.
  ranks.reserve(arguments.world);
  struct sigaction stop{};
  stop.sa_handler = stopRanks;
  sigaction(SIGTERM, &stop, nullptr);
  sigaction(SIGINT, &stop, nullptr);
  for (int rank = 0; rank < arguments.world; rank++) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("gloo_reduce_scatter: fork");
      stopRanks(0);
      break;
    }
    if (pid == 0) {
      // A rank never outlives the benchmark, even one killed with SIGKILL.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      signal(SIGTERM, SIG_DFL);
      signal(SIGINT, SIG_DFL);
      int status = 1;
      try {
        status = runRank(rank, arguments, folder);
      } catch (const std::exception& error) {
        std::fprintf(stderr, "gloo_reduce_scatter rank %d: %s\n", rank, error.what());
      }
      std::fflush(stdout);
      _exit(status);
    }
    ranks.push_back(pid);
  }

  int failed = 0;
  for (size_t left = ranks.size(); left > 0;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    left--;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      // One rank down: the others would wait for it until gloo's timeout.
      if (failed++ == 0) stopRanks(0);
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(folder, ignored);
  return failed == 0 && static_cast<int>(ranks.size()) == arguments.world ? 0 : 1;
}
