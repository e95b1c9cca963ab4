// Unified diffs of whole files, as `diff -u` prints them, for plans an operator reads.
#ifndef HANDOFF_COMMON_BASE_UNIFIED_DIFF_H_
#define HANDOFF_COMMON_BASE_UNIFIED_DIFF_H_

#include <optional>
#include <string>
#include <string_view>

namespace handoff {

// The unified diff (3 lines of context) from `before` to `after` of the file at `path`.
// std::nullopt on either side means the file does not exist: the header then names /dev/null,
// as for a created or removed file. Returns "" when both sides are equal.
std::string UnifiedDiff(std::string_view path, const std::optional<std::string>& before,
                        const std::optional<std::string>& after);

}  // namespace handoff

#endif  // HANDOFF_COMMON_BASE_UNIFIED_DIFF_H_
