#include "agent/verify/worker_proof.h"

#include <map>
#include <utility>

#include "agent/verify/credential_probe.h"
#include "common/base/strings.h"
#include "common/kube/resource.h"

namespace handoff {
absl::StatusOr<std::vector<CriContainer>> ParseCriContainers(std::string_view json) {
  const kube::Json answer = kube::Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded() || !answer.is_object() || !answer.contains("containers") ||
      !answer["containers"].is_array()) {
    return absl::InvalidArgumentError(
        StrCat("crictl's answer is not a container list (", json.size(),
               " bytes, no \"containers\" list)"));
  }
  std::vector<CriContainer> containers;
  for (const kube::Json& item : answer["containers"]) {
    if (!item.is_object()) continue;
    CriContainer container;
    container.id = kube::StringAt(item, {"id"});
    container.pod_sandbox_id = kube::StringAt(item, {"podSandboxId"});
    container.name = kube::StringAt(item, {"metadata", "name"});
    container.pod = StrCat(kube::StringAt(item, {"labels", "io.kubernetes.pod.namespace"}), "/",
                           kube::StringAt(item, {"labels", "io.kubernetes.pod.name"}));
    // crictl prints createdAt as a string of nanoseconds; an older one as a number.
    if (item.contains("createdAt")) {
      container.created_at = item["createdAt"].is_string() ? item["createdAt"].get<std::string>()
                                                           : item["createdAt"].dump();
    }
    if (container.id.empty()) {
      return absl::InvalidArgumentError("crictl's answer lists a container without an id");
    }
    containers.push_back(std::move(container));
  }
  return containers;
}

std::vector<std::string> RestartedContainers(const std::vector<CriContainer>& before,
                                             const std::vector<CriContainer>& after) {
  std::map<std::string, const CriContainer*> by_id;
  for (const CriContainer& container : after) by_id[container.id] = &container;
  std::vector<std::string> restarted;
  for (const CriContainer& old : before) {
    if (by_id.count(old.id) != 0) continue;
    for (const CriContainer& now : after) {
      const bool same_pod = now.pod_sandbox_id == old.pod_sandbox_id ||
                            (!old.pod.empty() && old.pod != "/" && now.pod == old.pod);
      if (!same_pod || now.name != old.name) continue;
      restarted.push_back(StrCat("container ", old.name, " of pod ", old.pod, " was restarted (",
                                 old.id.substr(0, 13), " is gone, ", now.id.substr(0, 13),
                                 now.pod_sandbox_id == old.pod_sandbox_id
                                     ? " runs in its place)"
                                     : " runs in a new pod sandbox)"));
      break;
    }
  }
  return restarted;
}

absl::StatusOr<NodeReadiness> ReadNodeReadiness(const kube::Json& node) {
  NodeReadiness readiness;
  readiness.uid = kube::StringAt(node, {"metadata", "uid"});
  if (readiness.uid.empty()) {
    return absl::InvalidArgumentError(StrCat("Node ", kube::ObjectName(node), " has no uid"));
  }
  if (!node.contains("status") || !node["status"].is_object() ||
      !node["status"].contains("conditions") || !node["status"]["conditions"].is_array()) {
    return readiness;
  }
  for (const kube::Json& condition : node["status"]["conditions"]) {
    if (kube::StringAt(condition, {"type"}) != "Ready") continue;
    readiness.ready = kube::StringAt(condition, {"status"}) == "True";
  }
  return readiness;
}

std::optional<absl::Time> LeaseRenewTime(const kube::Json& lease, std::string_view node_name) {
  if (kube::StringAt(lease, {"spec", "holderIdentity"}) != node_name) return std::nullopt;
  absl::Time at;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, kube::StringAt(lease, {"spec", "renewTime"}), &at,
                       &error)) {
    return std::nullopt;
  }
  return at;
}

WorkerKubeletProof::WorkerKubeletProof(WorkerProofOptions options, kube::KubeClient& client,
                                       CommandRunner& commands, Clock& clock,
                                       CredentialCall credential_call)
    : options_(std::move(options)),
      client_(client),
      commands_(commands),
      clock_(clock),
      credential_call_(std::move(credential_call)) {}

absl::StatusOr<std::vector<CriContainer>> WorkerKubeletProof::Containers() {
  absl::StatusOr<std::string> listed =
      commands_.Output(options_.crictl, "", options_.command_timeout);
  if (!listed.ok()) {
    return absl::FailedPreconditionError(
        StrCat("the node's containers cannot be listed, so no one could tell whether the kubelet's "
               "restart restarted them: ", listed.status().message()));
  }
  return ParseCriContainers(*listed);
}

absl::Status WorkerKubeletProof::Before() {
  const kube::ObjectRef ref{&kube::kNodes, "", options_.node_name};
  absl::StatusOr<kube::Json> node = client_.Get(ref);
  if (!node.ok()) {
    return absl::FailedPreconditionError(
        StrCat("this kubelet's Node ", options_.node_name,
               " cannot be read, so no one could tell whether it keeps it: ",
               node.status().message()));
  }
  absl::StatusOr<NodeReadiness> readiness = ReadNodeReadiness(*node);
  if (!readiness.ok()) return readiness.status();
  absl::StatusOr<std::vector<CriContainer>> containers = Containers();
  if (!containers.ok()) return containers.status();
  uid_ = readiness->uid;
  containers_ = *std::move(containers);
  restarted_at_ = clock_.Now();
  return absl::OkStatus();
}

absl::StatusOr<std::string> WorkerKubeletProof::After() {
  const kube::ObjectRef node_ref{&kube::kNodes, "", options_.node_name};
  const kube::ObjectRef lease_ref{&kube::kLeases, "kube-node-lease", options_.node_name};
  const absl::Time deadline = clock_.Now() + options_.timeout;
  std::string waiting = "no answer yet";
  absl::Time heard_at;
  while (true) {
    absl::StatusOr<kube::Json> node = client_.Get(node_ref);
    if (node.ok()) {
      absl::StatusOr<NodeReadiness> readiness = ReadNodeReadiness(*node);
      if (!readiness.ok()) return readiness.status();
      if (readiness->uid != uid_) {
        // Deleted and registered again: its pods were evicted or orphaned meanwhile.
        return absl::FailedPreconditionError(
            StrCat("Node ", options_.node_name, " is another object now (uid ", uid_, " before, ",
                   readiness->uid, " after): the kubelet registered it anew"));
      }
      absl::StatusOr<kube::Json> lease = client_.Get(lease_ref);
      const std::optional<absl::Time> renewed =
          lease.ok() ? LeaseRenewTime(*lease, options_.node_name) : std::nullopt;
      const bool heard = renewed && *renewed > restarted_at_;
      if (readiness->ready && heard) {
        heard_at = *renewed;
        break;
      }
      waiting = !heard ? (lease.ok() ? "its Lease not renewed since the restart"
                                     : StrCat("its Lease unread: ", lease.status().message()))
                       : "not Ready";
    } else if (absl::IsNotFound(node.status())) {
      waiting = "the Node is gone";
    } else {
      waiting = std::string(node.status().message());
    }
    if (clock_.Now() >= deadline) {
      return absl::DeadlineExceededError(
          StrCat("Node ", options_.node_name, " (uid ", uid_, ") was not Ready with a heartbeat "
                 "within ", absl::FormatDuration(options_.timeout), " of the kubelet's restart (",
                 waiting, "); a kubelet under another name would register another Node"));
    }
    clock_.SleepFor(options_.poll_interval);
  }

  absl::StatusOr<std::vector<CriContainer>> containers = Containers();
  if (!containers.ok()) return containers.status();
  const std::vector<std::string> restarted = RestartedContainers(containers_, *containers);
  if (!restarted.empty()) {
    return absl::FailedPreconditionError(
        StrCat("the kubelet's restart restarted its pods' containers: ", StrJoin(restarted, "; ")));
  }

  std::string credentials = "no credential provider named";
  absl::StatusOr<std::optional<CredentialProviderCall>> call = credential_call_();
  if (!call.ok()) return call.status();
  if (*call && options_.ecr_registry.empty()) {
    return absl::FailedPreconditionError(
        StrCat("the kubelet now names the credential provider ", (*call)->binary,
               ", and no ECR registry is known to ask it for (worker.ecrRegistry)"));
  }
  if (*call) {
    absl::Status answered = ProbeCredentialProvider(commands_, **call, options_.ecr_registry,
                                                    options_.command_timeout);
    if (!answered.ok()) return answered;
    credentials = StrCat((*call)->binary, " answered for ", options_.ecr_registry);
  }
  return StrCat("Node ", options_.node_name, " (uid ", uid_, ") Ready, Lease renewed ",
                absl::FormatDuration(absl::Trunc(heard_at - restarted_at_, absl::Milliseconds(1))),
                " after the restart; ", containers_.size(), " container(s) not restarted; ",
                credentials);
}

}  // namespace handoff
