// Test input: a YAML "billion laughs". Each level is an anchored list of ten aliases of the level
// before, so `levels` levels in a few hundred bytes stand for 10^levels scalars once expanded.
#ifndef HANDOFF_TESTS_COMMON_BASE_YAML_BOMB_H_
#define HANDOFF_TESTS_COMMON_BASE_YAML_BOMB_H_

#include <string>

namespace handoff::testing {

// Map entries "l0: &l0 [...]" ... "lN: &lN [*lN-1, ...]", each line indented by `indent`.
inline std::string AliasBombEntries(int levels, int indent) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  std::string out = pad + "l0: &l0 [";
  for (int i = 0; i < 10; ++i) out += i == 0 ? "\"lol\"" : ", \"lol\"";
  out += "]\n";
  for (int level = 1; level < levels; ++level) {
    const std::string previous = "*l" + std::to_string(level - 1);
    out += pad + "l" + std::to_string(level) + ": &l" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) out += (i == 0 ? "" : ", ") + previous;
    out += "]\n";
  }
  return out;
}

}  // namespace handoff::testing

#endif  // HANDOFF_TESTS_COMMON_BASE_YAML_BOMB_H_
