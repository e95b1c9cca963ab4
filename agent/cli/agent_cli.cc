#include "agent/cli/agent_cli.h"

#include <algorithm>
#include <ostream>

#include "CLI/CLI.hpp"
#include "agent/base/strings.h"
#include "agent/base/unified_diff.h"
#include "agent/engine/classify.h"
#include "agent/engine/node_snapshot.h"
#include "agent/engine/planner.h"
#include "agent/engine/settings.h"
#include "agent/leadermigration/config.h"
#include "agent/manifest/kubelet_flags.h"
#include "nlohmann/json.hpp"

namespace handoff {
namespace {

namespace lm = leadermigration;

constexpr char kDescription[] =
    "handoff-agent moves one control-plane node from the in-tree AWS cloud provider\n"
    "(kube-controller-manager --cloud-provider=aws) to the AWS cloud-controller-manager with\n"
    "Leader Migration, one state at a time:\n"
    "  in-tree  ->  prepared  ->  migrated  ->  finalized   (and back the same way)\n"
    "  in-tree    kube-controller-manager runs the cloud controllers, no Leader Migration\n"
    "  prepared   kube-controller-manager also competes for the migration lease\n"
    "  migrated   version N+1, kube-controller-manager external, cloud-controller-manager\n"
    "             runs the cloud controllers under the migration lease\n"
    "  finalized  as migrated, Leader Migration switched off on the cloud-controller-manager\n";

// Options every node command shares, so one command line serves every step.
struct NodeOptions {
  std::string root = "/";
  std::string settings_file;
  std::string k8s_version;
  std::string ccm_image;
};

void AddNodeOptions(CLI::App& command, NodeOptions& options) {
  command.add_option("--root", options.root,
                     "Directory that host paths are taken under (default /; a copy of a node's "
                     "files for rehearsal)");
  command.add_option("--settings", options.settings_file,
                     "Settings file (YAML): paths, target version, cloud-controller-manager image "
                     "and flags, Leader Migration options; see README");
  command.add_option("--k8s-version", options.k8s_version,
                     "Version N+1 of the control plane, e.g. v1.27.3: re-tags kube-apiserver, "
                     "kube-controller-manager and kube-scheduler when moving to migrated; ignored "
                     "by other steps");
  command.add_option("--ccm-image", options.ccm_image,
                     "cloud-controller-manager image, e.g. "
                     "registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.1; needed to "
                     "move to migrated, ignored by other steps");
}

class Commands {
 public:
  Commands(std::ostream& out, std::ostream& err, const FileSystemFactory& open_root)
      : out_(out), err_(err), open_root_(open_root) {}

  absl::StatusOr<Settings> LoadSettings(const NodeOptions& options) {
    Settings settings;
    if (!options.settings_file.empty()) {
      std::unique_ptr<FileSystem> fs = open_root_("");
      absl::StatusOr<std::string> text = fs->ReadFile(options.settings_file);
      if (!text.ok()) return text.status();
      absl::StatusOr<Settings> parsed = ParseSettings(*text, options.settings_file);
      if (!parsed.ok()) return parsed.status();
      settings = *std::move(parsed);
    }
    if (!options.k8s_version.empty()) {
      absl::StatusOr<KubeVersion> version = KubeVersion::Parse(options.k8s_version);
      if (!version.ok()) {
        return absl::InvalidArgumentError(StrCat("--k8s-version: ", version.status().message()));
      }
      settings.k8s_version = *version;
    }
    if (!options.ccm_image.empty()) settings.ccm.image = options.ccm_image;
    return settings;
  }

  int Status(const NodeOptions& options, const std::string& format) {
    absl::StatusOr<Settings> settings = LoadSettings(options);
    if (!settings.ok()) return Refuse(settings.status());
    std::unique_ptr<FileSystem> fs = open_root_(options.root);
    absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(*fs, settings->paths);
    if (!snapshot.ok()) return Refuse(snapshot.status());
    Classification result = Classify(*snapshot);
    if (format == "json") {
      out_ << StatusJson(*snapshot, result).dump(2) << "\n";
    } else {
      PrintStatusText(*snapshot, result);
    }
    return result.state == NodeState::kInconsistent ? kExitProblems : kExitOk;
  }

  int Plan(const NodeOptions& options, const std::string& target_name) {
    absl::StatusOr<NodeState> target = ParseTargetState(target_name);
    if (!target.ok()) return Refuse(target.status());
    absl::StatusOr<Settings> settings = LoadSettings(options);
    if (!settings.ok()) return Refuse(settings.status());
    std::unique_ptr<FileSystem> fs = open_root_(options.root);
    absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(*fs, settings->paths);
    if (!snapshot.ok()) return Refuse(snapshot.status());
    Classification current = Classify(*snapshot);
    absl::StatusOr<handoff::Plan> plan = PlanTransition(*snapshot, current, *target, *settings);
    if (!plan.ok()) return Refuse(plan.status());
    if (plan->empty()) {
      err_ << "the node is already " << NodeStateName(plan->to) << "; nothing to do\n";
      return kExitOk;
    }
    err_ << "plan: " << NodeStateName(plan->from) << " -> " << NodeStateName(plan->to) << ", "
         << plan->changes.size() << " file(s), written in this order:\n";
    for (const FileChange& change : plan->changes) {
      err_ << "  "
           << (!change.before  ? "create "
               : !change.after ? "remove "
                               : "replace ")
           << change.path << "\n";
    }
    for (const std::string& note : plan->notes) err_ << "note: " << note << "\n";
    for (const FileChange& change : plan->changes) {
      out_ << UnifiedDiff(change.path, change.before, change.after);
    }
    return kExitOk;
  }

  int LintConfig(const std::string& file, const std::string& component,
                 const std::string& version) {
    lm::LintOptions options;
    if (!component.empty()) {
      absl::StatusOr<lm::Component> parsed = lm::ParseComponent(component);
      if (!parsed.ok()) return Refuse(parsed.status());
      options.component = *parsed;
    }
    if (!version.empty()) {
      absl::StatusOr<KubeVersion> parsed = KubeVersion::Parse(version);
      if (!parsed.ok()) return Refuse(parsed.status());
      options.version = *parsed;
    }
    std::unique_ptr<FileSystem> fs = open_root_("");
    absl::StatusOr<std::string> text = fs->ReadFile(file);
    if (!text.ok()) return Refuse(text.status());
    lm::LintResult result = lm::Lint(*text, options);
    for (const lm::Problem& problem : result.problems) {
      out_ << lm::FormatProblem(file, problem) << "\n";
    }
    if (result.problems.empty()) {
      out_ << file << ": valid LeaderMigrationConfiguration\n";
      return kExitOk;
    }
    return kExitProblems;
  }

 private:
  int Refuse(const absl::Status& status) {
    err_ << "handoff-agent: " << status.message() << "\n";
    return kExitRefused;
  }

  static nlohmann::json ComponentJson(const ComponentView& view) {
    nlohmann::json json;
    json["manifest"] = view.path;
    json["image"] = view.pod.Image(view.container);
    json["version"] = view.version ? view.version->ToString() : "";
    json["cloudProvider"] = view.Flag("cloud-provider").value_or("");
    json["leaderMigration"] = view.LeaderMigrationEnabled();
    json["leaderMigrationConfig"] = view.Flag("leader-migration-config").value_or("");
    return json;
  }

  static nlohmann::json StatusJson(const NodeSnapshot& snapshot, const Classification& result) {
    nlohmann::json json;
    json["state"] = std::string(NodeStateName(result.state));
    json["problems"] = result.problems;
    json["warnings"] = result.warnings;
    nlohmann::json components = nlohmann::json::object();
    const std::pair<std::string_view, const std::optional<ComponentView>*> all[] = {
        {kKubeApiserver, &result.view.apiserver},
        {kKubeControllerManager, &result.view.controller_manager},
        {kCloudControllerManager, &result.view.cloud_controller_manager},
        {kKubeScheduler, &result.view.scheduler}};
    for (const auto& [name, view] : all) {
      components[std::string(name)] = *view ? ComponentJson(**view) : nlohmann::json(nullptr);
    }
    json["components"] = components;
    nlohmann::json kubelet;
    kubelet["flagsFile"] = snapshot.paths.kubelet_flags_file;
    kubelet["cloudProvider"] = nullptr;
    if (snapshot.kubelet_flags) {
      absl::StatusOr<KubeletFlagsFile> flags = KubeletFlagsFile::Parse(*snapshot.kubelet_flags, "");
      if (flags.ok()) kubelet["cloudProvider"] = flags->flags().Get("cloud-provider").value_or("");
    }
    json["kubelet"] = kubelet;
    json["leaderMigrationConfig"] = {{"path", snapshot.paths.leader_migration_config},
                                     {"present", snapshot.leader_migration_config.has_value()}};
    json["migrationRecord"] = snapshot.migration_record.has_value();
    return json;
  }

  void PrintStatusText(const NodeSnapshot& snapshot, const Classification& result) {
    out_ << "state: " << NodeStateName(result.state) << "\n";
    const std::pair<std::string_view, const std::optional<ComponentView>*> all[] = {
        {kKubeApiserver, &result.view.apiserver},
        {kKubeControllerManager, &result.view.controller_manager},
        {kCloudControllerManager, &result.view.cloud_controller_manager},
        {kKubeScheduler, &result.view.scheduler}};
    for (const auto& [name, view] : all) {
      out_ << "  " << name << ": ";
      if (!*view) {
        out_ << "absent\n";
        continue;
      }
      const ComponentView& c = **view;
      out_ << c.pod.Image(c.container);
      if (c.component != kKubeScheduler) {
        out_ << ", --cloud-provider=" << c.Flag("cloud-provider").value_or("(none)");
      }
      if (c.component == kKubeControllerManager || c.component == kCloudControllerManager) {
        out_ << ", leader migration "
             << (c.LeaderMigrationEnabled()
                     ? StrCat("on (",
                              c.Flag("leader-migration-config").value_or("default configuration"),
                              ")")
                     : std::string("off"));
      }
      out_ << "\n";
    }
    if (snapshot.kubelet_flags) {
      absl::StatusOr<KubeletFlagsFile> flags = KubeletFlagsFile::Parse(*snapshot.kubelet_flags, "");
      if (flags.ok()) {
        out_ << "  kubelet: --cloud-provider="
             << flags->flags().Get("cloud-provider").value_or("(none)") << "\n";
      }
    }
    for (const std::string& problem : result.problems) out_ << "problem: " << problem << "\n";
    for (const std::string& warning : result.warnings) out_ << "warning: " << warning << "\n";
  }

  std::ostream& out_;
  std::ostream& err_;
  const FileSystemFactory& open_root_;
};

}  // namespace

int RunAgentCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
                const FileSystemFactory& open_root) {
  CLI::App app(kDescription, "handoff-agent");
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success; 1 lint-config found problems or status found the node\n"
      "inconsistent; 2 refused (bad usage, unreadable input, or a move that is not allowed).");
  Commands commands(out, err, open_root);

  NodeOptions status_options;
  std::string format = "text";
  CLI::App* status = app.add_subcommand(
      "status",
      "Show the node's state (in-tree, prepared, migrated, finalized or inconsistent) "
      "and every problem");
  AddNodeOptions(*status, status_options);
  status->add_option("-o,--output", format, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}));

  NodeOptions plan_options;
  std::string target;
  CLI::App* plan = app.add_subcommand(
      "plan", "Print, as unified diffs, every file a move to --to would write; writes nothing");
  plan->add_option("--to", target,
                   "Target state, one step from the current one: in-tree, "
                   "prepared, migrated or finalized")
      ->required();
  AddNodeOptions(*plan, plan_options);

  std::string lint_file;
  std::string lint_component;
  std::string lint_version;
  CLI::App* lint = app.add_subcommand(
      "lint-config",
      "Check a LeaderMigrationConfiguration file (e.g. /etc/leadermigration.conf), "
      "including the mistakes copied from the upstream docs");
  lint->add_option("FILE", lint_file, "The file to check")->required();
  lint->add_option("--component", lint_component,
                   "The manager that reads it: kube-controller-manager or cloud-controller-manager "
                   "(checks names and assignments for that manager)");
  lint->add_option("--k8s-version", lint_version,
                   "That manager's version, e.g. v1.27 (controller names changed in 1.28)");

  std::vector<std::string> args(argv + 1, argv + argc);
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitRefused;
  }
  if (status->parsed()) return commands.Status(status_options, format);
  if (plan->parsed()) return commands.Plan(plan_options, target);
  return commands.LintConfig(lint_file, lint_component, lint_version);
}

}  // namespace handoff
