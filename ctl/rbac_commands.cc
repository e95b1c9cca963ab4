// handoffctl rbac plan|apply: the migration lease's RBAC (coordinator/kube/rbac.h).
#include <memory>

#include "common/base/strings.h"
#include "coordinator/kube/rbac.h"
#include "ctl/command_context.h"
#include "nlohmann/json.hpp"

namespace handoff::ctl {
namespace {

struct RbacFlags {
  ConnectionOptions connection;
  std::string format = "text";
  std::string migration_lease = std::string(kube::kMigrationLeaseName);
  CcmIdentityFlags ccm;
  std::string kcm_role;
  std::string ccm_role;
};

void AddRbacFlags(CLI::App& command, RbacFlags& flags) {
  AddConnectionOptions(command, flags.connection);
  AddOutputOption(command, flags.format);
  command.add_option("--migration-lease", flags.migration_lease,
                     "Name of the migration lease (leaderName of the Leader Migration "
                     "configuration; default cloud-provider-extraction-migration)");
  AddCcmIdentityOptions(command, flags.ccm);
  command.add_option("--kcm-role", flags.kcm_role,
                     "The kube-controller-manager's leader-locking Role in kube-system (default "
                     "system::leader-locking-kube-controller-manager)");
  command.add_option("--ccm-role", flags.ccm_role,
                     "The cloud-controller-manager's leader-locking Role and RoleBinding (default "
                     "system::leader-locking-cloud-controller-manager)");
}

absl::StatusOr<kube::RbacOptions> OptionsOf(const RbacFlags& flags) {
  kube::RbacOptions options;
  options.migration_lease = flags.migration_lease;
  if (!flags.kcm_role.empty()) options.kcm_role = flags.kcm_role;
  if (!flags.ccm_role.empty()) options.ccm_role = flags.ccm_role;
  if (absl::Status identity = ApplyCcmIdentity(flags.ccm, options); !identity.ok()) {
    return identity;
  }
  return options;
}

nlohmann::ordered_json ChangeJson(const kube::RbacChange& change) {
  nlohmann::ordered_json json;
  json["action"] = change.action == kube::RbacChange::Action::kCreate ? "create" : "update";
  json["kind"] = std::string(change.type->kind);
  json["namespace"] = change.ns;
  json["name"] = change.name;
  json["reasons"] = change.reasons;
  json["before"] = change.before ? *change.before : nlohmann::ordered_json(nullptr);
  json["after"] = change.after;
  return json;
}

void PrintChanges(std::ostream& stream, const std::vector<kube::RbacChange>& changes) {
  for (const kube::RbacChange& change : changes) {
    stream << "  " << change.Headline() << "\n";
    for (const std::string& reason : change.reasons) stream << "    - " << reason << "\n";
  }
}

int Plan(CommandContext& context, const RbacFlags& flags) {
  absl::StatusOr<kube::RbacOptions> options = OptionsOf(flags);
  if (!options.ok()) return context.Fail(options.status());
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = context.Connect(flags.connection);
  if (!client.ok()) return context.Fail(client.status());
  absl::StatusOr<kube::RbacState> state = kube::ReadRbac(**client, *options);
  if (!state.ok()) return context.Fail(state.status());
  const kube::RbacPlan plan = kube::PlanRbac(*state, *options);
  if (flags.format == "json") {
    nlohmann::ordered_json json;
    json["changes"] = nlohmann::ordered_json::array();
    for (const kube::RbacChange& change : plan.changes)
      json["changes"].push_back(ChangeJson(change));
    json["problems"] = plan.problems;
    context.out() << json.dump(2) << "\n";
    return plan.problems.empty() ? kExitOk : kExitRefused;
  }
  for (const std::string& problem : plan.problems) context.err() << "problem: " << problem << "\n";
  if (plan.empty()) {
    if (plan.problems.empty()) {
      context.err() << "rbac: no changes; Roles " << options->kcm_role << " and "
                    << options->ccm_role << " already allow lease " << options->migration_lease
                    << ", and " << options->ccm_subject.ToString() << " is bound\n";
    }
    return plan.problems.empty() ? kExitOk : kExitRefused;
  }
  context.err() << "rbac plan: " << plan.changes.size() << " change(s) in namespace " << options->ns
                << "; nothing is written (`handoffctl rbac apply` makes them):\n";
  PrintChanges(context.err(), plan.changes);
  for (const kube::RbacChange& change : plan.changes) context.out() << change.Diff();
  return plan.problems.empty() ? kExitOk : kExitRefused;
}

int Apply(CommandContext& context, const RbacFlags& flags) {
  absl::StatusOr<kube::RbacOptions> options = OptionsOf(flags);
  if (!options.ok()) return context.Fail(options.status());
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = context.Connect(flags.connection);
  if (!client.ok()) return context.Fail(client.status());
  absl::StatusOr<kube::RbacApplyResult> result = kube::ApplyRbac(**client, *options);
  if (!result.ok()) return context.Fail(result.status());
  if (flags.format == "json") {
    nlohmann::ordered_json json;
    json["applied"] = nlohmann::ordered_json::array();
    for (const kube::RbacChange& change : result->applied) {
      json["applied"].push_back(ChangeJson(change));
    }
    json["conflictsRetried"] = result->conflicts;
    context.out() << json.dump(2) << "\n";
    return kExitOk;
  }
  if (result->applied.empty()) {
    context.out() << "rbac: no changes; Roles " << options->kcm_role << " and " << options->ccm_role
                  << " already allow lease " << options->migration_lease << ", and "
                  << options->ccm_subject.ToString() << " is bound\n";
    return kExitOk;
  }
  context.out() << "rbac: applied " << result->applied.size() << " change(s)";
  if (result->conflicts > 0) {
    context.out() << " (" << result->conflicts
                  << " conflict(s) with other writers, re-read and re-applied)";
  }
  context.out() << ":\n";
  PrintChanges(context.out(), result->applied);
  return kExitOk;
}

}  // namespace

void AddRbacCommands(CLI::App& app, CommandContext& context) {
  CLI::App* rbac = app.add_subcommand(
      "rbac",
      "Let both managers use the migration lease: append the missing rules to the "
      "kube-controller-manager's leader-locking Role, create the cloud-controller-manager's Role "
      "and RoleBinding when missing. Existing rules are kept as they are (unlike the upstream "
      "guide's `kubectl patch --type=merge`, which replaces them)");
  rbac->require_subcommand(1);
  auto plan_flags = std::make_shared<RbacFlags>();
  CLI::App* plan = rbac->add_subcommand(
      "plan",
      "Show what apply would change: a summary on stderr, each object's diff (YAML) on stdout. "
      "Writes nothing");
  AddRbacFlags(*plan, *plan_flags);
  plan->callback([&context, plan_flags] { context.exit_code = Plan(context, *plan_flags); });

  auto apply_flags = std::make_shared<RbacFlags>();
  CLI::App* apply = rbac->add_subcommand(
      "apply",
      "Make the changes plan shows, each as a read-modify-write with resourceVersion (re-read and "
      "re-applied on a conflict). Running it again changes nothing");
  AddRbacFlags(*apply, *apply_flags);
  apply->callback([&context, apply_flags] { context.exit_code = Apply(context, *apply_flags); });
}

}  // namespace handoff::ctl
