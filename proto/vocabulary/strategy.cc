#include "proto/vocabulary/strategy.h"

#include <array>

#include "proto/vocabulary/word_table.h"

namespace handoff {
namespace {

using vocabulary_internal::FindWord;
using vocabulary_internal::OptionalColumnOf;

// Every strategy, once.
struct StrategyWord {
  Strategy strategy;
  v1::Strategy wire;
  std::string_view name;
};
constexpr std::array<StrategyWord, 3> kStrategyWords = {{
    {Strategy::kLeaderMigration, v1::STRATEGY_LEADER_MIGRATION, "leader-migration"},
    {Strategy::kDowntime, v1::STRATEGY_DOWNTIME, "downtime"},
    {Strategy::kReplace, v1::STRATEGY_REPLACE, "replace"},
}};

const StrategyWord& WordOf(Strategy strategy) {
  const StrategyWord* word = FindWord(kStrategyWords, &StrategyWord::strategy, strategy);
  return word != nullptr ? *word : kStrategyWords[0];  // a value outside the enum: the default
}

}  // namespace

std::string_view StrategyName(Strategy strategy) { return WordOf(strategy).name; }

std::optional<Strategy> StrategyNamed(std::string_view name) {
  return OptionalColumnOf(kStrategyWords, &StrategyWord::name, name, &StrategyWord::strategy);
}

v1::Strategy ToProto(Strategy strategy) { return WordOf(strategy).wire; }

std::optional<Strategy> FromProto(v1::Strategy strategy) {
  return OptionalColumnOf(kStrategyWords, &StrategyWord::wire, strategy, &StrategyWord::strategy);
}

Strategy PathOf(Strategy strategy) {
  return strategy == Strategy::kReplace ? Strategy::kLeaderMigration : strategy;
}

}  // namespace handoff
