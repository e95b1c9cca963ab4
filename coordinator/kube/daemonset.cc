#include "coordinator/kube/daemonset.h"

#include <cstdint>
#include <initializer_list>

#include "common/base/strings.h"

namespace handoff::kube {
namespace {

// An integer field (absent or null: 0, as Go's zero value), or why it is not one.
absl::StatusOr<int64_t> IntegerAt(const Json& object, std::initializer_list<std::string_view> keys,
                                  std::string_view field) {
  const Json* at = &object;
  for (std::string_view key : keys) {
    if (!at->is_object()) return 0;
    auto it = at->find(std::string(key));
    if (it == at->end()) return 0;
    at = &*it;
  }
  if (at->is_null()) return 0;
  if (!at->is_number_integer()) {
    return absl::InvalidArgumentError(
        StrCat("DaemonSet ", ObjectNamespace(object), "/", ObjectName(object), ": ", field,
               " is not an integer (", at->dump(), ")"));
  }
  return at->get<int64_t>();
}

}  // namespace

absl::StatusOr<DaemonSetRollout> DaemonSetRolloutStatus(const Json& daemon_set) {
  const std::string name = ObjectName(daemon_set);
  std::string strategy = StringAt(daemon_set, {"spec", "updateStrategy", "type"});
  if (strategy.empty()) strategy = "RollingUpdate";
  if (strategy != "RollingUpdate") {
    return absl::FailedPreconditionError(
        StrCat("DaemonSet ", ObjectNamespace(daemon_set), "/", name,
               ": spec.updateStrategy.type is ", strategy,
               "; rollout status is only available for the RollingUpdate strategy type (kubectl "
               "refuses it too): with ", strategy, " the pods change only when they are deleted"));
  }
  absl::StatusOr<int64_t> generation =
      IntegerAt(daemon_set, {"metadata", "generation"}, "metadata.generation");
  absl::StatusOr<int64_t> observed =
      IntegerAt(daemon_set, {"status", "observedGeneration"}, "status.observedGeneration");
  absl::StatusOr<int64_t> desired =
      IntegerAt(daemon_set, {"status", "desiredNumberScheduled"}, "status.desiredNumberScheduled");
  absl::StatusOr<int64_t> updated =
      IntegerAt(daemon_set, {"status", "updatedNumberScheduled"}, "status.updatedNumberScheduled");
  absl::StatusOr<int64_t> available =
      IntegerAt(daemon_set, {"status", "numberAvailable"}, "status.numberAvailable");
  for (const absl::StatusOr<int64_t>* value : {&generation, &observed, &desired, &updated,
                                               &available}) {
    if (!value->ok()) return value->status();
  }
  DaemonSetRollout rollout;
  if (*generation > *observed) {
    rollout.message = "Waiting for daemon set spec update to be observed...";
    return rollout;
  }
  if (*updated < *desired) {
    rollout.message =
        StrCat("Waiting for daemon set \"", name, "\" rollout to finish: ", *updated, " out of ",
               *desired, " new pods have been updated...");
    return rollout;
  }
  if (*available < *desired) {
    rollout.message = StrCat("Waiting for daemon set \"", name, "\" rollout to finish: ",
                             *available, " of ", *desired, " updated pods are available...");
    return rollout;
  }
  rollout.done = true;
  rollout.message = StrCat("daemon set \"", name, "\" successfully rolled out");
  return rollout;
}

absl::StatusOr<Json> GetDaemonSet(KubeClient& client, std::string_view ns, std::string_view name) {
  return client.Get(ObjectRef{&kDaemonSets, std::string(ns), std::string(name)});
}

}  // namespace handoff::kube
