// The sandbox's own look at the workers (sandbox_run.h), beside what their agents prove: each
// Node's UID as first read, each workload's process (the simulated kubelet's record of it), and
// the cloud provider each kubelet's flags file gives, after every rollout and rollback.
#include <algorithm>
#include <string>

#include "common/base/strings.h"
#include "common/kube/resource.h"
#include "nlohmann/json.hpp"
#include "rehearsal/sandbox/sandbox_run.h"

namespace handoff::sandbox {
namespace {

constexpr char kFlagsFile[] = "/var/lib/kubelet/kubeadm-flags.env";
constexpr char kPodsFile[] = "/var/lib/kubelet/sandbox-pods.json";

}  // namespace

absl::StatusOr<SandboxRun::WorkerLook> SandboxRun::LookAtWorker(kube::KubeClient& client,
                                                                const NodeRun& worker) {
  WorkerLook look;
  absl::StatusOr<kube::Json> node = client.Get(kube::ObjectRef{&kube::kNodes, "", worker.spec().name});
  if (!node.ok()) return node.status();
  look.uid = kube::StringAt(*node, {"metadata", "uid"});
  look.provider_id = kube::StringAt(*node, {"spec", "providerID"});
  absl::StatusOr<std::string> pods = fs_->ReadFile(StrCat(worker.root(), kPodsFile));
  if (!pods.ok()) return pods.status();
  const nlohmann::json state = nlohmann::json::parse(*pods, nullptr, false);
  if (!state.is_discarded() && state.contains("pods") && state["pods"].contains("workload") &&
      state["pods"]["workload"].contains("pid")) {
    look.workload_pid = state["pods"]["workload"]["pid"].get<int>();
  }
  absl::StatusOr<std::string> flags = fs_->ReadFile(StrCat(worker.root(), kFlagsFile));
  if (!flags.ok()) return flags.status();
  look.external = StrContains(*flags, "--cloud-provider=external");
  look.in_tree = StrContains(*flags, "--cloud-provider=aws");
  return look;
}

absl::Status SandboxRun::RecordWorkerBaseline() {
  if (workers_.empty()) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = AdminClient();
  if (!client.ok()) return client.status();
  for (const NodeRun& worker : workers_) {
    absl::StatusOr<WorkerLook> look = LookAtWorker(**client, worker);
    if (!look.ok()) return look.status();
    if (look->workload_pid == 0) {
      return absl::FailedPreconditionError(StrCat(worker.spec().name, "'s workload is not running (",
                                                  worker.root(), kPodsFile, ")"));
    }
    worker_baseline_[worker.spec().name] = *std::move(look);
  }
  return absl::OkStatus();
}

absl::Status SandboxRun::CheckWorkers(bool external) {
  if (workers_.empty()) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = AdminClient();
  if (!client.ok()) return client.status();
  std::vector<std::string> problems;
  for (const NodeRun& worker : workers_) {
    const std::string& name = worker.spec().name;
    absl::StatusOr<WorkerLook> look = LookAtWorker(**client, worker);
    if (!look.ok()) {
      problems.push_back(StrCat(name, ": ", look.status().message()));
      continue;
    }
    const WorkerLook& before = worker_baseline_[name];
    if (external ? (!look->external || look->in_tree) : (!look->in_tree || look->external)) {
      problems.push_back(StrCat(name, ": ", worker.root(), kFlagsFile, " does not give --cloud-provider=",
                                external ? "external" : "aws", " alone"));
    }
    if (look->uid != before.uid) {
      problems.push_back(StrCat(name, ": its Node is another object (uid ", before.uid, " then ",
                                look->uid, ")"));
    }
    if (look->provider_id != before.provider_id) {
      problems.push_back(StrCat(name, ": providerID ", before.provider_id, " became ",
                                look->provider_id));
    }
    if (look->workload_pid != before.workload_pid) {
      problems.push_back(StrCat(name, ": its workload was restarted (pid ", before.workload_pid,
                                " then ", look->workload_pid, ")"));
    }
  }
  if (!problems.empty()) {
    return absl::FailedPreconditionError(
        StrCat("the workers are not as the rollout says: ", StrJoin(problems, "; ")));
  }
  const std::string line =
      StrCat("workers: all ", workers_.size(), " kubelets ",
             external ? "--cloud-provider=external (with ecr-credential-provider)"
                      : "--cloud-provider=aws again",
             ", each the same Node (uid) with its providerID, its workload never restarted");
  Say(line);
  if (std::find(worker_lines_.begin(), worker_lines_.end(), line) == worker_lines_.end()) {
    worker_lines_.push_back(line);
  }
  return absl::OkStatus();
}

}  // namespace handoff::sandbox
