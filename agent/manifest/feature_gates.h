// The value of --feature-gates: "Name=true,Other=false", order kept.
#ifndef HANDOFF_AGENT_MANIFEST_FEATURE_GATES_H_
#define HANDOFF_AGENT_MANIFEST_FEATURE_GATES_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace handoff {

class FeatureGates {
 public:
  explicit FeatureGates(std::string_view value);
  std::optional<std::string> Get(std::string_view gate) const;
  void Set(std::string_view gate, std::string_view value);
  bool Remove(std::string_view gate);
  bool empty() const { return gates_.empty(); }
  std::string ToString() const;

 private:
  std::vector<std::pair<std::string, std::string>> gates_;
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_MANIFEST_FEATURE_GATES_H_
