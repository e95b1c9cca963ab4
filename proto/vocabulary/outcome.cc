#include "proto/vocabulary/outcome.h"

#include <array>

#include "proto/vocabulary/word_table.h"

namespace handoff {
namespace {

using vocabulary_internal::ColumnOf;

// Every outcome a move can have, once.
struct OutcomeWord {
  v1::CommandResult::Outcome outcome;
  std::string_view name;
  std::string_view label;
};
constexpr std::array<OutcomeWord, 5> kOutcomeWords = {{
    {v1::CommandResult::SUCCEEDED, "succeeded", "succeeded"},
    {v1::CommandResult::REFUSED, "refused", "refused"},
    {v1::CommandResult::ROLLED_BACK, "rolled back", "rolled_back"},
    {v1::CommandResult::NEEDS_ATTENTION, "needs attention", "needs_attention"},
    {v1::CommandResult::INTERRUPTED, "interrupted", "interrupted"},
}};

}  // namespace

std::string_view OutcomeName(v1::CommandResult::Outcome outcome) {
  return ColumnOf(kOutcomeWords, &OutcomeWord::outcome, outcome, &OutcomeWord::name,
                  std::string_view("unknown outcome"));
}

std::string_view MoveOutcomeLabel(v1::CommandResult::Outcome outcome) {
  return ColumnOf(kOutcomeWords, &OutcomeWord::outcome, outcome, &OutcomeWord::label, std::string_view("unknown"));
}

bool FailedVerification(const v1::CommandResult& result) {
  return result.outcome() == v1::CommandResult::ROLLED_BACK ||
         (result.outcome() == v1::CommandResult::NEEDS_ATTENTION &&
          !result.move().rollback_failure().empty());
}

bool UndoneByAgent(const v1::CommandResult& result) {
  return result.outcome() == v1::CommandResult::ROLLED_BACK;
}

}  // namespace handoff
