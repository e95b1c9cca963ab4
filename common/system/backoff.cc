#include "common/system/backoff.h"

#include <algorithm>

namespace handoff {

Backoff::Backoff(absl::Duration initial, absl::Duration max)
    : initial_(std::max(initial, absl::Milliseconds(1))),
      max_(std::max(max, initial_)),
      step_(initial_) {}

absl::Duration Backoff::Next(double unit) {
  unit = std::clamp(unit, 0.0, 1.0);
  // Half the step is fixed and half is random: agents that lost the coordinator together spread
  // out, yet none retries in a tight loop.
  const absl::Duration wait = step_ / 2 + (step_ / 2) * unit;
  step_ = std::min(step_ * 2, max_);
  return wait;
}

void Backoff::Reset() { step_ = initial_; }

}  // namespace handoff
