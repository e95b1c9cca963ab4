// The scenario of `handoffctl sandbox --cluster kubeadm --kubeadm-upgrade` (sandbox_run.h): what
// an operator does with kubeadm once the move is over. The rollout to migrated and `finalize`;
// `handoffctl kubeadm-config apply`; the real `kubeadm upgrade apply v1.27.16` and `kubeadm
// upgrade node`, after which every node must still run its kube-controller-manager external and
// its cloud-controller-manager; then a machine joined with `kubeadm join --control-plane` at
// v1.27.16, which its agent reports, the operator adds (`handoffctl nodes add`) and the
// coordinator brings to finalized with the others. The monitor watches throughout: no double run,
// and no handover gap longer than its bound while kubeadm works.
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/base/strings.h"
#include "common/kube/client.h"
#include "common/kube/resource.h"
#include "rehearsal/sandbox/kubeadm/kubeadm_cluster.h"
#include "rehearsal/sandbox/report.h"
#include "rehearsal/sandbox/sandbox_run.h"

namespace handoff::sandbox {
namespace {

constexpr const char* kVersionNext = kKubeadmVersionNext;

// What is wrong with `node`'s control plane as its mirror pods show it ("" when nothing): its
// kube-apiserver and kube-controller-manager at `version`, the latter with
// --cloud-provider=external, and a cloud-controller-manager running.
std::string ControlPlaneProblems(kube::KubeClient& client, const std::string& node,
                                 const std::string& version) {
  std::vector<std::string> problems;
  const auto pod = [&](const std::string& component) -> std::optional<kube::Json> {
    absl::StatusOr<kube::Json> got =
        client.Get(kube::ObjectRef{&kube::kPods, "kube-system", StrCat(component, "-", node)});
    if (!got.ok()) {
      problems.push_back(StrCat(component, "-", node, ": ", got.status().message()));
      return std::nullopt;
    }
    return *got;
  };
  for (const char* component : {"kube-apiserver", "kube-controller-manager"}) {
    std::optional<kube::Json> found = pod(component);
    if (!found) continue;
    const kube::Json& container = (*found)["spec"]["containers"][0];
    const std::string image = kube::StringAt(container, {"image"});
    if (!EndsWith(image, StrCat(":", version))) {
      problems.push_back(StrCat(component, " runs ", image, ", not ", version));
    }
    if (std::string_view(component) != "kube-controller-manager") continue;
    bool external = false;
    for (const kube::Json& arg : container["command"]) {
      if (arg.is_string() && arg.get<std::string>() == "--cloud-provider=external") external = true;
    }
    if (!external) problems.push_back("kube-controller-manager without --cloud-provider=external");
  }
  if (std::optional<kube::Json> ccm = pod("cloud-controller-manager")) {
    const std::string phase = kube::StringAt(*ccm, {"status", "phase"});
    if (phase != "Running") problems.push_back(StrCat("cloud-controller-manager ", phase));
  }
  return StrJoin(problems, "; ");
}

}  // namespace

absl::Status SandboxRun::RunHandoffctl(const std::vector<std::string>& args,
                                       const std::string& log) {
  std::vector<std::string> argv = {Handoffctl()};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string path = Path(StrCat("logs/", log, ".log"));
  absl::StatusOr<std::unique_ptr<Process>> run = SpawnOwned(argv, path);
  if (!run.ok()) return run.status();
  int status = 0;
  if (!(*run)->WaitFor(absl::Minutes(2), &status) || status != 0) {
    return absl::UnavailableError(StrCat("handoffctl ", StrJoin(args, " "), " failed (",
                                         DescribeWaitStatus(status), "); see ", path));
  }
  Say(StrCat("handoffctl ", args.front(), " ", args.size() > 1 ? args[1] : "", " (see ", path,
             ")"));
  return absl::OkStatus();
}

absl::Status SandboxRun::CheckExternalControlPlanes(const std::vector<std::string>& nodes,
                                                    const std::string& version) {
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = AdminClient();
  if (!client.ok()) return client.status();
  // The kubelets report their mirror pods' status some seconds after a restart.
  const absl::Time deadline = absl::Now() + cluster_->MoveBudget();
  std::string problems;
  while (true) {
    problems.clear();
    for (const std::string& node : nodes) {
      const std::string found = ControlPlaneProblems(**client, node, version);
      if (!found.empty()) StrAppend(&problems, problems.empty() ? "" : "\n", node, ": ", found);
    }
    if (problems.empty()) break;
    if (interrupted_()) return absl::CancelledError("interrupted");
    if (absl::Now() >= deadline) return absl::FailedPreconditionError(problems);
    // Mirror pods change when a kubelet reports; nothing here is told.
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  Say(StrCat("every node's kube-apiserver and kube-controller-manager ", version,
             ", external, with its cloud-controller-manager running (", StrJoin(nodes, ", "), ")"));
  return absl::OkStatus();
}

absl::Status SandboxRun::UpgradeAndJoinAfterTheMove() {
  absl::Status status = StartRollout(v1::NODE_STATE_MIGRATED);
  if (status.ok()) status = AwaitAllDone(v1::NODE_STATE_MIGRATED);
  if (status.ok()) {
    status = Call("finalize", [](ctl::OperatorClient& client) {
      return client.Finalize(v1::FinalizeRequest()).status();
    });
  }
  if (status.ok()) {
    status = AwaitGoal(v1::NODE_STATE_FINALIZED, "every node to be finalized").status();
  }
  if (!status.ok()) return status;
  Say("finalized: every node's cloud-controller-manager runs without Leader Migration");

  std::vector<std::string> members;
  for (const NodeRun& node : nodes_) members.push_back(node.spec().name);
  // From here kubeadm acts on the cluster: any handover it causes is measured on its own.
  const int64_t kubeadm_from = absl::ToUnixNanos(absl::Now());
  status = RunHandoffctl({"kubeadm-config", "apply", "--kubeconfig", Path("admin.conf"),
                          "--settings", Path("settings.yaml")},
                         "handoffctl-kubeadm-config");
  std::vector<ClusterNode> member_nodes;
  for (const NodeRun& node : nodes_) member_nodes.push_back(node.node);
  if (status.ok()) status = cluster_->UpgradeWithKubeadm(member_nodes);
  if (status.ok()) status = CheckExternalControlPlanes(members, kVersionNext);
  if (!status.ok()) return status;

  NodeRun& spare = spares_.front();
  const std::string name = spare.spec().name;
  status = cluster_->JoinWithKubeadm(spare.node, KubeadmJoin::kNextExternal);
  // The agent starts once the machine has joined, as a package's unit would after kubeadm.
  if (status.ok()) status = StartAgent(spare);
  if (!status.ok()) return status;
  // Rule M2 takes a node in only once its agent has verified its components healthy.
  absl::StatusOr<v1::RolloutStatus> candidate = Await(
      StrCat(name, "'s agent to report it external and healthy, as a candidate"),
      [&name](const v1::RolloutStatus& s) {
        for (const v1::NodeProgress& node : s.candidates()) {
          if (node.name() == name && node.state() == v1::NODE_STATE_EXTERNAL && node.healthy()) {
            return true;
          }
        }
        return false;
      },
      absl::Seconds(30) + cluster_->MoveBudget());
  if (!candidate.ok()) return candidate.status();
  Say(StrCat(name, " joined at ", kVersionNext,
             ": its agent reports it external (no cloud-controller-manager: kubeadm writes none)"));
  status = Call(StrCat("nodes add ", name), [&name](ctl::OperatorClient& client) {
    v1::AddNodeRequest request;
    request.set_node(name);
    request.set_reason("kubeadm join --control-plane after the move");
    return client.AddNode(request).status();
  });
  if (!status.ok()) return status;
  const size_t members_now = nodes_.size() + 1;
  absl::StatusOr<v1::RolloutStatus> done = Await(
      StrCat(name, " to be finalized with the others"),
      [members_now](const v1::RolloutStatus& s) {
        return s.halted() ||
               (s.phase() == v1::RolloutStatus::DONE &&
                static_cast<size_t>(s.nodes_size()) == members_now &&
                AllAt(s, v1::NODE_STATE_FINALIZED));
      },
      ForMoves(2));
  if (!done.ok()) return done.status();
  if (done->halted()) {
    return absl::AbortedError(StrCat("the rollout halted: ", done->halt_reason()));
  }
  members.push_back(name);
  status = CheckExternalControlPlanes(members, kVersionNext);
  if (status.ok()) status = CheckProviderIds();
  if (!status.ok()) return status;

  // Every handover since kubeadm began: none may have left the controllers without a runner for
  // longer than the monitor's bound.
  const MonitorReport& report = cluster_->Poll(absl::Now());
  int handovers = 0;
  int64_t longest = 0;
  for (const Handover& handover : report.handovers) {
    if (handover.at_ns < kubeadm_from || !handover.from) continue;
    ++handovers;
    longest = std::max(longest, handover.gap_ns);
    if (handover.long_gap) {
      return absl::FailedPreconditionError(
          StrCat("a long gap while kubeadm upgraded and joined: ", handover.controller,
                 " had no "
                 "runner for ",
                 FormatSeconds(absl::Nanoseconds(handover.gap_ns))));
    }
  }
  Say(StrCat("while kubeadm upgraded and joined: ", handovers,
             " handover(s) of a cloud "
             "controller, the longest gap ",
             FormatSeconds(absl::Nanoseconds(longest))));
  return absl::OkStatus();
}

int SandboxRun::RunKubeadmUpgrade() {
  absl::Status status = UpgradeAndJoinAfterTheMove();
  if (!status.ok()) {
    err_ << "handoffctl sandbox: " << status.message() << "\n";
    return Summarise(false, StrCat("did not complete: ", status.message()));
  }
  return Summarise(true, StrCat("rollout to 1.27, finalize, kubeadm upgrade to ", kVersionNext,
                                " and a node joined at ", kVersionNext, " completed"));
}

}  // namespace handoff::sandbox
