// handoffctl preflight: every check before the first move, read-only, as a table of named
// checks with their verdicts (coordinator/preflight/cluster_checks.h).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "coordinator/preflight/check_report.h"
#include "coordinator/preflight/cluster_checks.h"
#include "coordinator/preflight/node_checks.h"
#include "ctl/command_context.h"

namespace handoff::ctl {
namespace {

struct PreflightFlags {
  ConnectionOptions connection;
  CoordinatorOptions coordinator;
  std::string format = "text";
  std::string settings_file;
  std::string strategy = "leader-migration";
  CcmIdentityFlags ccm;
};

// The agents as the coordinator knows them: every member's agent connected, its node consistent
// and healthy.
// "a, b, c, d, e and 12 more".
std::string FirstNames(const std::vector<std::string>& names) {
  constexpr size_t kShown = 5;
  if (names.size() <= kShown) return StrJoin(names, ", ");
  return StrCat(StrJoin(std::vector<std::string>(names.begin(), names.begin() + kShown), ", "),
                " and ", names.size() - kShown, " more");
}

// The workers' agents: every Node without the control-plane role needs one (its kubelet moves
// only through it), and one whose node is inconsistent will not be moved until it is repaired.
preflight::CheckResult CheckWorkerAgents(const v1::NodesResponse& nodes) {
  preflight::CheckResult result{"worker-agents", preflight::Verdict::kOk, {}, ""};
  std::vector<std::string> without;
  std::vector<std::string> inconsistent;
  size_t workers = 0;
  for (const v1::NodeInfo& node : nodes.nodes()) {
    if (node.role() != v1::NODE_ROLE_WORKER) continue;
    ++workers;
    if (node.without_agent()) {
      without.push_back(node.name());
    } else if (node.connected() && node.state() == v1::NODE_STATE_INCONSISTENT) {
      inconsistent.push_back(StrCat(
          node.name(), ": inconsistent (",
          StrJoin(std::vector<std::string>(node.reasons().begin(), node.reasons().end()), "; "),
          ")"));
    }
  }
  if (!without.empty()) {
    result.verdict = preflight::Verdict::kFail;
    result.evidence.push_back(StrCat(without.size(),
                                     without.size() == 1 ? " worker has" : " workers have",
                                     " no agent: their kubelets cannot be moved (",
                                     FirstNames(without), ")"));
    result.action =
        "install the worker agent (README: moving the workers) on every worker; a kubelet 1.27 "
        "refuses --cloud-provider=aws, so no node may be left";
  }
  if (!inconsistent.empty()) {
    if (result.verdict == preflight::Verdict::kOk) result.verdict = preflight::Verdict::kWarn;
    result.evidence.insert(result.evidence.end(), inconsistent.begin(), inconsistent.end());
    if (result.action.empty()) {
      result.action = "repair what `handoff-agent status` lists on those workers";
    }
  }
  if (result.evidence.empty()) {
    result.evidence.push_back(workers == 0 ? std::string("no workers: every Node is a "
                                                         "control-plane node")
                                           : StrCat(workers, workers == 1 ? " worker" : " workers",
                                                    ": agent known, node consistent"));
  }
  return result;
}

// W3: whether the cluster may now be upgraded to 1.27, as the coordinator judges it. A warning
// while it may not: before and during the move that is the expected answer.
preflight::CheckResult CheckUpgradeGate(const v1::NodesResponse& nodes) {
  preflight::CheckResult result{"upgrade-1.27", preflight::Verdict::kOk, {}, ""};
  const v1::UpgradeGate& gate = nodes.upgrade_gate();
  if (gate.open()) {
    result.evidence.push_back(
        "every kubelet and manager is external and every Node initialized: the cluster may be "
        "upgraded to 1.27");
    return result;
  }
  result.verdict = preflight::Verdict::kWarn;
  result.evidence.assign(gate.reasons().begin(), gate.reasons().end());
  result.action = "finish the move (handoffctl start --finalize) before upgrading to 1.27";
  return result;
}

preflight::CheckResult CheckAgents(const v1::NodesResponse& nodes) {
  preflight::CheckResult result{"agents", preflight::Verdict::kOk, {}, ""};
  std::vector<std::string> stray_only;
  size_t members = 0;
  for (const v1::NodeInfo& node : nodes.nodes()) {
    // Workers' agents have checks of their own; this one is the control plane's.
    if (node.candidate() || node.role() == v1::NODE_ROLE_WORKER) continue;
    ++members;
    if (!node.connected()) {
      result.evidence.push_back(StrCat(node.name(), ": no agent is connected"));
    } else if (node.state() == v1::NODE_STATE_INCONSISTENT &&
               node.facts().inconsistent_only_for_stray_files()) {
      // Its stray-files check names the files; the coordinator still refuses to start beside it.
      stray_only.push_back(StrCat(node.name(),
                                  ": inconsistent only for its stray manifest files "
                                  "(see stray-files)"));
    } else if (node.state() == v1::NODE_STATE_INCONSISTENT) {
      result.evidence.push_back(StrCat(
          node.name(), ": inconsistent (",
          StrJoin(std::vector<std::string>(node.reasons().begin(), node.reasons().end()), "; "),
          ")"));
    } else if (!node.healthy()) {
      result.evidence.push_back(StrCat(node.name(), ": not healthy (", node.health_detail(), ")"));
    }
  }
  if (!result.evidence.empty()) {
    result.verdict = preflight::Verdict::kFail;
    result.evidence.insert(result.evidence.end(), stray_only.begin(), stray_only.end());
    result.action =
        "start handoff-agent on every control-plane node and repair what "
        "`handoff-agent status` lists there";
  } else if (!stray_only.empty()) {
    result.verdict = preflight::Verdict::kWarn;
    result.evidence = stray_only;
    result.action =
        "move the stray files out (stray-files): the coordinator does not start "
        "beside an inconsistent node";
  } else if (members == 0) {
    result.verdict = preflight::Verdict::kFail;
    result.evidence.push_back("the coordinator has no node in its rollout");
    result.action = "start the coordinator with --nodes naming every control-plane node";
  } else {
    result.evidence.push_back(StrCat(members, " node", members == 1 ? "" : "s",
                                     ": agent connected, node consistent and healthy"));
  }
  return result;
}

int RunPreflight(CommandContext& context, const PreflightFlags& flags) {
  preflight::ClusterCheckOptions options;
  absl::StatusOr<Settings> settings = context.ReadSettings(flags.settings_file);
  if (!settings.ok()) return context.Fail(settings.status());
  options.settings = *std::move(settings);
  options.downtime = flags.strategy == "downtime";
  options.rbac.migration_lease = options.settings.leader_name;
  if (absl::Status identity = ApplyCcmIdentity(flags.ccm, options.rbac); !identity.ok()) {
    return context.Fail(identity);
  }

  std::vector<preflight::CheckResult> results;
  std::optional<std::vector<preflight::NodeFacts>> node_facts;
  const bool ask_coordinator = !flags.coordinator.address.empty() ||
                               context.environment().get_env("HANDOFF_COORDINATOR").has_value();
  if (ask_coordinator) {
    CoordinatorEndpoint endpoint;
    absl::StatusOr<std::unique_ptr<OperatorClient>> coordinator =
        context.ConnectCoordinator(flags.coordinator, endpoint);
    if (!coordinator.ok()) return context.Fail(coordinator.status());
    absl::StatusOr<v1::NodesResponse> nodes = (*coordinator)->Nodes(v1::NodesRequest());
    if (!nodes.ok()) {
      context.err() << "handoffctl: the coordinator at " << endpoint.address
                    << " did not list its nodes: " << nodes.status().message() << "\n";
      return nodes.status().code() == absl::StatusCode::kUnavailable ||
                     nodes.status().code() == absl::StatusCode::kDeadlineExceeded
                 ? kExitUnavailable
                 : kExitRefused;
    }
    results.push_back(CheckAgents(*nodes));
    results.push_back(CheckWorkerAgents(*nodes));
    // (A coordinator before the workers says nothing of the gate.)
    if (nodes->has_upgrade_gate()) results.push_back(CheckUpgradeGate(*nodes));
    std::vector<preflight::NodeFacts> facts;
    for (const v1::NodeInfo& node : nodes->nodes()) {
      if (node.candidate() || node.without_agent()) continue;
      facts.push_back(
          preflight::FromReport(node.name(), node.has_facts() ? &node.facts() : nullptr));
      if (std::optional<preflight::KubeletFacts> kubelet =
              preflight::KubeletFromReport(node.facts())) {
        options.kubelets[node.name()] = *kubelet;
      }
    }
    node_facts = std::move(facts);
  } else {
    results.push_back(preflight::CheckResult{
        "agents",
        preflight::Verdict::kWarn,
        {"not asked: no coordinator was given"},
        "pass --coordinator (or set HANDOFF_COORDINATOR) to check every node's agent"});
    results.push_back(preflight::CheckResult{
        "worker-agents",
        preflight::Verdict::kWarn,
        {"not asked: only the coordinator knows the workers' agents (no coordinator)"},
        "pass --coordinator (or set HANDOFF_COORDINATOR)"});
  }

  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = context.Connect(flags.connection);
  if (!client.ok()) return context.Fail(client.status());
  const preflight::ClusterView view = preflight::ReadClusterView(**client, options);
  for (preflight::CheckResult& result :
       preflight::RunNodeChecks(view, node_facts, options.settings.cluster_id)) {
    results.push_back(std::move(result));
  }
  for (preflight::CheckResult& result : preflight::RunClusterChecks(view, options)) {
    results.push_back(std::move(result));
  }

  if (flags.format == "json") {
    context.out() << preflight::ToJson(results).dump(2) << "\n";
  } else {
    context.out() << preflight::FormatText(results);
  }
  return preflight::AnyFailed(results) ? kExitProblems : kExitOk;
}

}  // namespace

void AddPreflightCommands(CLI::App& app, CommandContext& context) {
  auto flags = std::make_shared<PreflightFlags>();
  CLI::App* command = app.add_subcommand(
      "preflight",
      "Check, read-only, everything that has made this migration fail in the field, days "
      "before the change window: each check has a name, a verdict (ok, warn or fail), the "
      "evidence naming the objects, and what to do. The cluster (through the kubeconfig): rbac "
      "(both managers may use the migration lease, asked of the API server as each manager), "
      "ebs-csi (in-tree EBS volumes and classes need the EBS CSI driver), ecr-credentials "
      "(images from ECR need the kubelet's credential provider), cloud-routes (the "
      "cloud-controller-manager writes VPC routes exactly when the kube-controller-manager "
      "does), leader-elect (both managers elect a leader), control-plane (every control-plane "
      "node and pod healthy). The coordinator, when given (--coordinator or "
      "$HANDOFF_COORDINATOR), and through it each node's agent: agents (connected, node "
      "consistent and healthy), node-names (each Node's providerID that of its instance, from "
      "the instance metadata; a name other than the instance's private DNS name warns), "
      "stray-files (no file "
      "in a manifest directory that is no component's manifest), cluster-tag (each instance "
      "tagged kubernetes.io/cluster/<id> owned or shared, as EC2 shows it to the instance with "
      "its instance profile: the cloud-controller-manager exits at start without it); the "
      "agents also report each "
      "kubelet's credential-provider flags for ecr-credentials. Changes nothing. Exit code 0 when "
      "no check fails (warnings included), 1 when "
      "one does");
  AddConnectionOptions(*command, flags->connection);
  AddCoordinatorOptions(*command, flags->coordinator);
  AddOutputOption(*command, flags->format);
  command->add_option("--settings", flags->settings_file,
                      "The rollout's settings file (the coordinator's --settings): the "
                      "cloud-controller-manager's flags and the migration lease's name are "
                      "checked as handoff will write them (default: the built-in settings)");
  command
      ->add_option("--strategy", flags->strategy,
                   "leader-migration (default), replace or downtime: downtime uses no Leader "
                   "Migration, so the migration lease's RBAC is not checked")
      ->check(CLI::IsMember({"leader-migration", "replace", "downtime"}));
  AddCcmIdentityOptions(*command, flags->ccm);
  command->callback([&context, flags] { context.exit_code = RunPreflight(context, *flags); });
}

}  // namespace handoff::ctl
