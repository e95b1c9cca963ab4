#include "proto/vocabulary/strategy.h"

#include <array>

#include "proto/vocabulary/word_table.h"

namespace handoff {
namespace {

using vocabulary_internal::FindWord;
using vocabulary_internal::OptionalColumnOf;

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
  const Word* word = FindWord(kWords, &Word::strategy, strategy);
  return word != nullptr ? *word : kWords[0];  // a value outside the enum: the default
}

}  // namespace

std::string_view StrategyName(Strategy strategy) { return WordOf(strategy).name; }

std::optional<Strategy> StrategyNamed(std::string_view name) {
  return OptionalColumnOf(kWords, &Word::name, name, &Word::strategy);
}

v1::Strategy ToProto(Strategy strategy) { return WordOf(strategy).wire; }

std::optional<Strategy> FromProto(v1::Strategy strategy) {
  return OptionalColumnOf(kWords, &Word::wire, strategy, &Word::strategy);
}

Strategy PathOf(Strategy strategy) {
  return strategy == Strategy::kReplace ? Strategy::kLeaderMigration : strategy;
}

}  // namespace handoff
