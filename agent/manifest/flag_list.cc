#include "agent/manifest/flag_list.h"

#include <algorithm>

#include "common/base/strings.h"

namespace handoff {
namespace {

// Boolean flags of kube-apiserver, kube-controller-manager, cloud-controller-manager and the
// kubelet that a manifest can plausibly carry. pflag decides by the flag's type; this is that
// knowledge for the flags handoff reads or writes, and for common neighbours of them.
constexpr std::string_view kBooleanFlags[] = {
    "allocate-node-cidrs",
    "allow-privileged",
    "allow-untagged-cloud",
    "alsologtostderr",
    "anonymous-auth",
    "configure-cloud-routes",
    "enable-admission-plugins-default",
    "enable-aggregator-routing",
    "enable-bootstrap-token-auth",
    "enable-dynamic-provisioning",
    "enable-garbage-collector",
    "enable-hostpath-provisioner",
    "enable-leader-migration",
    "enable-priority-and-fairness",
    "enable-taint-manager",
    "leader-elect",
    "logtostderr",
    "profiling",
    "register-node",
    "rotate-certificates",
    "rotate-server-certificates",
    "use-service-account-credentials",
};

// "--name=value" → name; "--name" → name; anything else → "".
std::string_view FlagName(std::string_view item) {
  if (!StartsWith(item, "--") || item.size() == 2) return {};
  item.remove_prefix(2);
  return item.substr(0, item.find('='));
}

bool IsFlagItem(std::string_view item) { return StartsWith(item, "-"); }

}  // namespace

bool IsBooleanFlag(std::string_view name) {
  return std::find(std::begin(kBooleanFlags), std::end(kBooleanFlags), name) !=
         std::end(kBooleanFlags);
}

std::vector<FlagOccurrence> FlagList::Find(std::string_view name) const {
  std::vector<FlagOccurrence> found;
  for (size_t i = 0; i < items_.size(); ++i) {
    const std::string& item = items_[i];
    if (FlagName(item) != name) continue;
    FlagOccurrence occurrence;
    occurrence.index = i;
    size_t eq = item.find('=');
    if (eq != std::string::npos) {
      occurrence.value = item.substr(eq + 1);
    } else if (!IsBooleanFlag(name) && i + 1 < items_.size() && !IsFlagItem(items_[i + 1])) {
      occurrence.split = true;
      occurrence.value = items_[i + 1];
      ++i;
    }
    found.push_back(occurrence);
  }
  return found;
}

std::optional<std::string> FlagList::Get(std::string_view name) const {
  std::vector<FlagOccurrence> found = Find(name);
  if (found.empty()) return std::nullopt;
  return found.back().value.value_or("true");
}

std::vector<std::string> FlagList::Names() const {
  std::vector<std::string> names;
  for (size_t i = 0; i < items_.size(); ++i) {
    std::string_view name = FlagName(items_[i]);
    if (name.empty()) continue;
    names.emplace_back(name);
    if (items_[i].find('=') == std::string::npos && !IsBooleanFlag(name) && i + 1 < items_.size() &&
        !IsFlagItem(items_[i + 1])) {
      ++i;
    }
  }
  return names;
}

void FlagList::Set(std::string_view name, const std::optional<std::string>& value) {
  std::vector<FlagOccurrence> found = Find(name);
  const std::string bare = StrCat("--", name);
  if (!found.empty()) {
    // Drop all but the last occurrence (back to front, so indices stay valid), then rewrite it.
    FlagOccurrence last = found.back();
    for (size_t k = found.size() - 1; k-- > 0;) {
      const FlagOccurrence& extra = found[k];
      items_.erase(items_.begin() + static_cast<long>(extra.index),
                   items_.begin() + static_cast<long>(extra.index + (extra.split ? 2 : 1)));
      last.index -= extra.split ? 2 : 1;
    }
    if (last.split && value) {
      items_[last.index + 1] = *value;
    } else if (last.split) {
      items_.erase(items_.begin() + static_cast<long>(last.index) + 1);
      items_[last.index] = bare;
    } else if (!last.value && value == std::optional<std::string>("true")) {
      // A bare boolean already means true: leave it as written.
    } else {
      items_[last.index] = value ? StrCat(bare, "=", *value) : bare;
    }
    return;
  }
  std::string item = value ? StrCat(bare, "=", *value) : bare;
  // Insert among the flags in order when they are sorted, otherwise at the end. Order by name, as
  // kubeadm sorts (cmd/kubeadm/app/util BuildArgumentListFromMap): comparing whole items would put
  // "--leader-elect-retry-period=2s" before "--leader-elect=true", since '-' sorts before '='.
  std::vector<size_t> flag_positions;
  for (size_t i = 0; i < items_.size(); ++i) {
    if (!FlagName(items_[i]).empty()) flag_positions.push_back(i);
  }
  bool sorted = std::is_sorted(
      flag_positions.begin(), flag_positions.end(),
      [this](size_t a, size_t b) { return FlagName(items_[a]) < FlagName(items_[b]); });
  if (sorted) {
    for (size_t position : flag_positions) {
      if (name < FlagName(items_[position])) {
        items_.insert(items_.begin() + static_cast<long>(position), item);
        return;
      }
    }
  }
  items_.push_back(item);
}

bool FlagList::Remove(std::string_view name) {
  std::vector<FlagOccurrence> found = Find(name);
  for (auto it = found.rbegin(); it != found.rend(); ++it) {
    items_.erase(items_.begin() + static_cast<long>(it->index),
                 items_.begin() + static_cast<long>(it->index + (it->split ? 2 : 1)));
  }
  return !found.empty();
}

}  // namespace handoff
