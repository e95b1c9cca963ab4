#include "coordinator/rollout/membership.h"

#include <cstddef>
#include <optional>
#include <string_view>

#include "common/base/strings.h"

namespace handoff::rollout {
namespace {

// Two states that never coexist (membership.h), and why.
struct ForbiddenPair {
  NodeState a;
  NodeState b;
  std::string_view why;
};

constexpr ForbiddenPair kForbidden[] = {
    {NodeState::kInTree, NodeState::kMigrated,
     "R1/R3: an in-tree kube-controller-manager, without Leader Migration, runs the cloud "
     "controllers beside a cloud-controller-manager"},
    {NodeState::kInTree, NodeState::kFinalized,
     "R3: an in-tree kube-controller-manager, without Leader Migration, runs the cloud "
     "controllers beside a cloud-controller-manager"},
    {NodeState::kPrepared, NodeState::kFinalized,
     "R2: the finalized cloud-controller-manager runs the cloud controllers without Leader "
     "Migration while the prepared kube-controller-manager may take the migration lease"},
    {NodeState::kStopped, NodeState::kMigrated,
     "R1: every node keeping an in-tree kube-controller-manager is prepared while a "
     "cloud-controller-manager runs with Leader Migration"},
    {NodeState::kStopped, NodeState::kFinalized,
     "D2: the stopped node's parked in-tree kube-controller-manager could return beside the "
     "cloud-controller-manager"},
};

std::optional<ForbiddenPair> Forbidden(NodeState x, NodeState y) {
  for (const ForbiddenPair& pair : kForbidden) {
    if ((pair.a == x && pair.b == y) || (pair.a == y && pair.b == x)) return pair;
  }
  return std::nullopt;
}

std::string Named(const NodeStatus& node) {
  return StrCat("node ", node.name, " (", NodeStateName(node.state), ")");
}

// The first member that `pred` holds for, as "node a (state)"; "" when none.
template <typename Predicate>
std::string FirstMember(const std::vector<NodeStatus>& members, Predicate pred) {
  for (const NodeStatus& member : members) {
    if (pred(member)) return Named(member);
  }
  return "";
}

}  // namespace

absl::Status CheckConfiguration(const std::vector<NodeStatus>& nodes) {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].state == NodeState::kInconsistent) continue;
    for (std::size_t j = i + 1; j < nodes.size(); ++j) {
      if (nodes[j].state == NodeState::kInconsistent) continue;
      if (std::optional<ForbiddenPair> pair = Forbidden(nodes[i].state, nodes[j].state)) {
        return absl::FailedPreconditionError(
            StrCat("M1: ", Named(nodes[i]), " beside ", Named(nodes[j]), ": ", pair->why));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckJoin(const std::vector<NodeStatus>& members, const NodeStatus& joining) {
  if (joining.name.empty()) return absl::InvalidArgumentError("the joining node has no name");
  const std::string who = StrCat("node ", joining.name);
  for (const NodeStatus& member : members) {
    if (member.name == joining.name) {
      return absl::FailedPreconditionError(
          StrCat("M2: ", who, " is already a member of the rollout"));
    }
  }
  // The joining node's own state must be known and sound: the coordinator takes it on as it is.
  if (!joining.connected || joining.awaiting_hello) {
    return absl::FailedPreconditionError(StrCat(
        "M2: ", who, "'s agent is not connected; a node joins once its agent has reported it"));
  }
  if (joining.state == NodeState::kInconsistent) {
    return absl::FailedPreconditionError(
        StrCat("M2: ", who,
               " is inconsistent; repair it by hand (handoff-agent status lists the problems) "
               "before it joins"));
  }
  if (!joining.healthy) {
    return absl::FailedPreconditionError(
        StrCat("M2: ", who, " is not verified healthy; check it before it joins"));
  }
  if (joining.in_transition) {
    return absl::FailedPreconditionError(StrCat("M2: ", who, " is in transition"));
  }
  // Every member's state must be known, or M1 cannot be judged; and the set changes between
  // moves only.
  if (std::string moving =
          FirstMember(members, [](const NodeStatus& n) { return n.in_transition; });
      !moving.empty()) {
    return absl::FailedPreconditionError(
        StrCat("M2: ", moving, " is in transition; ", who, " joins after its verified result"));
  }
  if (std::string unknown = FirstMember(members,
                                        [](const NodeStatus& n) {
                                          return n.awaiting_hello ||
                                                 n.state == NodeState::kInconsistent;
                                        });
      !unknown.empty()) {
    return absl::FailedPreconditionError(StrCat("M2: the state of ", unknown,
                                                " is not known (inconsistent, or its agent has not "
                                                "reported since the coordinator started); ",
                                                who, " joins once it is"));
  }
  for (const NodeStatus& member : members) {
    if (std::optional<ForbiddenPair> pair = Forbidden(joining.state, member.state)) {
      return absl::FailedPreconditionError(
          StrCat("M1: ", Named(joining), " cannot join beside ", Named(member), ": ", pair->why,
                 "; bring it to a state the members allow (or the members to one it allows) "
                 "first"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckLeave(const std::vector<NodeStatus>& members, const std::string& node) {
  const NodeStatus* leaving = nullptr;
  for (const NodeStatus& member : members) {
    if (member.name == node) leaving = &member;
  }
  if (leaving == nullptr) {
    return absl::NotFoundError(StrCat("node ", node, " is not a member of the rollout"));
  }
  if (members.size() == 1) {
    return absl::FailedPreconditionError(
        StrCat("M3: node ", node, " is the rollout's last node; another joins before it leaves"));
  }
  if (leaving->in_transition) {
    return absl::FailedPreconditionError(
        StrCat("M3: a move to node ", node, " is outstanding; it leaves after its result"));
  }
  if (leaving->connected) {
    return absl::FailedPreconditionError(
        StrCat("M3: node ", node,
               "'s agent is still connected, so its managers may still run; a node leaves once "
               "its machine is reset (kubeadm reset stops its static pods) or gone"));
  }
  return absl::OkStatus();
}

}  // namespace handoff::rollout
