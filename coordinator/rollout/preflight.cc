#include "coordinator/rollout/preflight.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/leadermigration/config.h"
#include "common/base/strings.h"

namespace handoff::rollout {
namespace {

namespace lm = leadermigration;

class Problems {
 public:
  void Add(std::string check, std::string message) {
    problems_.push_back(PreflightProblem{std::move(check), std::move(message)});
  }
  std::vector<PreflightProblem> Take() { return std::move(problems_); }

 private:
  std::vector<PreflightProblem> problems_;
};

void CheckAgents(const PreflightInput& input, Problems& problems) {
  for (const NodeStatus& node : input.nodes) {
    if (!node.connected) {
      problems.Add("agents", StrCat(node.name, ": no agent is connected; start handoff-agent on "
                                    "the node (systemctl start handoff-agent)"));
    } else if (node.awaiting_hello) {
      problems.Add("agents", StrCat(node.name, ": its agent has not reported the node yet"));
    } else if (node.state == NodeState::kInconsistent) {
      problems.Add("agents", StrCat(node.name, ": inconsistent; `handoff-agent status` on the node "
                                    "lists what to repair"));
    }
  }
}

void CheckTransactions(const PreflightInput& input, Problems& problems) {
  for (const NodeStatus& node : input.nodes) {
    if (node.unfinished_transactions.empty()) continue;
    problems.Add("transactions",
                 StrCat(node.name, ": unfinished transaction ",
                        StrJoin(node.unfinished_transactions, ", "),
                        "; run `handoff-agent recover` on the node to settle it"));
  }
}

// The node called `name`, or nullptr.
const NodeStatus* Find(const PreflightInput& input, const std::string& name) {
  for (const NodeStatus& node : input.nodes) {
    if (node.name == name) return &node;
  }
  return nullptr;
}

void CheckLease(const PreflightInput& input, const std::string& what, const PreflightLease& lease,
                Problems& problems) {
  if (lease.holder_host.empty()) {
    problems.Add("leases", StrCat("the ", what, " is not held by any manager; wait until one "
                                  "leads (a manager that just restarted takes it within a lease "
                                  "duration)"));
    return;
  }
  const NodeStatus* node = lease.holder_node.empty() ? nullptr : Find(input, lease.holder_node);
  if (node == nullptr) {
    problems.Add("leases",
                 StrCat("the ", what, " is held by a manager on ", lease.holder_host,
                        ", which is not a node of this rollout; list every control-plane node "
                        "in --nodes (or stop the manager there)"));
  } else if (!node->connected || !node->healthy) {
    problems.Add("leases", StrCat("the ", what, " is held by a manager on ", node->name,
                                  ", which is ", node->connected ? "not healthy" : "not connected",
                                  "; the holder's node must be seen healthy before anything moves"));
  }
}

void CheckLeases(const PreflightInput& input, Problems& problems) {
  bool any_ccm = false, any_leader_migration = false;
  for (const NodeStatus& node : input.nodes) {
    any_ccm = any_ccm || RunsCloudControllerManager(node.state);
    any_leader_migration = any_leader_migration || node.state == NodeState::kPrepared ||
                           node.state == NodeState::kMigrated;
  }
  CheckLease(input, "kube-controller-manager's lease (kube-system/kube-controller-manager)",
             input.kube_controller_manager, problems);
  if (any_ccm) {
    CheckLease(input, "cloud-controller-manager's lease (kube-system/cloud-controller-manager)",
               input.cloud_controller_manager, problems);
  }
  if (any_leader_migration) {
    CheckLease(input, StrCat("migration lease (kube-system/", input.settings.leader_name, ")"),
               input.migration, problems);
  }
}

// The kube-controller-manager versions the agents report, by version text, with the nodes.
std::map<std::string, std::vector<std::string>> KcmVersions(const PreflightInput& input) {
  std::map<std::string, std::vector<std::string>> versions;
  for (const NodeStatus& node : input.nodes) {
    if (!node.kube_controller_manager_version.empty()) {
      versions[node.kube_controller_manager_version].push_back(node.name);
    }
  }
  return versions;
}

// The cloud-controller-manager's version: its image's tag, or the settings' kubernetesVersion.
std::optional<KubeVersion> CcmVersion(const Settings& settings, Problems& problems) {
  if (settings.ccm.image.empty()) {
    problems.Add("image", "the settings name no cloud-controller-manager image "
                          "(cloudControllerManager.image); set it before starting");
    return std::nullopt;
  }
  if (absl::StatusOr<KubeVersion> tagged = KubeVersion::FromImage(settings.ccm.image);
      tagged.ok()) {
    return *tagged;
  }
  if (settings.k8s_version) return settings.k8s_version;
  problems.Add("image", StrCat("the cloud-controller-manager image ", settings.ccm.image,
                               " names no version and the settings no kubernetesVersion; set one"));
  return std::nullopt;
}

void CheckImageAndLeaderMigration(const PreflightInput& input, Problems& problems) {
  const std::optional<KubeVersion> ccm = CcmVersion(input.settings, problems);
  const std::map<std::string, std::vector<std::string>> kcm_versions = KcmVersions(input);
  std::vector<KubeVersion> kcms;  // the in-tree managers' versions, each once
  for (const NodeStatus& node : input.nodes) {
    if (node.kube_controller_manager_version.empty() &&
        !RunsCloudControllerManager(node.state) && node.connected) {
      problems.Add("image", StrCat(node.name, ": its kube-controller-manager's image names no "
                                   "Kubernetes version (tag it vX.Y.Z): the cloud-controller-"
                                   "manager's version and the Leader Migration file depend on it"));
    }
  }
  for (const auto& [text, names] : kcm_versions) {
    absl::StatusOr<KubeVersion> version = KubeVersion::Parse(text);
    if (!version.ok()) {
      problems.Add("image", StrCat(StrJoin(names, ", "), ": kube-controller-manager version \"",
                                   text, "\" does not parse: ", version.status().message()));
      continue;
    }
    // A migrated node's manager is already N+1; only the in-tree ones (N) set the pair.
    bool in_tree_manager = false;
    for (const std::string& name : names) {
      const NodeStatus* node = Find(input, name);
      in_tree_manager = in_tree_manager || (node && !RunsCloudControllerManager(node->state));
    }
    if (!in_tree_manager) continue;
    kcms.push_back(*version);
    if (ccm && !(ccm->major == version->major && ccm->minor == version->minor + 1)) {
      problems.Add("image",
                   StrCat("the cloud-controller-manager is ", ccm->ToString(), " (",
                          input.settings.ccm.image, ") but the kube-controller-manager on ",
                          StrJoin(names, ", "), " is ", version->ToString(),
                          ": Leader Migration moves the controllers to the next minor version "
                          "only; use a cloud-controller-manager v", version->major, ".",
                          version->minor + 1, ".x image"));
    }
  }

  // The files, as the agents' planner renders them (agent/engine/planner.cc RenderConfig).
  auto lint = [&](lm::Component reader, const KubeVersion& version, const std::string& where) {
    lm::RenderOptions options;
    options.reader = reader;
    options.reader_version = version;
    options.wildcard = input.settings.wildcard;
    options.include_nodeipam = input.settings.migrate_nodeipam;
    options.leader_name = input.settings.leader_name;
    absl::StatusOr<std::string> text = lm::Render(options);
    const std::string file =
        StrCat(input.settings.paths.leader_migration_config, " for the ", lm::ComponentName(reader),
               " ", version.ToString(), " (", where, ")");
    if (!text.ok()) {
      problems.Add("leader-migration", StrCat(file, ": ", text.status().message()));
      return;
    }
    lm::LintOptions lint_options;
    lint_options.component = reader;
    lint_options.version = version;
    const lm::LintResult result = lm::Lint(*text, lint_options);
    for (const lm::Problem& problem : result.problems) {
      problems.Add("leader-migration", lm::FormatProblem(file, problem));
    }
  };
  if (input.downtime) return;
  for (const KubeVersion& version : kcms) {
    lint(lm::Component::kKubeControllerManager, version, "prepared nodes");
  }
  if (ccm) lint(lm::Component::kCloudControllerManager, *ccm, "migrated nodes");
}

}  // namespace

std::vector<PreflightProblem> Preflight(const PreflightInput& input) {
  Problems problems;
  CheckAgents(input, problems);
  CheckTransactions(input, problems);
  if (input.cluster_checked) {
    CheckLeases(input, problems);
    if (!input.rbac_ready && !input.downtime) {
      problems.Add("rbac", "the migration-lease RBAC is not in place: run `handoffctl rbac apply` "
                           "(both managers must be allowed to use the migration lease)");
    }
  }
  CheckImageAndLeaderMigration(input, problems);
  return problems.Take();
}

std::vector<PreflightProblem> Preflight(PreflightInput input, std::string_view settings_yaml,
                                        std::string_view source) {
  absl::StatusOr<Settings> settings = ParseSettings(settings_yaml, source);
  if (settings.ok()) {
    input.settings = *std::move(settings);
    return Preflight(input);
  }
  std::vector<PreflightProblem> problems = {{"settings", std::string(settings.status().message())}};
  for (PreflightProblem& problem : Preflight(input)) {
    if (problem.check != "image" && problem.check != "leader-migration") {
      problems.push_back(std::move(problem));
    }
  }
  return problems;
}

absl::Status CheckIgnorable(const std::vector<std::string>& ignore) {
  // Those above, and those of `handoffctl preflight` the coordinator also makes
  // (coordinator/preflight/cluster_checks.h).
  static const std::set<std::string> kChecks = {
      "agents",           "transactions", "leases",       "rbac",          "image",
      "leader-migration", "settings",     "node-names",   "stray-files",   "ebs-csi",
      "ecr-credentials",  "cloud-routes", "leader-elect", "control-plane", "cluster-tag",
      "worker-agents"};
  for (const std::string& check : std::set<std::string>(ignore.begin(), ignore.end())) {
    if (check != "all" && kChecks.count(check) == 0) {
      return absl::InvalidArgumentError(
          StrCat("no preflight check is called \"", check, "\"; the checks are ",
                 StrJoin(std::vector<std::string>(kChecks.begin(), kChecks.end()), ", "),
                 " (or all)"));
    }
  }
  return absl::OkStatus();
}

PreflightVerdict Judge(std::vector<PreflightProblem> problems,
                       const std::vector<std::string>& ignore) {
  const std::set<std::string> ignored(ignore.begin(), ignore.end());
  PreflightVerdict verdict;
  for (PreflightProblem& problem : problems) {
    const bool skip = ignored.count("all") > 0 || ignored.count(problem.check) > 0;
    (skip ? verdict.ignored : verdict.refusing).push_back(std::move(problem));
  }
  return verdict;
}

std::string DescribePreflight(const std::vector<PreflightProblem>& problems) {
  std::string text = "the preflight checks refuse to start the rollout (nothing was moved):";
  for (const PreflightProblem& problem : problems) {
    StrAppend(&text, "\n  [", problem.check, "] ", problem.message);
  }
  return text;
}

}  // namespace handoff::rollout
