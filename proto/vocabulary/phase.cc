#include "proto/vocabulary/phase.h"

#include <array>

#include "proto/vocabulary/word_table.h"

namespace handoff {
namespace {

using vocabulary_internal::ColumnOf;

// Every phase, once.
struct PhaseWord {
  Phase phase;
  v1::RolloutStatus::Phase wire;
  std::string_view name;
  std::string_view label;
};
constexpr std::array<PhaseWord, 14> kPhaseWords = {{
    {Phase::kIdle, v1::RolloutStatus::IDLE, "idle", "idle"},
    {Phase::kPreparing, v1::RolloutStatus::PREPARING, "preparing", "preparing"},
    {Phase::kMigrating, v1::RolloutStatus::MIGRATING, "migrating", "migrating"},
    {Phase::kFinalizing, v1::RolloutStatus::FINALIZING, "finalizing", "finalizing"},
    {Phase::kRollingBack, v1::RolloutStatus::ROLLING_BACK, "rolling-back", "rolling_back"},
    {Phase::kDone, v1::RolloutStatus::DONE, "done", "done"},
    {Phase::kHalted, v1::RolloutStatus::HALTED, "halted", "halted"},
    {Phase::kPaused, v1::RolloutStatus::PAUSED, "paused", "paused"},
    {Phase::kWaiting, v1::RolloutStatus::WAITING, "waiting", "waiting"},
    {Phase::kStuck, v1::RolloutStatus::STUCK, "stuck", "stuck"},
    {Phase::kStopping, v1::RolloutStatus::STOPPING, "stopping", "stopping"},
    {Phase::kSwitching, v1::RolloutStatus::SWITCHING, "switching", "switching"},
    {Phase::kStarting, v1::RolloutStatus::STARTING, "starting", "starting"},
    {Phase::kMovingWorkers, v1::RolloutStatus::MOVING_WORKERS, "moving-workers",
     "moving_workers"},
}};

}  // namespace

v1::RolloutStatus::Phase ToProto(Phase phase) {
  return ColumnOf(kPhaseWords, &PhaseWord::phase, phase, &PhaseWord::wire, v1::RolloutStatus::PHASE_UNSPECIFIED);
}

std::string_view PhaseName(v1::RolloutStatus::Phase phase) {
  return ColumnOf(kPhaseWords, &PhaseWord::wire, phase, &PhaseWord::name, std::string_view("-"));
}

std::string_view PhaseLabel(v1::RolloutStatus::Phase phase) {
  return ColumnOf(kPhaseWords, &PhaseWord::wire, phase, &PhaseWord::label, std::string_view());
}

}  // namespace handoff
