// Command-line flags in the forms Kubernetes components accept (spf13/pflag): "--name=value",
// "--name" "value" as two items, and a bare boolean "--name". The same editing serves container
// command/args and the kubelet's flags file.
#ifndef HANDOFF_AGENT_MANIFEST_FLAG_LIST_H_
#define HANDOFF_AGENT_MANIFEST_FLAG_LIST_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handoff {

// Whether pflag parses `--name` as a boolean: a boolean never takes the next item as its value
// ("--leader-elect true" leaves "true" as a stray argument), every other flag does when the next
// item does not start with "-".
bool IsBooleanFlag(std::string_view name);

// One flag occurrence inside a list of items.
struct FlagOccurrence {
  size_t index = 0;                  // item holding "--name..."
  bool split = false;                // the value is the next item
  std::optional<std::string> value;  // nullopt for a bare "--name"
};

// Edits flags in a list of argv items, keeping everything else in place.
class FlagList {
 public:
  explicit FlagList(std::vector<std::string> items) : items_(std::move(items)) {}

  const std::vector<std::string>& items() const { return items_; }

  // Every occurrence of --name, in order.
  std::vector<FlagOccurrence> Find(std::string_view name) const;
  // The value pflag ends up with: the last occurrence wins; a bare boolean reads "true".
  std::optional<std::string> Get(std::string_view name) const;
  // Names of all flags, in order, with repeats.
  std::vector<std::string> Names() const;

  // Sets --name to `value` in the form it already has (the last occurrence; earlier ones are
  // removed). A new flag is written "--name=value", or bare when `value` is nullopt, at its
  // alphabetical place when the existing flags are sorted (kubeadm writes them sorted), else last.
  void Set(std::string_view name, const std::optional<std::string>& value);
  // Removes every occurrence (with a split value). Returns whether anything was removed.
  bool Remove(std::string_view name);

 private:
  std::vector<std::string> items_;
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_MANIFEST_FLAG_LIST_H_
