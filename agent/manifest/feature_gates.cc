#include "agent/manifest/feature_gates.h"

#include <algorithm>
#include <iterator>

#include "common/base/strings.h"

namespace handoff {

FeatureGates::FeatureGates(std::string_view value) {
  for (std::string_view item : StrSplit(value, ",")) {
    item = StripWhitespace(item);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    std::string_view name = item.substr(0, eq);
    std::string_view setting = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    gates_.emplace_back(std::string(StripWhitespace(name)), std::string(StripWhitespace(setting)));
  }
}

// A gate named twice ends up with its last setting: component-base's featuregate parses the list
// into a map, one entry after the other.
std::optional<std::string> FeatureGates::Get(std::string_view gate) const {
  std::optional<std::string> found;
  for (const auto& [name, value] : gates_) {
    if (name == gate) found = value;
  }
  return found;
}

void FeatureGates::Set(std::string_view gate, std::string_view value) {
  auto first = std::find_if(gates_.begin(), gates_.end(),
                            [&](const auto& entry) { return entry.first == gate; });
  if (first == gates_.end()) {
    gates_.emplace_back(std::string(gate), std::string(value));
    return;
  }
  first->second = std::string(value);
  // A later repeat would override the value just set.
  gates_.erase(std::remove_if(std::next(first), gates_.end(),
                              [&](const auto& entry) { return entry.first == gate; }),
               gates_.end());
}

bool FeatureGates::Remove(std::string_view gate) {
  auto it = std::remove_if(gates_.begin(), gates_.end(),
                           [&](const auto& entry) { return entry.first == gate; });
  bool removed = it != gates_.end();
  gates_.erase(it, gates_.end());
  return removed;
}

std::string FeatureGates::ToString() const {
  std::vector<std::string> items;
  for (const auto& [name, value] : gates_) items.push_back(StrCat(name, "=", value));
  return StrJoin(items, ",");
}

}  // namespace handoff
