// handoffctl sandbox: the rehearsal on one machine (rehearsal/sandbox/sandbox.h).
#include <algorithm>
#include <memory>
#include <string>

#include "ctl/command_context.h"
#include "rehearsal/sandbox/sandbox.h"

namespace handoff::ctl {
namespace {

struct SandboxFlags {
  sandbox::SandboxOptions options;
  std::string fault;
  std::string cluster = "model";
  std::string timeout = "5m";
  std::string lease_release = "on";
  std::string strategy = "leader-migration";
  std::string goal = "migrated";
  bool cleanup = false;
};

int Run(CommandContext& context, SandboxFlags& flags) {
  if (flags.cleanup) return sandbox::CleanUpSandboxes(context.out(), context.err());
  if (!sandbox::ParseFaults(flags.fault, &flags.options.faults)) {
    context.err() << "handoffctl sandbox: --fault \"" << flags.fault
                  << "\" is not a list of distinct faults of agent-kill, coordinator-kill, "
                     "unhealthy, stray-backup, kubelet-kill, kubelet-unsynced, preflight, "
                     "worker-agent-kill, worker-kubelet-kill, credential-provider\n";
    return kExitRefused;
  }
  if (std::find(flags.options.faults.begin(), flags.options.faults.end(),
                sandbox::Fault::kPreflight) != flags.options.faults.end() &&
      flags.cluster == "model") {
    context.err() << "handoffctl sandbox: --fault preflight plants its faults on the real "
                     "components (the API server's authorizer, the fake AWS): it needs --cluster "
                     "real or kubeadm\n";
    return kExitRefused;
  }
  flags.options.goal =
      flags.goal == "prepared" ? sandbox::SandboxGoal::kPrepared : sandbox::SandboxGoal::kMigrated;
  if (flags.goal == "prepared" && flags.strategy == "downtime") {
    context.err() << "handoffctl sandbox: --goal prepared is a Leader Migration state; the "
                     "downtime strategy goes to finalized\n";
    return kExitRefused;
  }
  if (!sandbox::ParseClusterKind(flags.cluster, &flags.options.cluster)) {
    context.err() << "handoffctl sandbox: --cluster \"" << flags.cluster
                  << "\" is not one of model, real, kubeadm\n";
    return kExitRefused;
  }
  absl::Duration timeout;
  if (!absl::ParseDuration(flags.timeout, &timeout) || timeout <= absl::ZeroDuration()) {
    context.err() << "handoffctl sandbox: --timeout \"" << flags.timeout
                  << "\" is not a positive duration such as 5m\n";
    return kExitRefused;
  }
  flags.options.timeout = timeout;
  if (flags.lease_release != "on" && flags.lease_release != "off") {
    context.err() << "handoffctl sandbox: --lease-release \"" << flags.lease_release
                  << "\" is not one of on, off\n";
    return kExitRefused;
  }
  flags.options.lease_release = flags.lease_release == "on";
  flags.options.downtime = flags.strategy == "downtime";
  flags.options.replace = flags.strategy == "replace";
  if (flags.options.replace &&
      (flags.options.cluster != sandbox::ClusterKind::kKubeadm || !flags.options.faults.empty() ||
       flags.goal != "migrated" || flags.options.unsafe_order || flags.options.kubeadm_upgrade)) {
    context.err() << "handoffctl sandbox: --strategy replace joins and resets machines with the "
                     "real kubeadm: it needs --cluster kubeadm, and no --fault, --goal prepared, "
                     "--kubeadm-upgrade or --unsafe-order-for-tests\n";
    return kExitRefused;
  }
  if (flags.options.kubeadm_upgrade &&
      (flags.options.cluster != sandbox::ClusterKind::kKubeadm || !flags.options.faults.empty() ||
       flags.options.downtime || flags.goal != "migrated" || flags.options.unsafe_order)) {
    context.err() << "handoffctl sandbox: --kubeadm-upgrade runs the real kubeadm after the move "
                     "to migrated: it needs --cluster kubeadm, and no --fault, --goal prepared or "
                     "--strategy downtime\n";
    return kExitRefused;
  }
  // The first line says what is rehearsed, so that a kept log (or the benchmark reading it)
  // tells runs with and without the release apart.
  context.out() << "handoffctl sandbox: --cluster " << flags.cluster << ", " << flags.options.nodes
                << " nodes, lease release "
                << (flags.options.lease_release ? "on (the coordinator releases a stopped "
                                                  "holder's leases on proof of its exit)"
                                                : "off (a stopped holder's leases expire)")
                << (flags.options.downtime ? ", downtime strategy" : "")
                << (flags.options.replace ? ", replace strategy" : "")
                << (flags.options.kubeadm_upgrade ? ", then kubeadm upgrade and join" : "") << "\n";
  const CtlEnvironment& environment = context.environment();
  return sandbox::RunSandbox(flags.options, context.out(), context.err(), [&environment] {
    return environment.interrupted && environment.interrupted();
  });
}

}  // namespace

void AddSandboxCommands(CLI::App& app, CommandContext& context) {
  auto flags = std::make_shared<SandboxFlags>();
  CLI::App* command = app.add_subcommand(
      "sandbox",
      "Rehearse the whole migration on this machine, with no cluster and no root-owned paths: "
      "N simulated kubeadm 1.26 control-plane nodes (temp roots with the real file layout), an "
      "API server, a simulated kubelet per node whose static pods are the controller-managers, "
      "one handoff-agent per node and a handoff-coordinator; then the rollout to 1.27 with a "
      "live progress view, a check of the nodes' providerIDs, and the rollback to 1.26. With "
      "--cluster model (the default) the API server is a fake one in handoffctl and the "
      "managers are stand-ins taking real leases; with --cluster real they are etcd, "
      "kube-apiserver 1.26, kube-controller-manager 1.26 and aws-cloud-controller-manager 1.27 "
      "against a fake AWS. An independent monitor checks, from what the managers themselves "
      "record, that no cloud controller ever runs in two processes at once and measures every "
      "handover gap against the lease duration; the summary names every component and its "
      "version. Exit codes: 0 everything "
      "completed and the invariant held; 1 the invariant broke or a step did not complete; 2 "
      "the sandbox could not be set up");
  command->add_option("--nodes", flags->options.nodes,
                      "Control-plane nodes (default 3, at most 9)");
  command->add_option("--workers", flags->options.workers,
                      "Worker nodes (default 2 on --cluster model and kubeadm, at most 20; none on "
                      "real, nor on kubeadm with --strategy replace or --kubeadm-upgrade): each a "
                      "kubelet with "
                      "--cloud-provider=aws and a workload from ECR, whose agent moves it to "
                      "external once the control plane runs a cloud-controller-manager (same Node, "
                      "workload kept, the credential provider answering) and back first on the "
                      "rollback. On kubeadm each is joined by `kubeadm join` with its own "
                      "containerd and real kubelet, runs the real ecr-credential-provider, and a "
                      "moved one runs the real kubelet 1.27 before the rollback");
  command->add_option("--dir", flags->options.dir,
                      "Directory to build the sandbox in (new or empty; default a new one under "
                      "$TMPDIR or /tmp)");
  command->add_flag("--keep", flags->options.keep,
                    "Keep the directory afterwards: logs/, records/ (what each manager ran), "
                    "nodes/ (each node's files and backups), coordinator/ (its database)");
  command->add_option(
      "--fault", flags->fault,
      "Inject a fault, or several (comma-separated: each in a rollout and rollback of its own, "
      "one after another on the same cluster); the invariant must still hold: agent-kill (kill -9 "
      "an agent mid-move, "
      "restart it), coordinator-kill (kill -9 the coordinator mid-rollout, restart it), "
      "unhealthy (a cloud-controller-manager never gets healthy: the agent rolls its node back, "
      "the rollout halts, the sandbox rolls everything back), stray-backup (a stray "
      "kube-controller-manager.yaml.bak: the node is refused until the file is removed), "
      "kubelet-kill (--cluster kubeadm: the moving node's real kubelet is killed mid-move and "
      "started again by its service manager 10 s later, as kubeadm's unit restarts it), "
      "kubelet-unsynced (--cluster kubeadm: before the rollout the moving node's kubelet is "
      "restarted with no route to the API server, so it never reads all its pod sources and drops "
      "every manifest change; the agent must stop the old process and restart the kubelet), "
      "preflight (--cluster real or kubeadm: handoffctl preflight passes on the healthy "
      "cluster, then each failure the field has seen is planted in turn — a Node's host "
      "renamed, its instance's cluster tag removed in the fake AWS, a pod from ECR, an in-tree "
      "EBS volume, leader election off in the settings, a .bak in a manifest directory, the "
      "cloud-controller-manager's RoleBinding deleted — and must fail exactly its check, naming "
      "the object, and pass again once removed; then the rollout). On a worker, together in one "
      "rollout, each on a worker of its own (they need as many workers and a goal that takes "
      "them external): worker-agent-kill (kill -9 a worker's "
      "agent mid-move, restart it: it puts the node back and the move is sent again), "
      "worker-kubelet-kill (--cluster kubeadm: a worker's real kubelet killed mid-move), "
      "credential-provider (a worker's ecr-credential-provider answers the agent's check "
      "before the move and fails after the kubelet's restart: the agent rolls the node back "
      "by itself, the failure budget pauses the rollout, the sandbox puts the provider back "
      "and resumes); each worker ends wholly moved or wholly as it was");
  command->add_option("--cluster", flags->cluster,
                      "The cluster under the rehearsal: model (default: the fake API server and "
                      "stand-in controller-managers, nothing to install), real (the upstream "
                      "managers and API server built by tests/real/components.sh on simulated "
                      "nodes: README \"Real components\"), or kubeadm (a kubeadm-built HA "
                      "control plane: every node a set of namespaces with its own containerd and "
                      "real kubelet, a load balancer in front, the real 1.26 and 1.27 components; "
                      "root, and Debian's containerd, runc and haproxy: README \"The whole node "
                      "real\")");
  command->add_option(
      "--lease-release", flags->lease_release,
      "on (default) or off, passed to handoff-coordinator --lease-release: on, when a move stops "
      "the manager holding a lease, the coordinator releases the lease once the node's agent "
      "proves the old process exited, so a waiting successor takes it at its next retry; off, "
      "the lease expires on its own (a gap of up to a lease duration more). The first line "
      "says which; compare the handovers of the summary (bench/handover runs both)");
  command
      ->add_option("--strategy", flags->strategy,
                   "leader-migration (default), downtime or replace. downtime: rehearse "
                   "`handoffctl start --strategy downtime` (every kube-controller-manager "
                   "stopped, every node switched to external after its instance's cluster tag "
                   "is checked, then the cloud-controller-manager started everywhere) and its "
                   "rollback; the summary reports the outage the coordinator measured. "
                   "replace (--cluster kubeadm): `start --strategy replace` and `rollback "
                   "--strategy replace`, the sandbox doing what `status` asks for with the "
                   "real kubeadm: each node replaced by a machine joined at 1.27 (kubeadm "
                   "join --control-plane), the old one reset and its Node deleted; then back "
                   "by machines joined at 1.26 with Leader Migration")
      ->check(CLI::IsMember({"leader-migration", "downtime", "replace"}));
  command
      ->add_option("--goal", flags->goal,
                   "How far each rollout goes before the rollback: migrated (default: every "
                   "node on the cloud-controller-manager) or prepared (every "
                   "kube-controller-manager with Leader Migration: one move per node each "
                   "way, the shortest path a fault can hit; --fault unhealthy still goes to "
                   "migrated)")
      ->check(CLI::IsMember({"migrated", "prepared"}));
  command->add_flag(
      "--kubeadm-upgrade", flags->options.kubeadm_upgrade,
      "--cluster kubeadm: after the rollout to migrated, instead of the rollback, what an "
      "operator does with kubeadm once the move is over: `handoffctl finalize`, `handoffctl "
      "kubeadm-config apply`, the real `kubeadm upgrade apply v1.27.16` on the first node and "
      "`kubeadm upgrade node` on the others (every node must stay external with its "
      "cloud-controller-manager running), then one more machine joined with `kubeadm join "
      "--control-plane` at v1.27.16, `handoffctl nodes add`ed and brought to finalized by the "
      "coordinator; no handover gap may be long meanwhile");
  command->add_option(
      "--network", flags->options.network,
      "--cluster kubeadm: the /24 the run's nodes, load balancer and bridge take, as A.B.C.0/24 "
      "(default 172.31.250.0/24, in AWS's default VPC range): the host's side is .1, the API "
      "endpoint .2, each zone's nodes .10+, .74+, .138+, named by their addresses "
      "(ip-A-B-C-10.ec2.internal). Runs on networks of their own can go at once on one machine");
  command->add_option("--bin-dir", flags->options.bin_dir,
                      "Where handoff-coordinator, handoff-agent, handoff-standin and "
                      "handoff-sandbox-kubelet are (default: beside handoffctl, the helpers there or, as the "
                      "package installs them, in ../lib/handoff)");
  command->add_option("--timeout", flags->timeout, "Give up after this long (default 5m)");
  command->add_flag("--cleanup", flags->cleanup,
                    "Only undo what earlier --cluster kubeadm runs that died (SIGKILL, a crash) "
                    "left on this host (their nodes' processes, network interfaces, cgroups, the "
                    "kubelet's sysctls, their directories unless kept), as the next kubeadm run "
                    "does before it starts, and exit (root)");
  // Test-only: the unsafe order the coordinator forbids, to prove the monitor can fail.
  command->add_flag("--unsafe-order-for-tests", flags->options.unsafe_order)->group("");
  command->callback([&context, flags] { context.exit_code = Run(context, *flags); });
}

}  // namespace handoff::ctl
