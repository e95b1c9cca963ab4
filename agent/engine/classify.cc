#include "agent/engine/classify.h"

#include <map>

#include "agent/leadermigration/config.h"
#include "agent/manifest/feature_gates.h"
#include "agent/manifest/kubelet_flags.h"
#include "common/base/strings.h"

namespace handoff {
namespace {

namespace lm = leadermigration;

bool IsTrue(const std::optional<std::string>& value) {
  return value && (*value == "true" || *value == "True" || *value == "TRUE" || *value == "1" ||
                   *value == "t" || *value == "T");
}

// A view of `component` in `file` (whose pod defines it), with its version when the image names
// one.
std::optional<ComponentView> ViewOf(const ManifestFile& file, std::string_view component,
                                    std::vector<std::string>& problems) {
  absl::StatusOr<size_t> container = file.pod->FindContainer(component);
  if (!container.ok()) {
    problems.push_back(std::string(container.status().message()));
    return std::nullopt;
  }
  ComponentView view{std::string(component), file.path, *file.pod, *container, std::nullopt};
  absl::StatusOr<KubeVersion> version = KubeVersion::FromImage(view.pod.Image(view.container));
  if (version.ok()) view.version = *version;
  return view;
}

// The manifest of `component`: the file named "<component>.yaml" when it defines that pod,
// otherwise the only file that does.
std::optional<ComponentView> FindComponent(const NodeSnapshot& snapshot, std::string_view component,
                                           std::vector<std::string>& problems) {
  const ManifestFile* chosen = nullptr;
  const std::string canonical = StrCat(snapshot.paths.manifest_dir, "/", component, ".yaml");
  for (const ManifestFile& file : snapshot.manifests) {
    if (!file.pod || file.pod->PodName() != component) continue;
    if (chosen == nullptr || file.path == canonical) chosen = &file;
  }
  if (chosen == nullptr) return std::nullopt;
  return ViewOf(*chosen, component, problems);
}

class Classifier {
 public:
  explicit Classifier(const NodeSnapshot& snapshot) : snapshot_(snapshot) {}

  Classification Run() {
    if (snapshot_.role == NodeRole::kWorker) return RunWorker();
    CheckManifestDirectory();
    result_.view.apiserver = FindComponent(snapshot_, kKubeApiserver, result_.problems);
    result_.view.controller_manager =
        FindComponent(snapshot_, kKubeControllerManager, result_.problems);
    result_.view.cloud_controller_manager =
        FindComponent(snapshot_, kCloudControllerManager, result_.problems);
    result_.view.scheduler = FindComponent(snapshot_, kKubeScheduler, result_.problems);
    const std::optional<ComponentView>& kcm = result_.view.controller_manager;
    const std::optional<ComponentView>& ccm = result_.view.cloud_controller_manager;
    const bool parked = snapshot_.parked_controller_manager.has_value();
    if (parked) ReadParked();
    if (!kcm && parked && !ManifestRefused(kKubeControllerManager)) return ClassifyStopped();
    if (parked) {
      // The downtime path parks the manifest only while none is in the manifest directory: with
      // both, one of them is stale, and handoff will not guess which.
      Problem(StrCat(ParkedControllerManagerPath(snapshot_.paths),
                     ": a kube-controller-manager manifest is parked there while ",
                     kcm ? kcm->path
                         : StrCat(snapshot_.paths.manifest_dir, "/kube-controller-manager.yaml"),
                     " is in the manifest directory; only a stopped node (kube-controller-manager "
                     "parked, none in the manifest directory) has a parked manifest. Keep one of "
                     "the two"));
    }
    if (!kcm) {
      // A kube-controller-manager.yaml that the kubelet would refuse is already reported, with
      // its reason, by CheckManifestDirectory.
      if (!ManifestRefused(kKubeControllerManager)) {
        Problem(StrCat("no kube-controller-manager manifest in ", snapshot_.paths.manifest_dir,
                       " (set paths.manifestDir if the kubelet reads another directory)"));
      }
      return Finish(NodeState::kInconsistent);
    }
    for (const auto* component : {&kcm, &ccm}) {
      if (*component) CheckManager(**component);
    }
    const std::string provider = kcm->Flag("cloud-provider").value_or("");
    const std::optional<KubeletProvider> kubelet_provider = KubeletCloudProvider();
    const std::string apiserver_provider =
        result_.view.apiserver ? result_.view.apiserver->Flag("cloud-provider").value_or("") : "";

    if (provider == "aws") {
      if (ccm) {
        Problem(StrCat(ccm->path,
                       ": a cloud-controller-manager is defined while kube-controller-manager "
                       "still runs the in-tree aws provider (",
                       kcm->path, "); a node runs one or the other"));
      }
      if (apiserver_provider == "external") {
        Problem(StrCat(result_.view.apiserver->path,
                       ": kube-apiserver has --cloud-provider=external while "
                       "kube-controller-manager still runs the in-tree provider (a half-done "
                       "move; run `handoff-agent recover` or restore the backup)"));
      }
      if (kubelet_provider && kubelet_provider->value == "external") {
        Problem(StrCat(kubelet_provider->where,
                       ": the kubelet has --cloud-provider=external while "
                       "kube-controller-manager still runs the in-tree provider"));
      }
      if (kcm->LeaderMigrationEnabled()) return Finish(NodeState::kPrepared);
      if (snapshot_.leader_migration_config) {
        Warn(StrCat(snapshot_.paths.leader_migration_config,
                    " exists but no manager uses it; `plan --to prepared` will replace it"));
      }
      return Finish(NodeState::kInTree);
    }
    if (provider == "external") {
      if (kcm->LeaderMigrationEnabled()) {
        Problem(StrCat(kcm->path,
                       ": kube-controller-manager has --cloud-provider=external and "
                       "--enable-leader-migration; an external kube-controller-manager runs "
                       "no cloud controllers and MUST NOT take part in Leader Migration "
                       "(remove --enable-leader-migration and --leader-migration-config)"));
      }
      if (result_.view.apiserver && apiserver_provider != "external") {
        Problem(StrCat(result_.view.apiserver->path,
                       ": kube-apiserver must have --cloud-provider=external once "
                       "kube-controller-manager is external (it has ",
                       apiserver_provider.empty() ? "none" : apiserver_provider, ")"));
      }
      if (kubelet_provider && kubelet_provider->value != "external") {
        Problem(StrCat(kubelet_provider->where,
                       ": the kubelet must have --cloud-provider=external once "
                       "kube-controller-manager is external (it has ",
                       kubelet_provider->value.empty() ? "none" : kubelet_provider->value, ")"));
      }
      if (!ccm) {
        // The downtime path's middle step: everything external, the cloud-controller-manager
        // not started yet.
        Warn(StrCat("no cloud-controller-manager manifest in ", snapshot_.paths.manifest_dir,
                    ": nothing on this node runs the cloud controllers until it moves to "
                    "finalized"));
        if (snapshot_.leader_migration_config) {
          Warn(StrCat(snapshot_.paths.leader_migration_config,
                      " exists but no manager uses it; it can be removed"));
        }
        return Finish(NodeState::kExternal);
      }
      if (ccm->LeaderMigrationEnabled()) return Finish(NodeState::kMigrated);
      if (snapshot_.leader_migration_config) {
        Warn(StrCat(snapshot_.paths.leader_migration_config,
                    " exists but no manager uses it; it can be removed"));
      }
      return Finish(NodeState::kFinalized);
    }
    Problem(StrCat(kcm->path, ": kube-controller-manager has ",
                   provider.empty() ? std::string("no --cloud-provider")
                                    : StrCat("--cloud-provider=", provider),
                   "; handoff moves a node from the in-tree aws provider to external"));
    return Finish(NodeState::kInconsistent);
  }

 private:
  // A worker: no control-plane static pod, and its kubelet in-tree (aws) or external.
  Classification RunWorker() {
    for (std::string_view component :
         {kKubeApiserver, kKubeControllerManager, kCloudControllerManager, kKubeScheduler}) {
      std::vector<std::string> ignored;
      if (std::optional<ComponentView> found = FindComponent(snapshot_, component, ignored)) {
        Problem(StrCat(found->path, ": a ", component, " static pod on a node whose settings say "
                       "role: worker; a control-plane node moves with role: control-plane"));
      }
    }
    const std::optional<KubeletProvider> provider = KubeletCloudProvider();
    if (!provider) {
      if (result_.problems.empty()) {
        Problem(StrCat("the kubelet's flags cannot be read: the node has no kubelet.service and no ",
                       snapshot_.paths.kubelet_flags_file.empty()
                           ? std::string("flags file (paths.kubeletFlagsFile is empty)")
                           : snapshot_.paths.kubelet_flags_file));
      }
      return Finish(NodeState::kInconsistent);
    }
    absl::StatusOr<KubeletCommandLine> flags = ExpectedKubeletFlags(snapshot_);
    if (!flags.ok()) {
      Problem(std::string(flags.status().message()));
      return Finish(NodeState::kInconsistent);
    }
    if (provider->value == "aws") return Finish(NodeState::kInTree);
    if (provider->value != "external") {
      Problem(StrCat(provider->where, ": the kubelet has ",
                     provider->value.empty() ? std::string("no --cloud-provider")
                                             : StrCat("--cloud-provider=", provider->value),
                     "; handoff moves a kubelet from the in-tree aws provider to external"));
      return Finish(NodeState::kInconsistent);
    }
    if (const KubeletFlag* config = flags->Effective("cloud-config")) {
      Problem(StrCat(DescribeFlag(*config), ": an external kubelet takes no --cloud-config"));
    }
    if (flags->Effective("image-credential-provider-config") == nullptr) {
      Warn(StrCat("the external kubelet has no --image-credential-provider-config: images from "
                  "ECR (*.dkr.ecr.*.amazonaws.com) no longer pull without imagePullSecrets"));
    }
    return Finish(NodeState::kExternal);
  }

  Classification Finish(NodeState state) {
    result_.state = result_.problems.empty() ? state : NodeState::kInconsistent;
    return std::move(result_);
  }
  void Problem(std::string text) { result_.problems.push_back(std::move(text)); }
  void Warn(std::string text) { result_.warnings.push_back(std::move(text)); }

  // Parses the parked kube-controller-manager manifest into the view, or says why it cannot.
  void ReadParked() {
    const std::string path = ParkedControllerManagerPath(snapshot_.paths);
    absl::StatusOr<StaticPod> pod = StaticPod::Parse(*snapshot_.parked_controller_manager, path);
    if (!pod.ok()) {
      Problem(StrCat(pod.status().message(),
                     " (the parked kube-controller-manager manifest; handoff brings it back to "
                     "the manifest directory as it is, so it must be the in-tree one)"));
      return;
    }
    if (pod->PodName() != kKubeControllerManager) {
      Problem(StrCat(path, ": the parked manifest defines pod ", pod->PodName(),
                     ", not kube-controller-manager"));
      return;
    }
    ManifestFile file;
    file.path = path;
    file.pod = *std::move(pod);
    result_.view.parked_controller_manager = ViewOf(file, kKubeControllerManager, result_.problems);
  }

  // No kube-controller-manager in the manifest directory and one parked: the downtime path's
  // first step, valid only when everything else is as in-tree.
  Classification ClassifyStopped() {
    const std::string path = ParkedControllerManagerPath(snapshot_.paths);
    const std::optional<ComponentView>& parked = result_.view.parked_controller_manager;
    if (!parked) return Finish(NodeState::kInconsistent);  // ReadParked said why
    CheckManager(*parked);
    const std::string provider = parked->Flag("cloud-provider").value_or("");
    if (provider != "aws") {
      Problem(StrCat(path, ": the parked kube-controller-manager has ",
                     provider.empty() ? std::string("no --cloud-provider")
                                      : StrCat("--cloud-provider=", provider),
                     "; only the in-tree (aws) kube-controller-manager is parked, by the move "
                     "from in-tree to stopped"));
    }
    if (parked->LeaderMigrationEnabled()) {
      Problem(StrCat(path,
                     ": the parked kube-controller-manager has --enable-leader-migration; the "
                     "downtime path parks an in-tree kube-controller-manager without Leader "
                     "Migration"));
    }
    if (const std::optional<ComponentView>& ccm = result_.view.cloud_controller_manager) {
      Problem(StrCat(ccm->path,
                     ": a cloud-controller-manager is defined while the in-tree "
                     "kube-controller-manager is parked at ",
                     path, " (a stopped node runs no cloud controllers)"));
    }
    const std::optional<ComponentView>& apiserver = result_.view.apiserver;
    if (apiserver && apiserver->Flag("cloud-provider") == std::optional<std::string>("external")) {
      Problem(StrCat(apiserver->path,
                     ": kube-apiserver has --cloud-provider=external while the in-tree "
                     "kube-controller-manager is parked at ",
                     path, " (a half-done move; run `handoff-agent recover`)"));
    }
    if (const std::optional<KubeletProvider> kubelet = KubeletCloudProvider();
        kubelet && kubelet->value == "external") {
      Problem(StrCat(kubelet->where,
                     ": the kubelet has --cloud-provider=external while the in-tree "
                     "kube-controller-manager is parked at ",
                     path));
    }
    if (snapshot_.leader_migration_config) {
      Warn(StrCat(snapshot_.paths.leader_migration_config, " exists but no manager uses it"));
    }
    return Finish(NodeState::kStopped);
  }

  // Files the kubelet would run twice or not at all.
  void CheckManifestDirectory() {
    std::map<std::string, std::vector<std::string>> files_by_pod;
    for (const ManifestFile& file : snapshot_.manifests) {
      if (!file.pod) {
        // The kubelet parses every regular file there whose name does not start with '.', and
        // skips with an error one that is not a regular file (pkg/kubelet/config/file.go); either
        // way handoff will not guess what the entry was meant to be.
        Problem(StrCat(file.parse_error, " (the kubelet reads every file in ",
                       snapshot_.paths.manifest_dir,
                       " whose name does not start with '.', and skips one that is not a regular "
                       "file; fix or move this one)"));
        continue;
      }
      files_by_pod[StrCat(file.pod->Namespace(), "/", file.pod->PodName())].push_back(file.path);
    }
    for (const auto& [pod, files] : files_by_pod) {
      if (files.size() < 2) continue;
      Problem(StrCat("pod ", pod, " is defined by ", files.size(), " files: ", StrJoin(files, ", "),
                     "; the kubelet runs every file in the manifest directory whatever its "
                     "extension (kubernetes/kubeadm#2823), so move the extra copies out of ",
                     snapshot_.paths.manifest_dir));
    }
  }

  // Whether "<component>.yaml" is in the manifest directory but does not parse as a pod.
  bool ManifestRefused(std::string_view component) const {
    const std::string canonical = StrCat(snapshot_.paths.manifest_dir, "/", component, ".yaml");
    for (const ManifestFile& file : snapshot_.manifests) {
      if (file.path == canonical && !file.pod) return true;
    }
    return false;
  }

  // The kubelet's --cloud-provider ("" for none) as it runs with it, and where that is written;
  // nullopt when the kubelet's flags are not managed here or cannot be read (a problem, then).
  struct KubeletProvider {
    std::string value;
    std::string where;
  };
  std::optional<KubeletProvider> KubeletCloudProvider() {
    if (!snapshot_.kubelet_unit_error.empty()) {
      Problem(StrCat(snapshot_.kubelet_unit_error,
                     " (the kubelet's unit: handoff cannot tell what the kubelet runs with)"));
      return std::nullopt;
    }
    if (snapshot_.kubelet_unit) {
      // What systemd starts: the unit, its drop-ins and every environment file they name.
      absl::StatusOr<EffectiveKubelet> kubelet = ReadEffectiveKubelet(*snapshot_.kubelet_unit);
      if (!kubelet.ok()) {
        Problem(std::string(kubelet.status().message()));
        return std::nullopt;
      }
      const KubeletFlag* provider = kubelet->flags.Effective("cloud-provider");
      if (provider == nullptr) {
        return KubeletProvider{"", StrCat("the kubelet's command line (",
                                          kubelet->command.fragment, " and its drop-ins)")};
      }
      return KubeletProvider{provider->value.value_or(""), DescribeFlag(*provider)};
    }
    if (!snapshot_.kubelet_flags) return std::nullopt;
    absl::StatusOr<KubeletFlagsFile> flags =
        KubeletFlagsFile::Parse(*snapshot_.kubelet_flags, snapshot_.paths.kubelet_flags_file);
    if (!flags.ok()) {
      Problem(std::string(flags.status().message()));
      return std::nullopt;
    }
    return KubeletProvider{flags->flags().Get("cloud-provider").value_or(""),
                           snapshot_.paths.kubelet_flags_file};
  }

  // The Leader Migration rules that hold for either manager, whatever the node's state.
  void CheckManager(const ComponentView& manager) {
    const lm::Component component = manager.component == kCloudControllerManager
                                        ? lm::Component::kCloudControllerManager
                                        : lm::Component::kKubeControllerManager;
    if (!manager.version) {
      Warn(StrCat(manager.path, ": the image ", manager.pod.Image(manager.container),
                  " does not name a Kubernetes version; version-specific checks skipped"));
    }
    for (const char* flag : {"enable-leader-migration", "leader-migration-config", "cloud-provider",
                             "leader-elect", "feature-gates"}) {
      if (manager.pod.CountFlag(manager.container, flag) > 1) {
        Problem(StrCat(manager.path, ": --", flag, " is given ",
                       manager.pod.CountFlag(manager.container, flag),
                       " times (the last one wins); keep one"));
      }
    }
    if (manager.component == kCloudControllerManager) {
      const std::string provider = manager.Flag("cloud-provider").value_or("");
      if (provider != "aws" && provider != "aws/v2") {
        Problem(StrCat(manager.path, ": cloud-controller-manager must have --cloud-provider=aws",
                       " (or aws/v2); it has ", provider.empty() ? "none" : provider));
      }
      if (!manager.LeaderElect()) {
        Problem(StrCat(manager.path,
                       ": cloud-controller-manager has --leader-elect=false, so every replica "
                       "runs every cloud controller at once"));
      }
    }
    const std::optional<std::string> gates = manager.Flag("feature-gates");
    const std::optional<std::string> gate =
        gates ? FeatureGates(*gates).Get(kLeaderMigrationFeatureGate) : std::nullopt;
    if (gate && manager.version && manager.version->AtLeast(1, 27)) {
      Problem(StrCat(manager.path, ": --feature-gates sets ", kLeaderMigrationFeatureGate,
                     ", which was removed in 1.27; ", manager.component, " ",
                     manager.version->ToString(), " refuses to start with it"));
    }
    const std::optional<std::string> config_path = manager.Flag("leader-migration-config");
    if (!manager.LeaderMigrationEnabled()) {
      if (config_path) {
        Problem(StrCat(manager.path,
                       ": --leader-migration-config is set without "
                       "--enable-leader-migration, so the manager silently ignores it"));
      }
      return;
    }
    if (!manager.LeaderElect()) {
      Problem(StrCat(manager.path,
                     ": --enable-leader-migration with --leader-elect=false: "
                     "Leader Migration works only with leader election, so it is silently off"));
    }
    if (manager.version && !manager.version->AtLeast(1, 21)) {
      Problem(StrCat(manager.path, ": ", manager.component, " ", manager.version->ToString(),
                     " has no Leader Migration (it arrived in 1.21)"));
      return;
    }
    if (manager.version && !manager.version->AtLeast(1, 22) && !IsTrue(gate)) {
      Problem(StrCat(manager.path, ": Leader Migration is alpha in 1.21 and needs --feature-gates=",
                     kLeaderMigrationFeatureGate, "=true"));
    }
    lm::Config config;
    if (config_path) {
      std::optional<std::string> host = HostPathOf(manager.pod, manager.container, *config_path);
      if (!host) {
        Problem(StrCat(manager.path, ": --leader-migration-config=", *config_path,
                       " is not inside any hostPath volume mounted into the ", manager.component,
                       " container"));
        return;
      }
      auto file = snapshot_.referenced_files.find(*host);
      if (file == snapshot_.referenced_files.end() || !file->second) {
        Problem(StrCat(manager.path, ": --leader-migration-config=", *config_path, " comes from ",
                       *host, " on the node, which does not exist"));
        return;
      }
      lm::LintOptions options;
      options.component = component;
      options.version = manager.version;
      lm::LintResult lint = lm::Lint(*file->second, options);
      for (const lm::Problem& problem : lint.problems) {
        Problem(StrCat(lm::FormatProblem(*host, problem), " (read by ", manager.component, ")"));
      }
      if (!lint.problems.empty() || !lint.config) return;
      config = *lint.config;
    } else {
      if (!manager.version) return;
      absl::StatusOr<lm::Config> fallback = lm::DefaultConfig(component, *manager.version);
      if (!fallback.ok()) {
        Problem(StrCat(manager.path, ": ", fallback.status().message()));
        return;
      }
      config = *fallback;
    }
    if (!manager.version) return;
    // The manager holding the migration lease runs only the listed controllers assigned to it:
    // anything it registers but the file gives to the other manager would stop running.
    std::vector<std::string> mine = lm::ControllersFor(config, component);
    std::vector<std::string> missing;
    for (lm::CloudController controller :
         {lm::CloudController::kRoute, lm::CloudController::kService,
          lm::CloudController::kCloudNodeLifecycle}) {
      std::string name = lm::ControllerName(component, *manager.version, controller);
      if (std::find(mine.begin(), mine.end(), name) == mine.end()) missing.push_back(name);
    }
    if (!missing.empty()) {
      (config_path ? result_.problems : result_.warnings)
          .push_back(
              StrCat(manager.path, ": under ",
                     config_path ? StrCat("--leader-migration-config=", *config_path)
                                 : std::string("the default migration configuration"),
                     " ", manager.component, " ", manager.version->ToString(), " runs none of ",
                     StrJoin(missing, ", "),
                     " under the migration lease (names must match its own controller names)"));
    }
  }

  const NodeSnapshot& snapshot_;
  Classification result_;
};

}  // namespace

bool ComponentView::LeaderMigrationEnabled() const {
  return IsTrue(Flag("enable-leader-migration"));
}

bool ComponentView::LeaderElect() const {
  std::optional<std::string> value = Flag("leader-elect");
  return !value || IsTrue(value);
}

Classification Classify(const NodeSnapshot& snapshot) { return Classifier(snapshot).Run(); }

}  // namespace handoff
