// `handoffctl preflight` in the sandbox, as an operator runs it before the change window: once on
// the healthy cluster before a fault-free rollout, and with --fault preflight against each failure
// the field has seen, planted on the cluster in turn and removed again.
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/base/strings.h"
#include "coordinator/kube/rbac.h"
#include "common/kube/resource.h"
#include "nlohmann/json.hpp"
#include "rehearsal/sandbox/sandbox_run.h"
#include "yaml-cpp/yaml.h"

namespace handoff::sandbox {
namespace {

// What one planted fault must make `handoffctl preflight` say.
struct PlantedFault {
  std::string what;   // for the operator: "a Node's host renamed"
  std::string check;  // the one check that must fail
  // Pieces of one line of that check's evidence: the object named.
  std::vector<std::string> named;
  std::function<absl::Status()> plant;
  std::function<absl::Status()> remove;
  std::string settings;  // the settings file preflight reads ("" = the rollout's)
};

// The check of `table` ("handoffctl preflight -o json") called `name`, or null.
const nlohmann::json* CheckOf(const nlohmann::json& table, const std::string& name) {
  if (!table.contains("checks") || !table["checks"].is_array()) return nullptr;
  for (const nlohmann::json& check : table["checks"]) {
    if (check.value("name", "") == name) return &check;
  }
  return nullptr;
}

std::vector<std::string> Failed(const nlohmann::json& table) {
  std::vector<std::string> failed;
  if (!table.contains("checks") || !table["checks"].is_array()) return failed;
  for (const nlohmann::json& check : table["checks"]) {
    if (check.value("verdict", "") == "fail") failed.push_back(check.value("name", ""));
  }
  return failed;
}

// Whether `table` fails exactly `check`, one line of its evidence holding every piece of `named`.
bool FailsExactly(const nlohmann::json& table, const std::string& check,
                  const std::vector<std::string>& named) {
  if (Failed(table) != std::vector<std::string>{check}) return false;
  const nlohmann::json* found = CheckOf(table, check);
  if (found == nullptr || !found->contains("evidence")) return false;
  for (const nlohmann::json& line : (*found)["evidence"]) {
    if (!line.is_string()) continue;
    const std::string text = line.get<std::string>();
    if (std::all_of(named.begin(), named.end(),
                    [&text](const std::string& piece) { return StrContains(text, piece); })) {
      return true;
    }
  }
  return false;
}

// `text` commented out line by line: what an operator keeps "just in case", and what the kubelet
// reads as no pod at all (a copy that is still a manifest replaces the running pod: below).
std::string CommentedOut(const std::string& text) {
  std::string out = "# kept before the patch, in case it has to go back\n";
  for (std::string_view line : StrSplit(text, "\n", /*skip_empty=*/false)) {
    StrAppend(&out, "# ", line, "\n");
  }
  return out;
}

kube::Json EcrPod(const std::string& node) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "preflight-ecr-app"}, {"namespace", "default"}}},
          {"spec",
           {{"nodeName", node},
            {"containers",
             {{{"name", "app"},
               {"image", "123456789012.dkr.ecr.us-east-1.amazonaws.com/app:1.4.2"}}}}}}};
}

// The API server's ServiceAccount admission refuses a pod in a namespace whose `default`
// ServiceAccount the kube-controller-manager's serviceaccount controller has not made yet ("error
// looking up service account default/default"), as it refuses an operator's `kubectl run` on a
// cluster just up: seconds after the manager took its lease on a busy machine.
absl::Status AwaitDefaultServiceAccount(kube::KubeClient& admin, absl::Duration timeout) {
  const kube::ObjectRef account{&kube::kServiceAccounts, "default", "default"};
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    absl::StatusOr<kube::Json> found = admin.Get(account);
    if (found.ok()) return absl::OkStatus();
    if (!absl::IsNotFound(found.status()) || absl::Now() >= deadline) {
      return absl::Status(found.status().code(),
                          StrCat("ServiceAccount default/default, which a pod in namespace "
                                 "default needs, not there within ",
                                 absl::FormatDuration(timeout), ": ", found.status().message()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

kube::Json InTreeEbsVolume() {
  return {
      {"apiVersion", "v1"},
      {"kind", "PersistentVolume"},
      {"metadata", {{"name", "preflight-in-tree-ebs"}}},
      {"spec",
       {{"capacity", {{"storage", "1Gi"}}},
        {"accessModes", {"ReadWriteOnce"}},
        {"persistentVolumeReclaimPolicy", "Retain"},
        {"awsElasticBlockStore", {{"volumeID", "vol-0a1b2c3d4e5f60718"}, {"fsType", "ext4"}}}}}};
}

}  // namespace

std::vector<std::string> SandboxRun::PreflightArgv(const std::string& settings, bool json) const {
  std::vector<std::string> argv = {
      Handoffctl(),    "preflight",
      "--kubeconfig",  Path("admin.conf"),
      "--settings",    settings.empty() ? Path("settings.yaml") : settings,
      "--coordinator", StrCat(cluster_->CoordinatorHost(), ":", coordinator_port_),
      "--server-name", kCoordinatorServerName,
      "--ca",          Path("pki/handoff/ca.crt"),
      "--cert",        Path("pki/operator.crt"),
      "--key",         Path("pki/operator.key")};
  if (options_.downtime) argv.insert(argv.end(), {"--strategy", "downtime"});
  if (json) argv.insert(argv.end(), {"-o", "json"});
  return argv;
}

absl::Status SandboxRun::RunPreflight() {
  const std::string log = Path("logs/handoffctl-preflight.txt");
  absl::StatusOr<std::unique_ptr<Process>> run = SpawnOwned(PreflightArgv("", false), log);
  if (!run.ok()) return run.status();
  int status = 0;
  const bool ended = (*run)->WaitFor(absl::Minutes(2), &status);
  absl::StatusOr<std::string> table = fs_->ReadFile(log);
  const std::string text = table.ok() ? *table : std::string();
  if (!ended || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::FailedPreconditionError(StrCat("handoffctl preflight did not pass (",
                                                DescribeWaitStatus(status), "; see ", log, "):\n",
                                                text));
  }
  std::string summary = "passed";
  for (std::string_view line : StrSplit(text, "\n", /*skip_empty=*/true)) summary = line;
  Say(StrCat("handoffctl preflight: ", summary, " (see ", log, ")"));
  return absl::OkStatus();
}

absl::StatusOr<nlohmann::json> SandboxRun::PreflightTable(const std::string& settings) {
  const std::string log = Path("logs/handoffctl-preflight.json");
  (void)fs_->RemoveFile(log);
  absl::StatusOr<std::unique_ptr<Process>> run = SpawnOwned(PreflightArgv(settings, true), log);
  if (!run.ok()) return run.status();
  int status = 0;
  if (!(*run)->WaitFor(absl::Minutes(2), &status) || !WIFEXITED(status) ||
      WEXITSTATUS(status) > 1) {
    return absl::InternalError(StrCat("handoffctl preflight did not run to its end (",
                                      DescribeWaitStatus(status), "; see ", log, ")"));
  }
  absl::StatusOr<std::string> text = fs_->ReadFile(log);
  if (!text.ok()) return text.status();
  nlohmann::json table = nlohmann::json::parse(*text, nullptr, false);
  if (!table.is_object()) {
    return absl::InternalError(
        StrCat("handoffctl preflight -o json wrote no JSON (see ", log, ")"));
  }
  return table;
}

absl::Status SandboxRun::AwaitPreflight(const std::string& what, const std::string& settings,
                                        const std::function<bool(const nlohmann::json&)>& done,
                                        absl::Duration timeout) {
  // What the checks read changes on its own time: the agents report a changed node within their
  // sample interval and re-read the cluster tag every --cloud-refresh; the API server's
  // authorizer sees a changed RoleBinding once its informer has. Each run is a whole preflight.
  const absl::Time deadline = absl::Now() + timeout;
  nlohmann::json last;
  while (true) {
    absl::StatusOr<nlohmann::json> table = PreflightTable(settings);
    if (!table.ok()) return table.status();
    if (done(*table)) return absl::OkStatus();
    last = *std::move(table);
    if (absl::Now() >= deadline || (interrupted_ && interrupted_())) break;
  }
  return absl::DeadlineExceededError(StrCat("handoffctl preflight did not show ", what, " within ",
                                            absl::FormatDuration(timeout),
                                            "; it said: ", last.dump()));
}

absl::Status SandboxRun::RehearsePreflight(NodeRun& target) {
  const std::string name = target.spec().name;
  const AgentHost host = cluster_->AgentHostOf(target.node);
  std::unique_ptr<FileSystem> node_fs = NewPosixFileSystem(host.files);
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = AdminClient();
  if (!client.ok()) return client.status();
  kube::KubeClient& admin = **client;

  absl::StatusOr<std::string> hostname = node_fs->ReadFile("/etc/hostname");
  if (!hostname.ok()) return hostname.status();
  const std::string kcm_manifest = "/etc/kubernetes/manifests/kube-controller-manager.yaml";
  const std::string stray = kcm_manifest + ".bak";
  absl::StatusOr<std::string> kcm = node_fs->ReadFile(kcm_manifest);
  if (!kcm.ok()) return kcm.status();

  // The rollout's settings with the cloud-controller-manager's leader election off, as an
  // operator copying a single-replica example would write them.
  const std::string leader_elect_off = Path("settings-leader-elect-off.yaml");
  {
    absl::StatusOr<std::string> settings = fs_->ReadFile(Path("settings.yaml"));
    if (!settings.ok()) return settings.status();
    YAML::Node parsed = YAML::Load(*settings);
    parsed["cloudControllerManager"]["extraArgs"]["leader-elect"] = "false";
    YAML::Emitter emitted;
    emitted << parsed;
    absl::Status written = WriteFile(leader_elect_off, StrCat(emitted.c_str(), "\n"));
    if (!written.ok()) return written;
  }
  const kube::ObjectRef pod{&kube::kPods, "default", "preflight-ecr-app"};
  const kube::ObjectRef volume{&kube::kPersistentVolumes, "", "preflight-in-tree-ebs"};
  const kube::RbacOptions rbac;
  const kube::ObjectRef binding{&kube::kRoleBindings, "kube-system", rbac.ccm_role};
  auto created = [](const absl::StatusOr<kube::Json>& object) { return object.status(); };

  const std::vector<PlantedFault> faults = {
      {"a Node's host renamed (its kubelet would register under the new name once external)",
       "node-names",
       {StrCat("Node ", name, ": its kubelet goes by renamed-", name)},
       [&] { return WriteNodeFile(host, "/etc/hostname", StrCat("renamed-", name, "\n")); },
       [&] { return WriteNodeFile(host, "/etc/hostname", *hostname); },
       ""},
      {"the cluster tag removed from an instance in the fake AWS",
       "cluster-tag",
       {StrCat(name, ": instance i-"), "has no tag kubernetes.io/cluster/"},
       [&] { return cluster_->SetInstanceTagged(target.node, false); },
       [&] { return cluster_->SetInstanceTagged(target.node, true); },
       ""},
      {"a pod pulling from ECR on a kubelet without the credential provider",
       "ecr-credentials",
       {"Pod default/preflight-ecr-app", StrCat("on ", name)},
       [&] {
         absl::Status account = AwaitDefaultServiceAccount(admin, absl::Minutes(2));
         if (!account.ok()) return account;
         return created(admin.Create(kube::kPods, "default", EcrPod(name)));
       },
       [&] { return admin.Delete(pod, /*now=*/true); },
       ""},
      {"an in-tree EBS PersistentVolume without the EBS CSI driver",
       "ebs-csi",
       {"PersistentVolume preflight-in-tree-ebs"},
       [&] { return created(admin.Create(kube::kPersistentVolumes, "", InTreeEbsVolume())); },
       [&] { return admin.Delete(volume); },
       ""},
      {"leader election off for the cloud-controller-manager in the settings",
       "leader-elect",
       {"leader-elect: \"false\""},
       [] { return absl::OkStatus(); },
       [] { return absl::OkStatus(); },
       leader_elect_off},
      {"a kube-controller-manager.yaml.bak in a manifest directory",
       "stray-files",
       {StrCat(name, ": ", stray, ": not a pod manifest")},
       [&] { return WriteNodeFile(host, stray, CommentedOut(*kcm)); },
       [&] { return node_fs->RemoveFile(stray); },
       ""},
      {"the cloud-controller-manager's RoleBinding for the migration lease deleted",
       "rbac",
       {" may not ", "lease kube-system/cloud-controller-manager"},
       [&] { return admin.Delete(binding); },
       [&] { return kube::ApplyRbac(admin, rbac).status(); },
       ""},
  };

  absl::Status status = AwaitPreflight(
      "no failed check on the healthy cluster", "",
      [](const nlohmann::json& table) { return Failed(table).empty(); }, absl::Minutes(1));
  if (!status.ok()) return status;
  Say("handoffctl preflight: no check fails on the healthy cluster");
  for (const PlantedFault& fault : faults) {
    status = fault.plant();
    if (!status.ok())
      return absl::InternalError(StrCat("planting ", fault.what, ": ", status.message()));
    status = AwaitPreflight(
        StrCat("exactly ", fault.check, " failing, naming \"", StrJoin(fault.named, " ... "), "\""),
        fault.settings,
        [&fault](const nlohmann::json& table) {
          return FailsExactly(table, fault.check, fault.named);
        },
        absl::Minutes(1));
    absl::Status removed = fault.remove();
    if (!status.ok()) return status;
    if (!removed.ok()) {
      return absl::InternalError(StrCat("removing ", fault.what, ": ", removed.message()));
    }
    Say(StrCat("preflight fault: ", fault.what, " -> only ", fault.check, " fails, naming ",
               StrJoin(fault.named, " ... ")));
    status = AwaitPreflight(
        StrCat("no failed check once ", fault.what, " was undone"), "",
        [](const nlohmann::json& table) { return Failed(table).empty(); }, absl::Minutes(1));
    if (!status.ok()) return status;
  }
  Say(StrCat("handoffctl preflight: each of ", faults.size(),
             " faults failed exactly its check; none fails once they are undone"));
  return absl::OkStatus();
}

}  // namespace handoff::sandbox
