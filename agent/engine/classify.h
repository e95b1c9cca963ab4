// Which state a node is in, decided from its files alone, with every reason when it is in none.
#ifndef HANDOFF_AGENT_ENGINE_CLASSIFY_H_
#define HANDOFF_AGENT_ENGINE_CLASSIFY_H_

#include <optional>
#include <string>
#include <vector>

#include "agent/engine/node_snapshot.h"
#include "agent/manifest/static_pod.h"
#include "common/base/kube_version.h"
#include "proto/vocabulary/node_state.h"

namespace handoff {

inline constexpr std::string_view kLeaderMigrationFeatureGate = "ControllerManagerLeaderMigration";

// One control-plane component as found on the node.
struct ComponentView {
  std::string component;  // "kube-controller-manager", ...
  std::string path;       // its manifest file
  StaticPod pod;
  size_t container = 0;                // index of the container named after the component
  std::optional<KubeVersion> version;  // from the container image's tag, when it names one

  std::optional<std::string> Flag(std::string_view name) const {
    return pod.GetFlag(container, name);
  }
  // --enable-leader-migration given and true.
  bool LeaderMigrationEnabled() const;
  // --leader-elect, which defaults to true.
  bool LeaderElect() const;
};

struct NodeView {
  std::optional<ComponentView> apiserver;
  std::optional<ComponentView> controller_manager;
  std::optional<ComponentView> cloud_controller_manager;
  std::optional<ComponentView> scheduler;
  // The kube-controller-manager parked by the downtime path (its path is the parked file's), when
  // the parked file parses as that pod.
  std::optional<ComponentView> parked_controller_manager;
};

struct Classification {
  NodeState state = NodeState::kInconsistent;
  std::vector<std::string> problems;  // why the node is inconsistent (empty otherwise)
  std::vector<std::string> warnings;  // worth knowing, not blocking
  NodeView view;
};

// Pure: the same snapshot always gives the same result.
Classification Classify(const NodeSnapshot& snapshot);

}  // namespace handoff

#endif  // HANDOFF_AGENT_ENGINE_CLASSIFY_H_
