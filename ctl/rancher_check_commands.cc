// handoffctl rancher check cordon|ccm|nodes, rancher cordon, rancher uncordon: the checks and the
// cordon the Rancher guide (RKE2 and RKE tabs) has operators run by hand between its phases
// (coordinator/kube/cordon.h, daemonset.h, nodes.h).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/base/strings.h"
#include "coordinator/kube/cordon.h"
#include "coordinator/kube/daemonset.h"
#include "coordinator/kube/nodes.h"
#include "ctl/command_context.h"

namespace handoff::ctl {
namespace {

// kubectl rollout status is told of changes by a watch; handoff polls at this pace instead.
constexpr absl::Duration kCcmPollInterval = absl::Seconds(2);

struct DistributionFlags {
  ConnectionOptions connection;
  std::string distribution;
};

struct CcmFlags {
  ConnectionOptions connection;
  std::string wait;  // "" = look once
};

void AddDistributionOption(CLI::App& command, std::string& distribution) {
  command
      .add_option("--distribution", distribution,
                  "rke2 (nodes labelled node-role.kubernetes.io/control-plane=true) or rke "
                  "(node-role.kubernetes.io/controlplane=true)")
      ->required();
}

// The distribution and a client, or the exit code of the failure (already reported).
struct Connected {
  kube::RancherDistribution distribution = kube::RancherDistribution::kRke2;
  std::unique_ptr<kube::KubeClient> client;
  int failure = kExitOk;
};

Connected ConnectFor(CommandContext& context, const DistributionFlags& flags) {
  Connected connected;
  absl::StatusOr<kube::RancherDistribution> distribution =
      kube::ParseRancherDistribution(flags.distribution);
  if (!distribution.ok()) {
    connected.failure = context.Fail(distribution.status());
    return connected;
  }
  connected.distribution = *distribution;
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = context.Connect(flags.connection);
  if (!client.ok()) {
    connected.failure = context.Fail(client.status());
    return connected;
  }
  connected.client = *std::move(client);
  return connected;
}

std::string NoControlPlaneNodes(kube::RancherDistribution distribution) {
  return StrCat("no node is labelled ", kube::ControlPlaneSelector(distribution),
                " (is --distribution ", kube::RancherDistributionName(distribution),
                " the cluster's distribution?)\n");
}

int CheckCordon(CommandContext& context, const DistributionFlags& flags) {
  Connected connected = ConnectFor(context, flags);
  if (connected.client == nullptr) return connected.failure;
  absl::StatusOr<std::vector<kube::Json>> nodes =
      kube::ListRancherControlPlaneNodes(*connected.client, connected.distribution);
  if (!nodes.ok()) return context.Fail(nodes.status());
  if (nodes->empty()) {
    context.out() << NoControlPlaneNodes(connected.distribution);
    return kExitProblems;
  }
  const std::vector<std::string> schedulable = kube::UncordonedNodes(*nodes);
  for (const std::string& name : schedulable) {
    context.out() << name << ": not cordoned (spec.unschedulable is not true)\n";
  }
  if (schedulable.empty()) {
    context.out() << "all " << nodes->size() << " control-plane nodes are cordoned\n";
    return kExitOk;
  }
  context.out() << schedulable.size() << " of " << nodes->size()
                << " control-plane nodes are not cordoned: handoffctl rancher cordon "
                   "--distribution "
                << kube::RancherDistributionName(connected.distribution) << " cordons them\n";
  return kExitProblems;
}

int Cordon(CommandContext& context, const DistributionFlags& flags) {
  Connected connected = ConnectFor(context, flags);
  if (connected.client == nullptr) return connected.failure;
  absl::StatusOr<kube::CordonReport> report =
      kube::CordonControlPlane(*connected.client, connected.distribution);
  if (!report.ok()) return context.Fail(report.status());
  if (report->nodes() == 0) {
    context.out() << NoControlPlaneNodes(connected.distribution);
    return kExitProblems;
  }
  for (const std::string& name : report->cordoned) context.out() << name << ": cordoned\n";
  for (const std::string& name : report->already_by_handoff) {
    context.out() << name << ": already cordoned by handoff\n";
  }
  for (const std::string& name : report->already_by_others) {
    context.out() << name
                  << ": already cordoned, not by handoff: rancher uncordon will leave it "
                     "cordoned\n";
  }
  context.out() << report->cordoned.size() << " cordoned now, "
                << report->already_by_handoff.size() + report->already_by_others.size()
                << " already cordoned (" << kube::kCordonedByAnnotation
                << " records the ones handoff cordoned)\n";
  return kExitOk;
}

int Uncordon(CommandContext& context, const DistributionFlags& flags) {
  Connected connected = ConnectFor(context, flags);
  if (connected.client == nullptr) return connected.failure;
  absl::StatusOr<kube::UncordonReport> report =
      kube::UncordonControlPlane(*connected.client, connected.distribution);
  if (!report.ok()) return context.Fail(report.status());
  if (report->nodes() == 0) {
    context.out() << NoControlPlaneNodes(connected.distribution);
    return kExitProblems;
  }
  for (const std::string& name : report->uncordoned) context.out() << name << ": uncordoned\n";
  for (const std::string& name : report->record_removed) {
    context.out() << name << ": already uncordoned by someone else; handoff's record removed\n";
  }
  for (const std::string& name : report->left_cordoned) {
    context.out() << name
                  << ": left cordoned: handoff did not cordon it (kubectl uncordon " << name
                  << " if it should run pods again)\n";
  }
  context.out() << report->uncordoned.size() << " uncordoned, " << report->left_cordoned.size()
                << " left cordoned, " << report->not_cordoned.size() + report->record_removed.size()
                << " already schedulable\n";
  return kExitOk;
}

int CheckCcm(CommandContext& context, const CcmFlags& flags) {
  absl::Duration wait = absl::ZeroDuration();
  if (!flags.wait.empty() &&
      (!absl::ParseDuration(flags.wait, &wait) || wait < absl::ZeroDuration())) {
    return context.Fail(absl::InvalidArgumentError(
        StrCat("--wait: \"", flags.wait, "\" is not a duration such as 30s or 5m")));
  }
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = context.Connect(flags.connection);
  if (!client.ok()) return context.Fail(client.status());
  const std::string what =
      StrCat("DaemonSet ", kube::kAwsCcmNamespace, "/", kube::kAwsCcmDaemonSet);
  Clock& clock = context.clock();
  const absl::Time deadline = clock.Now() + wait;
  std::string last;
  // Prints each distinct message once, as kubectl rollout status does.
  auto say = [&context, &last](const std::string& message) {
    if (message == last) return;
    context.out() << message << "\n";
    last = message;
  };
  while (true) {
    absl::StatusOr<kube::Json> daemon_set =
        kube::GetDaemonSet(**client, kube::kAwsCcmNamespace, kube::kAwsCcmDaemonSet);
    if (daemon_set.ok()) {
      absl::StatusOr<kube::DaemonSetRollout> rollout = kube::DaemonSetRolloutStatus(*daemon_set);
      if (!rollout.ok()) return context.Fail(rollout.status());
      say(rollout->message);
      if (rollout->done) return kExitOk;
    } else if (absl::IsNotFound(daemon_set.status())) {
      say(StrCat(what,
                 " not found: the aws-cloud-controller-manager chart is not installed (yet)"));
    } else {
      return context.Fail(daemon_set.status());
    }
    const absl::Time now = clock.Now();
    if (now >= deadline) {
      if (wait > absl::ZeroDuration()) {
        context.out() << what << " not rolled out after " << absl::FormatDuration(wait) << "\n";
      }
      return kExitProblems;
    }
    if (context.environment().interrupted && context.environment().interrupted()) {
      context.out() << "interrupted before " << what << " rolled out\n";
      return kExitProblems;
    }
    clock.SleepFor(std::min(kCcmPollInterval, deadline - now));
  }
}

int CheckNodes(CommandContext& context, const ConnectionOptions& connection) {
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = context.Connect(connection);
  if (!client.ok()) return context.Fail(client.status());
  // The same test as handoffctl verify nodes.
  absl::StatusOr<std::vector<kube::Json>> nodes = kube::ListNodes(**client, false);
  if (!nodes.ok()) return context.Fail(nodes.status());
  const std::vector<kube::NodeCheck> checks = kube::CheckNodes(*nodes);
  size_t bad = 0;
  for (const kube::NodeCheck& check : checks) {
    for (const std::string& problem : check.problems) {
      context.out() << check.name << ": " << problem << "\n";
    }
    bad += check.ok() ? 0 : 1;
  }
  if (checks.empty()) {
    context.out() << "no nodes found\n";
    return kExitProblems;
  }
  if (bad == 0) {
    context.out() << "all " << checks.size()
                  << " nodes have an AWS providerID and no uninitialized taint\n";
    return kExitOk;
  }
  context.out() << bad << " of " << checks.size() << " nodes have problems\n";
  return kExitProblems;
}

}  // namespace

void AddRancherCheckCommands(CLI::App& app, CommandContext& context) {
  // `rancher rke2|rke` (the cluster-file edits) lives in a file of its own and may have created
  // the group already; this CLI11 has no get_subcommand_no_throw, and get_subcommand throws.
  CLI::App* rancher = nullptr;
  for (CLI::App* existing :
       app.get_subcommands([](CLI::App* sub) { return sub->get_name() == "rancher"; })) {
    rancher = existing;
  }
  if (rancher == nullptr) {
    rancher = app.add_subcommand("rancher", "Move a Rancher RKE2 or RKE cluster to the external "
                                            "AWS cloud provider, as Rancher's guide does");
  }
  rancher->require_subcommand(1);

  CLI::App* check = rancher->add_subcommand(
      "check", "The checks the Rancher guide asks for between its steps. Exit code 1 when one "
               "fails");
  check->require_subcommand(1);

  auto cordon_check = std::make_shared<DistributionFlags>();
  CLI::App* check_cordon = check->add_subcommand(
      "cordon", "Check that every control-plane node is cordoned (spec.unschedulable); name those "
                "that are not");
  AddConnectionOptions(*check_cordon, cordon_check->connection);
  AddDistributionOption(*check_cordon, cordon_check->distribution);
  check_cordon->callback(
      [&context, cordon_check] { context.exit_code = CheckCordon(context, *cordon_check); });

  auto ccm = std::make_shared<CcmFlags>();
  CLI::App* check_ccm = check->add_subcommand(
      "ccm", "Check that the kube-system/aws-cloud-controller-manager DaemonSet rolled out, as "
             "kubectl rollout status decides (observed generation, updated and available pods)");
  AddConnectionOptions(*check_ccm, ccm->connection);
  check_ccm->add_option("--wait", ccm->wait,
                        "Poll until it has rolled out or this long has passed, e.g. 5m (default: "
                        "look once)");
  check_ccm->callback([&context, ccm] { context.exit_code = CheckCcm(context, *ccm); });

  auto nodes = std::make_shared<ConnectionOptions>();
  CLI::App* check_nodes = check->add_subcommand(
      "nodes", "Check that every Node has an AWS providerID and no "
               "node.cloudprovider.kubernetes.io/uninitialized taint (as handoffctl verify nodes)");
  AddConnectionOptions(*check_nodes, *nodes);
  check_nodes->callback([&context, nodes] { context.exit_code = CheckNodes(context, *nodes); });

  auto cordon_flags = std::make_shared<DistributionFlags>();
  CLI::App* cordon = rancher->add_subcommand(
      "cordon", "Cordon every control-plane node not yet cordoned, recording on the Node (" +
                    std::string(kube::kCordonedByAnnotation) + ") that handoff did");
  AddConnectionOptions(*cordon, cordon_flags->connection);
  AddDistributionOption(*cordon, cordon_flags->distribution);
  cordon->callback(
      [&context, cordon_flags] { context.exit_code = Cordon(context, *cordon_flags); });

  auto uncordon_flags = std::make_shared<DistributionFlags>();
  CLI::App* uncordon = rancher->add_subcommand(
      "uncordon", "Uncordon the control-plane nodes handoff cordoned; nodes cordoned by anyone "
                  "else stay cordoned and are named");
  AddConnectionOptions(*uncordon, uncordon_flags->connection);
  AddDistributionOption(*uncordon, uncordon_flags->distribution);
  uncordon->callback(
      [&context, uncordon_flags] { context.exit_code = Uncordon(context, *uncordon_flags); });
}

}  // namespace handoff::ctl
