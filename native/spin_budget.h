// How long the native data plane spins (poll(0) + sched_yield) after a collective's last progress
// before it sleeps in poll(). Spinning is what makes small collectives fast: a sleeping rank is
// woken late, and where ranks outnumber cores its wake-ups cost the others CPU (Open MPI spins
// too). But a rank whose peer is late every call (it computes longer) burns the whole spin for
// nothing, every call.
//
// Fixed (GX1_SPIN_US=N): N microseconds after every progress, 0 sleeping at once.
// Adaptive (auto, the default): up to kAutoMaxNs, only while recent waits were that short. A
// wait of kLongWaitNs or more with fewer than kRecentWaits waits since the last (a peer late call
// after call, not one descheduled once in a while: where ranks outnumber cores that happens every
// few hundred waits) halves the spin, down to kAutoMinNs; a wait that outlasted the spin, slept,
// and still ended within kLongWaitNs doubles it back (spinning on would have caught it). So a
// rank whose peer is 20 ms late every call spins 50 us per call within a dozen calls, and a job
// whose arrivals are close keeps the whole spin.
#pragma once

#include <algorithm>
#include <cstdint>

namespace rxccl {

class SpinBudget {
 public:
  // Tens of milliseconds, not one or two: where ranks outnumber cores a peer is often descheduled
  // for a few milliseconds, and its arrival is still "close".
  static constexpr int64_t kAutoMaxNs = 20'000'000;
  static constexpr int64_t kAutoMinNs = 50'000;
  static constexpr int64_t kLongWaitNs = 5'000'000;
  static constexpr int kRecentWaits = 16;

  // fixed_ns < 0: adaptive.
  explicit SpinBudget(int64_t fixed_ns) : adaptive_(fixed_ns < 0), spin_ns_(fixed_ns < 0 ? kAutoMaxNs : fixed_ns) {}

  // How long a wait spins before it sleeps.
  int64_t spin_ns() const { return spin_ns_; }

  // A wait ended with progress after `waited_ns`; `slept`: it outlasted the spin.
  void Waited(int64_t waited_ns, bool slept) {
    if (!adaptive_) return;
    if (waited_ns >= kLongWaitNs) {
      if (waits_since_long_ < kRecentWaits) spin_ns_ = std::max(kAutoMinNs, spin_ns_ / 2);
      waits_since_long_ = 0;
      return;
    }
    waits_since_long_ = std::min(waits_since_long_ + 1, kRecentWaits);
    if (slept) spin_ns_ = std::min(kAutoMaxNs, spin_ns_ * 2);
  }

 private:
  const bool adaptive_;
  int64_t spin_ns_;
  // Short waits since the last long one (kRecentWaits: none recently).
  int waits_since_long_ = kRecentWaits;
};

}  // namespace rxccl
