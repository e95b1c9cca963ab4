// handoffctl kubeadm-config plan|apply: kubeadm's stored ClusterConfiguration made external at
// the nodes' version, so that a later `kubeadm upgrade` keeps the move and a later
// `kubeadm join --control-plane` builds the node alike, or put back to the in-tree one for a
// rollback (coordinator/kube/kubeadm_config.h); and a worker's JoinConfiguration for a machine that
// joins after the move (coordinator/kube/kubeadm_join.h) with the credential provider's
// configuration it needs.
#include <memory>

#include "agent/engine/credential_provider.h"
#include "agent/engine/node_snapshot.h"
#include "agent/engine/settings.h"
#include "agent/leadermigration/config.h"
#include "common/base/kube_version.h"
#include "common/base/strings.h"
#include "coordinator/kube/kubeadm_config.h"
#include "coordinator/kube/kubeadm_join.h"
#include "ctl/command_context.h"
#include "nlohmann/json.hpp"

namespace handoff::ctl {

namespace lm = leadermigration;
namespace {

struct KubeadmConfigFlags {
  ConnectionOptions connection;
  std::string format = "text";
  std::string settings_file;
  std::string external_cloud_volume_plugin;
  bool disable_nodeipam = false;
  std::string kubernetes_version;
  std::string to = "external";
};

void AddFlags(CLI::App& command, KubeadmConfigFlags& flags) {
  AddConnectionOptions(command, flags.connection);
  AddOutputOption(command, flags.format);
  command.add_option("--settings", flags.settings_file,
                     "handoff-agent settings file: its kubeControllerManager."
                     "externalCloudVolumePlugin and leaderMigration.nodeipam apply here too");
  command.add_option("--external-cloud-volume-plugin", flags.external_cloud_volume_plugin,
                     "Set controllerManager --external-cloud-volume-plugin (e.g. aws, when "
                     "volumes are not on CSI migration), as the agent does");
  command.add_flag("--disable-nodeipam", flags.disable_nodeipam,
                   "Add -nodeipam to controllerManager --controllers (the cloud-controller-manager "
                   "runs Node IPAM)");
  command.add_option(
      "--kubernetes-version", flags.kubernetes_version,
      "Set kubernetesVersion, the version the nodes' control planes run (e.g. v1.27.16), so "
      "that kubeadm join --control-plane and kubeadm upgrade use its images. Towards external "
      "the default is --settings' kubernetesVersion; towards in-tree, the saved one's");
  command
      .add_option("--to", flags.to,
                  "external (after the move: the default), in-tree (after a rollback to "
                  "in-tree: the ClusterConfiguration as it was before the first apply, kept "
                  "in kube-system/handoff-kubeadm-config-in-tree), or prepared (that one with "
                  "Leader Migration: what a node of version N joins with in a rollback by "
                  "replacement, `handoffctl rollback --strategy replace`; the node needs the "
                  "Leader Migration file first, see `kubeadm-config leader-migration-file`)")
      ->check(CLI::IsMember({"external", "in-tree", "prepared"}));
}

absl::StatusOr<kube::KubeadmConfigOptions> OptionsOf(CommandContext& context,
                                                     const KubeadmConfigFlags& flags) {
  kube::KubeadmConfigOptions options;
  if (!flags.settings_file.empty()) {
    absl::StatusOr<Settings> settings = context.ReadSettings(flags.settings_file);
    if (!settings.ok()) return settings.status();
    options.external_cloud_volume_plugin = settings->external_cloud_volume_plugin;
    options.disable_nodeipam = settings->migrate_nodeipam;
    if (settings->k8s_version && flags.to == "external") {
      options.kubernetes_version = settings->k8s_version->ToString();
    }
  }
  if (!flags.kubernetes_version.empty()) options.kubernetes_version = flags.kubernetes_version;
  options.target = flags.to == "in-tree"    ? kube::KubeadmConfigTarget::kInTree
                   : flags.to == "prepared" ? kube::KubeadmConfigTarget::kPrepared
                                            : kube::KubeadmConfigTarget::kExternal;
  if (!flags.external_cloud_volume_plugin.empty()) {
    options.external_cloud_volume_plugin = flags.external_cloud_volume_plugin;
  }
  if (flags.disable_nodeipam) options.disable_nodeipam = true;
  return options;
}

nlohmann::ordered_json PlanJson(const kube::KubeadmConfigPlan& plan) {
  nlohmann::ordered_json json;
  json["apiVersion"] = plan.api_version;
  json["changes"] = plan.changes;
  json["notes"] = plan.notes;
  json["before"] = plan.before;
  json["after"] = plan.after;
  return json;
}

// What an unchanged ClusterConfiguration already is, for the "no changes" line.
std::string Already(const KubeadmConfigFlags& flags) {
  if (flags.to == "in-tree") return "the in-tree one kept before the move";
  if (flags.to == "prepared") {
    return "the in-tree one kept before the move, with Leader Migration";
  }
  return "external (kube-apiserver and kube-controller-manager with cloud-provider: external)";
}

int Plan(CommandContext& context, const KubeadmConfigFlags& flags) {
  absl::StatusOr<kube::KubeadmConfigOptions> options = OptionsOf(context, flags);
  if (!options.ok()) return context.Fail(options.status());
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = context.Connect(flags.connection);
  if (!client.ok()) return context.Fail(client.status());
  absl::StatusOr<kube::KubeadmConfigPlan> plan = kube::ReadKubeadmConfigPlan(**client, *options);
  if (!plan.ok()) return context.Fail(plan.status());
  if (flags.format == "json") {
    context.out() << PlanJson(*plan).dump(2) << "\n";
    return kExitOk;
  }
  if (plan->empty()) {
    context.err() << "kubeadm-config: no changes; the ClusterConfiguration (" << plan->api_version
                  << ") is already " << Already(flags) << "\n";
    return kExitOk;
  }
  context.err() << "kubeadm-config plan: " << plan->changes.size()
                << " change(s) to kube-system/kubeadm-config data.ClusterConfiguration ("
                << plan->api_version
                << "); nothing is written (`handoffctl kubeadm-config apply` makes them):\n";
  for (const std::string& change : plan->changes) context.err() << "  " << change << "\n";
  for (const std::string& note : plan->notes) context.err() << "note: " << note << "\n";
  context.out() << plan->Diff();
  return kExitOk;
}

int Apply(CommandContext& context, const KubeadmConfigFlags& flags) {
  absl::StatusOr<kube::KubeadmConfigOptions> options = OptionsOf(context, flags);
  if (!options.ok()) return context.Fail(options.status());
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = context.Connect(flags.connection);
  if (!client.ok()) return context.Fail(client.status());
  absl::StatusOr<kube::KubeadmConfigApplyResult> result =
      kube::ApplyKubeadmConfig(**client, *options);
  if (!result.ok()) return context.Fail(result.status());
  if (flags.format == "json") {
    nlohmann::ordered_json json = PlanJson(result->plan);
    json["conflictsRetried"] = result->conflicts;
    context.out() << json.dump(2) << "\n";
    return kExitOk;
  }
  if (result->saved_in_tree_copy) {
    context.out() << "kubeadm-config: kept the in-tree ClusterConfiguration in "
                     "kube-system/handoff-kubeadm-config-in-tree (apply --to in-tree restores "
                     "it)\n";
  }
  if (result->plan.empty()) {
    context.out() << "kubeadm-config: no changes; the ClusterConfiguration is already "
                  << Already(flags) << "\n";
    return kExitOk;
  }
  context.out() << "kubeadm-config: updated kube-system/kubeadm-config ("
                << result->plan.changes.size() << " change(s)";
  if (result->conflicts > 0) {
    context.out() << ", " << result->conflicts << " conflict(s) re-read and re-applied";
  }
  context.out() << "):\n";
  for (const std::string& change : result->plan.changes) context.out() << "  " << change << "\n";
  for (const std::string& note : result->plan.notes) context.out() << "note: " << note << "\n";
  return kExitOk;
}

struct LeaderMigrationFileFlags {
  std::string settings_file;
  std::string kubernetes_version;
};

// The Leader Migration file a prepared kube-controller-manager of `kubernetes_version` reads,
// rendered as the agents render it (agent/engine/planner.cc) from the rollout's settings.
int LeaderMigrationFile(CommandContext& context, const LeaderMigrationFileFlags& flags) {
  absl::StatusOr<Settings> read = context.ReadSettings(flags.settings_file);
  if (!read.ok()) return context.Fail(read.status());
  const Settings& settings = *read;
  absl::StatusOr<KubeVersion> version = KubeVersion::Parse(flags.kubernetes_version);
  if (!version.ok()) {
    return context.Fail(absl::InvalidArgumentError(
        StrCat("--kubernetes-version ", flags.kubernetes_version,
               ": not a version (v1.26.13, the kube-controller-manager's)")));
  }
  lm::RenderOptions options;
  options.reader = lm::Component::kKubeControllerManager;
  options.reader_version = *version;
  options.wildcard = settings.wildcard;
  options.include_nodeipam = settings.migrate_nodeipam;
  options.leader_name = settings.leader_name;
  absl::StatusOr<std::string> text = lm::Render(options);
  if (!text.ok()) return context.Fail(text.status());
  context.out() << *text;
  return kExitOk;
}

struct WorkerJoinFlags {
  std::string settings_file;
  std::string to = "external";
  kube::WorkerJoinOptions join;
};

// The worker settings' paths (the defaults, or --settings' worker.*), unless given as flags.
absl::Status FillCredentialProvider(CommandContext& context, const std::string& settings_file,
                                    kube::WorkerJoinOptions& join) {
  WorkerSettings worker;
  if (!settings_file.empty()) {
    absl::StatusOr<Settings> settings = context.ReadSettings(settings_file);
    if (!settings.ok()) return settings.status();
    worker = settings->worker;
  }
  if (join.credential_provider_config.empty()) {
    join.credential_provider_config = worker.credential_provider_config;
  }
  if (join.credential_provider_bin_dir.empty()) {
    join.credential_provider_bin_dir = worker.credential_provider_bin_dir;
  }
  return absl::OkStatus();
}

// A worker's JoinConfiguration on stdout; on stderr what the machine needs before kubeadm join.
int WorkerJoin(CommandContext& context, WorkerJoinFlags flags) {
  flags.join.target =
      flags.to == "in-tree" ? kube::WorkerJoinTarget::kInTree : kube::WorkerJoinTarget::kExternal;
  if (absl::Status filled =
          FillCredentialProvider(context, flags.settings_file, flags.join);
      !filled.ok()) {
    return context.Fail(filled);
  }
  absl::StatusOr<std::string> text = kube::RenderWorkerJoinConfiguration(flags.join);
  if (!text.ok()) return context.Fail(text.status());
  context.out() << *text;
  if (flags.join.target == kube::WorkerJoinTarget::kInTree) {
    context.err() << "worker-join: the kubelet joins with --cloud-provider=aws, as the other "
                     "nodes run while the rollback to the in-tree provider goes on; a kubelet "
                     "1.27 refuses it, so join this machine at version N\n";
    return kExitOk;
  }
  context.err()
      << "worker-join: on the machine, before `kubeadm join --config FILE`:\n"
      << "  install " << kEcrCredentialProvider << " (k8s.io/cloud-provider-aws, the "
      << "cloud-controller-manager's version) as " << flags.join.credential_provider_bin_dir << "/"
      << kEcrCredentialProvider << "\n"
      << "  handoffctl kubeadm-config credential-provider-config > "
      << flags.join.credential_provider_config << "\n"
      << "  the instance profile allows ecr:GetAuthorizationToken (the credential provider asks "
         "ECR with the instance's credentials)\n";
  if (flags.join.node_name.empty()) {
    context.err() << "note: without --node-name the Node is named after the machine's host name; "
                     "the cloud-controller-manager finds the instance of a Node without a "
                     "providerID by its private DNS name (ip-10-0-0-1.ec2.internal), so give "
                     "that name unless the host name is it\n";
  }
  return kExitOk;
}

}  // namespace

void AddKubeadmConfigCommands(CLI::App& app, CommandContext& context) {
  CLI::App* group = app.add_subcommand(
      "kubeadm-config",
      "kubeadm regenerates kube-apiserver's and kube-controller-manager's manifests from "
      "kube-system/kubeadm-config on `kubeadm upgrade`, and builds a node joined with kubeadm "
      "join --control-plane from it; make it say cloud-provider: external (without cloud-config "
      "or Leader Migration) at the version the nodes run, so that an upgrade or a join after "
      "the move keeps it, or (--to in-tree) put back the in-tree one after a rollback");
  group->require_subcommand(1);
  auto plan_flags = std::make_shared<KubeadmConfigFlags>();
  CLI::App* plan = group->add_subcommand(
      "plan",
      "Show the change to the ClusterConfiguration: a summary on stderr, the unified diff on "
      "stdout. Writes nothing");
  AddFlags(*plan, *plan_flags);
  plan->callback([&context, plan_flags] { context.exit_code = Plan(context, *plan_flags); });
  auto apply_flags = std::make_shared<KubeadmConfigFlags>();
  CLI::App* apply = group->add_subcommand(
      "apply",
      "Write the change plan shows, with the ConfigMap's resourceVersion (re-read and re-planned "
      "on a conflict). Running it again changes nothing. Apply it once every control-plane node "
      "is migrated, before any `kubeadm upgrade`");
  AddFlags(*apply, *apply_flags);
  apply->callback([&context, apply_flags] { context.exit_code = Apply(context, *apply_flags); });
  auto file_flags = std::make_shared<LeaderMigrationFileFlags>();
  CLI::App* file = group->add_subcommand(
      "leader-migration-file",
      "Print the Leader Migration file (/etc/leadermigration.conf) a kube-controller-manager of "
      "--kubernetes-version reads when prepared, as the agents write it: a node that joins with "
      "`kubeadm-config apply --to prepared` needs it in place before kubeadm join. Reads no "
      "cluster");
  file->add_option("--settings", file_flags->settings_file,
                   "The rollout's settings file (leaderMigration: wildcard, nodeipam, leaderName)");
  file->add_option("--kubernetes-version", file_flags->kubernetes_version,
                   "The joining kube-controller-manager's version (version N, e.g. v1.26.13)")
      ->required();
  file->callback(
      [&context, file_flags] { context.exit_code = LeaderMigrationFile(context, *file_flags); });

  auto join_flags = std::make_shared<WorkerJoinFlags>();
  CLI::App* join = group->add_subcommand(
      "worker-join",
      "Print the kubeadm JoinConfiguration (kubeadm.k8s.io/v1beta3) a worker joins with after "
      "the move: its kubelet --cloud-provider=external from its first start, with the ECR "
      "credential provider (--image-credential-provider-config and -bin-dir), as handoff-agent "
      "moves a worker. kubeadm join refuses --config beside --token, so the discovery is in the "
      "file. What the machine needs first goes to stderr. Reads no cluster");
  join->add_option("--to", join_flags->to,
                   "external (after the move: the default) or in-tree (a machine that joins "
                   "while the rollback to the in-tree provider goes on: --cloud-provider=aws)")
      ->check(CLI::IsMember({"external", "in-tree"}));
  join->add_option("--api-server-endpoint", join_flags->join.api_server_endpoint,
                   "The control plane's HOST:PORT (discovery.bootstrapToken.apiServerEndpoint)");
  join->add_option("--token", join_flags->join.token,
                   "A bootstrap token, [a-z0-9]{6}.[a-z0-9]{16} (`kubeadm token create`)");
  join->add_option("--discovery-token-ca-cert-hash", join_flags->join.ca_cert_hashes,
                   "sha256:<hex> of the cluster CA's public key; repeatable");
  join->add_flag("--discovery-token-unsafe-skip-ca-verification",
                 join_flags->join.unsafe_skip_ca_verification,
                 "Trust the API server without a CA hash (as kubeadm's flag of that name)");
  join->add_option("--discovery-file", join_flags->join.discovery_file,
                   "A kubeconfig to discover the cluster with instead of the token "
                   "(discovery.file.kubeConfigPath): a file on the machine, or an https:// URL");
  join->add_option("--node-name", join_flags->join.node_name,
                   "nodeRegistration.name: the Node's name (kubeadm sets --hostname-override "
                   "when it is not the host name); on AWS the instance's private DNS name");
  join->add_option("--cri-socket", join_flags->join.cri_socket,
                   "nodeRegistration.criSocket (e.g. unix:///run/containerd/containerd.sock)");
  join->add_option("--settings", join_flags->settings_file,
                   "The workers' handoff-agent settings: worker.credentialProviderConfig and "
                   "worker.credentialProviderBinDir give the paths (their defaults otherwise)");
  join->add_option("--credential-provider-config", join_flags->join.credential_provider_config,
                   "The CredentialProviderConfig's path on the machine (default: "
                   "worker.credentialProviderConfig)");
  join->add_option("--credential-provider-bin-dir", join_flags->join.credential_provider_bin_dir,
                   "Where ecr-credential-provider is installed on the machine (default: "
                   "worker.credentialProviderBinDir)");
  join->callback([&context, join_flags] { context.exit_code = WorkerJoin(context, *join_flags); });

  CLI::App* provider = group->add_subcommand(
      "credential-provider-config",
      "Print the kubelet's CredentialProviderConfig (kubelet.config.k8s.io/v1) for "
      "ecr-credential-provider and every ECR registry's image pattern, as handoff-agent writes "
      "it on a worker it moves: what a machine joined with `worker-join` needs at "
      "--credential-provider-config. Reads no cluster");
  provider->callback([&context] {
    context.out() << EcrCredentialProviderConfig();
    context.exit_code = kExitOk;
  });
}

}  // namespace handoff::ctl
