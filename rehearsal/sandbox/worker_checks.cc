// The sandbox's own look at the workers (sandbox_run.h), beside what their agents prove: each
// Node's UID as first read, each workload's process or container, and the cloud provider each
// kubelet takes (cluster.h LookAtWorker), after every rollout and rollback.
#include <algorithm>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "common/kube/resource.h"
#include "rehearsal/sandbox/sandbox_run.h"

namespace handoff::sandbox {

absl::StatusOr<SandboxRun::WorkerLook> SandboxRun::LookAtWorker(kube::KubeClient& client,
                                                                const NodeRun& worker) {
  WorkerLook look;
  absl::StatusOr<kube::Json> node =
      client.Get(kube::ObjectRef{&kube::kNodes, "", worker.spec().name});
  if (!node.ok()) return node.status();
  look.uid = kube::StringAt(*node, {"metadata", "uid"});
  look.provider_id = kube::StringAt(*node, {"spec", "providerID"});
  absl::StatusOr<WorkerKubeletLook> kubelet = cluster_->LookAtWorker(worker.node);
  if (!kubelet.ok()) return kubelet.status();
  look.kubelet = *std::move(kubelet);
  return look;
}

absl::Status SandboxRun::RecordWorkerBaseline() {
  if (workers_.empty()) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = AdminClient();
  if (!client.ok()) return client.status();
  for (const NodeRun& worker : workers_) {
    absl::StatusOr<WorkerLook> look = LookAtWorker(**client, worker);
    if (!look.ok()) return look.status();
    if (look->kubelet.workload.empty()) {
      return absl::FailedPreconditionError(
          StrCat(worker.spec().name, "'s workload is not running"));
    }
    worker_baseline_[worker.spec().name] = *std::move(look);
  }
  return absl::OkStatus();
}

std::vector<std::string> SandboxRun::WorkerDifferences(const NodeRun& worker,
                                                       const WorkerLook& look,
                                                       const std::string& cloud_provider) {
  const WorkerLook& before = worker_baseline_[worker.spec().name];
  std::vector<std::string> differences;
  if (look.kubelet.cloud_provider != cloud_provider) {
    differences.push_back(StrCat("its kubelet takes --cloud-provider=", look.kubelet.cloud_provider,
                                 ", not ", cloud_provider, " (", look.kubelet.source, ")"));
  }
  if (look.uid != before.uid) {
    differences.push_back(
        StrCat("its Node is another object (uid ", before.uid, " then ", look.uid, ")"));
  }
  if (look.provider_id != before.provider_id) {
    differences.push_back(
        StrCat("providerID ", before.provider_id, " became ", look.provider_id));
  }
  if (look.kubelet.workload != before.kubelet.workload) {
    differences.push_back(StrCat("its workload was restarted (", before.kubelet.workload, " then ",
                                 look.kubelet.workload, ")"));
  }
  return differences;
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
    for (const std::string& difference :
         WorkerDifferences(worker, *look, external ? "external" : "aws")) {
      problems.push_back(StrCat(name, ": ", difference));
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

absl::Status SandboxRun::TryNextKubelet(bool moved) {
  if (workers_.empty() || options_.cluster != ClusterKind::kKubeadm ||
      !next_kubelet_tried_.insert(moved).second) {
    return absl::OkStatus();
  }
  // The first worker has its flags in /etc/default/kubelet, the last in kubeadm-flags.env.
  const NodeRun& worker = moved ? workers_.front() : workers_.back();
  absl::StatusOr<std::string> line = cluster_->TryNextKubelet(worker.node, moved);
  if (!line.ok()) return line.status();
  // A kubelet of another minor version names a static pod by a hash of the manifest as it
  // defaults it, and 1.27 defaults more fields: it recreates the pod, and 1.26 again on its
  // return (seen here on the workload). That is the version change's doing, not the move's: said,
  // and the baseline taken anew so that the rollback's check still proves the move keeps it.
  auto baseline = worker_baseline_.find(worker.spec().name);
  if (baseline != worker_baseline_.end()) {
    absl::StatusOr<WorkerKubeletLook> now = cluster_->LookAtWorker(worker.node);
    if (!now.ok()) return now.status();
    if (now->workload != baseline->second.kubelet.workload) {
      StrAppend(&*line, "; the kubelet's version change recreated its static workload pod (",
                baseline->second.kubelet.workload, " then ", now->workload,
                "): a kubelet names a static pod by a hash of its defaulted manifest");
      baseline->second.kubelet.workload = now->workload;
    }
  }
  Say(*line);
  worker_lines_.push_back(*line);
  return absl::OkStatus();
}

}  // namespace handoff::sandbox
