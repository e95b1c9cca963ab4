// The vocabulary's tables (node_state.cc, phase.cc, strategy.cc, outcome.cc) are arrays of rows
// of one struct each; this finds a row by one of its columns. Internal to proto/vocabulary.
#ifndef HANDOFF_PROTO_VOCABULARY_WORD_TABLE_H_
#define HANDOFF_PROTO_VOCABULARY_WORD_TABLE_H_

#include <array>
#include <cstddef>
#include <optional>

namespace handoff::vocabulary_internal {

// The first row of `words` whose `column` equals `value`; null when none does.
template <typename Word, size_t N, typename Column, typename Value>
const Word* FindWord(const std::array<Word, N>& words, Column Word::*column, const Value& value) {
  for (const Word& word : words) {
    if (word.*column == value) return &word;
  }
  return nullptr;
}

// The `column` of the first row whose `key` column equals `value`; `otherwise` when none does.
template <typename Word, size_t N, typename Key, typename Value, typename Column>
Column ColumnOf(const std::array<Word, N>& words, Key Word::*key, const Value& value,
                Column Word::*column, Column otherwise) {
  const Word* word = FindWord(words, key, value);
  return word != nullptr ? word->*column : otherwise;
}

// The `column` of the first row whose `key` column equals `value`; nullopt when none does.
template <typename Word, size_t N, typename Key, typename Value, typename Column>
std::optional<Column> OptionalColumnOf(const std::array<Word, N>& words, Key Word::*key,
                                       const Value& value, Column Word::*column) {
  const Word* word = FindWord(words, key, value);
  if (word == nullptr) return std::nullopt;
  return word->*column;
}

}  // namespace handoff::vocabulary_internal

#endif  // HANDOFF_PROTO_VOCABULARY_WORD_TABLE_H_
