#include "proto/vocabulary/strategy.h"

#include <array>

namespace handoff {
namespace {

// Every strategy, once.
struct Word {
  Strategy strategy;
  v1::Strategy wire;
  std::string_view name;
};
constexpr std::array<Word, 3> kWords = {{
    {Strategy::kLeaderMigration, v1::STRATEGY_LEADER_MIGRATION, "leader-migration"},
    {Strategy::kDowntime, v1::STRATEGY_DOWNTIME, "downtime"},
    {Strategy::kReplace, v1::STRATEGY_REPLACE, "replace"},
}};

const Word& WordOf(Strategy strategy) {
  for (const Word& word : kWords) {
    if (word.strategy == strategy) return word;
  }
  return kWords[0];  // a value outside the enum is taken for the default
}

}  // namespace

std::string_view StrategyName(Strategy strategy) { return WordOf(strategy).name; }

std::optional<Strategy> StrategyNamed(std::string_view name) {
  for (const Word& word : kWords) {
    if (word.name == name) return word.strategy;
  }
  return std::nullopt;
}

v1::Strategy ToProto(Strategy strategy) { return WordOf(strategy).wire; }

std::optional<Strategy> FromProto(v1::Strategy strategy) {
  for (const Word& word : kWords) {
    if (word.wire == strategy) return word.strategy;
  }
  return std::nullopt;
}

Strategy PathOf(Strategy strategy) {
  return strategy == Strategy::kReplace ? Strategy::kLeaderMigration : strategy;
}

}  // namespace handoff
