#include "agent/engine/planner.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "absl/strings/str_format.h"
#include "agent/engine/ccm_template.h"
#include "agent/engine/credential_provider.h"
#include "agent/engine/migration_record.h"
#include "agent/leadermigration/config.h"
#include "agent/manifest/feature_gates.h"
#include "agent/manifest/kubelet_flags.h"
#include "common/base/strings.h"
#include "common/fs/host_path.h"

namespace handoff {
namespace {

namespace lm = leadermigration;

absl::Status Precondition(const std::string& what) { return absl::FailedPreconditionError(what); }

// Kubelet flags to set (nullopt: remove), in order.
using KubeletEdits = std::vector<std::pair<std::string, std::optional<std::string>>>;

// The files a snapshot knows, by path, for re-reading a node after a plan.
std::map<std::string, std::optional<std::string>> KnownFiles(const NodeSnapshot& snapshot) {
  std::map<std::string, std::optional<std::string>> files;
  for (const ManifestFile& file : snapshot.manifests) files[file.path] = file.content;
  if (!snapshot.paths.kubelet_flags_file.empty()) {
    files[snapshot.paths.kubelet_flags_file] = snapshot.kubelet_flags;
  }
  files[snapshot.paths.leader_migration_config] = snapshot.leader_migration_config;
  files[MigrationRecordPath(snapshot.paths)] = snapshot.migration_record;
  files[ParkedControllerManagerPath(snapshot.paths)] = snapshot.parked_controller_manager;
  for (const auto& [path, content] : snapshot.referenced_files) files[path] = content;
  if (snapshot.role == NodeRole::kWorker) {
    files[snapshot.worker.credential_provider_config] = snapshot.credential_provider_config;
  }
  if (snapshot.kubelet_unit) {
    for (const auto& [path, text] : snapshot.kubelet_unit->environment) {
      if (!files.count(path)) files[path] = text;
    }
  }
  return files;
}

}  // namespace

// The node as it would be after `plan`, re-read from the planned contents.
NodeSnapshot SnapshotAfter(const NodeSnapshot& snapshot, const Plan& plan) {
  std::map<std::string, std::optional<std::string>> files = KnownFiles(snapshot);
  for (const FileChange& change : plan.changes) files[change.path] = change.after;
  NodeSnapshot after;
  after.paths = snapshot.paths;
  after.role = snapshot.role;
  after.worker = snapshot.worker;
  after.credential_provider_binary = snapshot.credential_provider_binary;
  after.credential_provider_config_dir_exists = snapshot.credential_provider_config_dir_exists;
  after.host_name = snapshot.host_name;
  if (snapshot.role == NodeRole::kWorker) {
    after.credential_provider_config = files[snapshot.worker.credential_provider_config];
  }
  const std::string prefix = JoinPath(snapshot.paths.manifest_dir, "");
  for (const auto& [path, content] : files) {
    if (!content || !StartsWith(path, prefix) ||
        path.find('/', prefix.size()) != std::string::npos ||
        StartsWith(path.substr(prefix.size()), ".")) {
      continue;
    }
    ManifestFile file;
    file.path = path;
    file.content = *content;
    absl::StatusOr<StaticPod> pod = StaticPod::Parse(*content, path);
    if (pod.ok()) {
      file.pod = *std::move(pod);
    } else {
      file.parse_error = std::string(pod.status().message());
    }
    after.manifests.push_back(std::move(file));
  }
  if (!snapshot.paths.kubelet_flags_file.empty()) {
    after.kubelet_flags = files[snapshot.paths.kubelet_flags_file];
  }
  after.kubelet_unit = snapshot.kubelet_unit;
  after.kubelet_unit_error = snapshot.kubelet_unit_error;
  if (after.kubelet_unit) {
    // The environment files as the plan leaves them: those the unit read, and the flags file.
    std::vector<std::string> paths;
    for (const auto& [path, text] : after.kubelet_unit->environment) paths.push_back(path);
    if (!snapshot.paths.kubelet_flags_file.empty()) {
      paths.push_back(snapshot.paths.kubelet_flags_file);
    }
    for (const std::string& path : paths) {
      if (const std::optional<std::string>& content = files[path]) {
        after.kubelet_unit->environment[path] = *content;
      } else {
        after.kubelet_unit->environment.erase(path);
      }
    }
  }
  after.leader_migration_config = files[snapshot.paths.leader_migration_config];
  after.migration_record = files[MigrationRecordPath(snapshot.paths)];
  after.parked_controller_manager = files[ParkedControllerManagerPath(snapshot.paths)];
  for (const ManifestFile& file : after.manifests) {
    if (!file.pod) continue;
    for (size_t c = 0; c < file.pod->ContainerNames().size(); ++c) {
      std::optional<std::string> flag = file.pod->GetFlag(c, "leader-migration-config");
      if (!flag) continue;
      if (std::optional<std::string> host = HostPathOf(*file.pod, c, *flag)) {
        auto known = files.find(*host);
        after.referenced_files[*host] = known == files.end() ? std::nullopt : known->second;
      }
    }
  }
  return after;
}

namespace {

class Planner {
 public:
  Planner(const NodeSnapshot& snapshot, const Classification& current, const Settings& settings)
      : snapshot_(snapshot), current_(current), settings_(settings), view_(current.view) {}

  absl::StatusOr<Plan> Run(NodeState target) {
    plan_.from = current_.state;
    plan_.to = target;
    if (current_.state == NodeState::kInconsistent) {
      return Precondition(StrCat("the node is inconsistent, so handoff will not change it:\n  - ",
                                 StrJoin(current_.problems, "\n  - ")));
    }
    if (target == current_.state) return plan_;
    if (snapshot_.role == NodeRole::kWorker) {
      const bool forward = current_.state == NodeState::kInTree && target == NodeState::kExternal;
      const bool back = current_.state == NodeState::kExternal && target == NodeState::kInTree;
      if (!forward && !back) {
        return Precondition(StrCat("a worker moves between in-tree and external only (its "
                                   "kubelet's --cloud-provider); it is ",
                                   NodeStateName(current_.state), ", and ",
                                   NodeStateName(target), " is a control-plane node's state"));
      }
      absl::Status status = forward ? WorkerToExternal() : WorkerToInTree();
      if (!status.ok()) return status;
      return CheckOutcome();
    }
    if (!AreAdjacent(current_.state, target)) {
      return Precondition(
          StrCat("the node is ", NodeStateName(current_.state), " and ", NodeStateName(target),
                 " is not one step away; move one step at a time (in-tree ⇄ prepared ⇄ migrated ⇄ "
                 "finalized, or with downtime in-tree ⇄ stopped ⇄ external ⇄ finalized, and "
                 "external ⇄ migrated)"));
    }
    absl::Status status;
    switch (target) {
      case NodeState::kPrepared:
        status = current_.state == NodeState::kInTree ? Prepare() : MigratedToPrepared();
        break;
      case NodeState::kInTree:
        status = current_.state == NodeState::kPrepared ? PreparedToInTree() : StoppedToInTree();
        break;
      case NodeState::kMigrated:
        status = current_.state == NodeState::kPrepared    ? Migrate()
                 : current_.state == NodeState::kFinalized ? FinalizedToMigrated()
                                                           : AddCloudControllerManager(true);
        break;
      case NodeState::kFinalized:
        status =
            current_.state == NodeState::kMigrated ? Finalize() : AddCloudControllerManager(false);
        break;
      case NodeState::kStopped:
        status = current_.state == NodeState::kInTree ? Stop() : ExternalToStopped();
        break;
      case NodeState::kExternal:
        status = current_.state == NodeState::kStopped ? StoppedToExternal()
                                                       : RemoveCloudControllerManager();
        break;
      case NodeState::kInconsistent:
        status = absl::InvalidArgumentError("not a target");
        break;
    }
    if (!status.ok()) return status;
    return CheckOutcome();
  }

 private:
  // The file's current text, if it exists.
  std::optional<std::string> Current(const std::string& path) const {
    std::map<std::string, std::optional<std::string>> files = KnownFiles(snapshot_);
    auto it = files.find(path);
    return it == files.end() ? std::nullopt : it->second;
  }

  void Write(const std::string& path, std::optional<std::string> after, std::string component) {
    std::optional<std::string> before = Current(path);
    if (before == after) return;
    plan_.changes.push_back(
        FileChange{path, std::move(before), std::move(after), std::move(component)});
  }

  absl::Status WriteManifest(const ComponentView& view, const StaticPod& pod) {
    absl::Status valid = pod.Validate();
    if (!valid.ok()) {
      return absl::InternalError(
          StrCat("the planned manifest is not a valid Pod: ", valid.message()));
    }
    // A file whose meaning does not change is left alone, even when handoff would lay it out
    // differently: rewriting it would change nothing for the kubelet.
    if (pod.SemanticallyEquals(view.pod)) return absl::OkStatus();
    Write(view.path, pod.Emit(), view.component);
    return absl::OkStatus();
  }

  absl::StatusOr<KubeVersion> VersionOf(const ComponentView& view) const {
    if (view.version) return *view.version;
    return absl::InvalidArgumentError(
        StrCat(view.path, ": the image ", view.pod.Image(view.container),
               " does not name a Kubernetes version, which the Leader Migration file depends on "
               "(controller names and apiVersion differ by version); use an image tagged vX.Y.Z"));
  }

  absl::StatusOr<std::string> RenderConfig(lm::Component reader, const KubeVersion& version) const {
    lm::RenderOptions options;
    options.reader = reader;
    options.reader_version = version;
    options.wildcard = settings_.wildcard;
    options.include_nodeipam = settings_.migrate_nodeipam;
    options.leader_name = settings_.leader_name;
    return lm::Render(options);
  }

  // The file mount that carries `path` into the container, when it is a mount of that file alone
  // (a directory mount such as /etc/kubernetes is never removed).
  static std::optional<HostPathMount> FileMount(const ComponentView& view,
                                                const std::string& path) {
    std::optional<HostPathMount> mount = view.pod.MountCovering(view.container, path);
    if (mount && mount->mount_path == path) return mount;
    return std::nullopt;
  }

  // Removes Leader Migration from a manager: both flags, the file's mount, the feature gate.
  static void DisableLeaderMigration(const ComponentView& view, StaticPod& pod) {
    if (std::optional<std::string> config = view.Flag("leader-migration-config")) {
      if (std::optional<HostPathMount> mount = FileMount(view, *config))
        pod.RemoveVolume(mount->name);
    }
    pod.RemoveFlag(view.container, "enable-leader-migration");
    pod.RemoveFlag(view.container, "leader-migration-config");
    if (std::optional<std::string> gates = view.Flag("feature-gates")) {
      FeatureGates parsed(*gates);
      if (parsed.Remove(kLeaderMigrationFeatureGate)) {
        if (parsed.empty()) {
          pod.RemoveFlag(view.container, "feature-gates");
        } else {
          pod.SetFlag(view.container, "feature-gates", parsed.ToString());
        }
      }
    }
  }

  absl::Status EnableLeaderMigration(const ComponentView& view, StaticPod& pod) const {
    const std::string& path = settings_.paths.leader_migration_config;
    pod.SetFlag(view.container, "enable-leader-migration", std::nullopt);
    pod.SetFlag(view.container, "leader-migration-config", path);
    if (view.version && !view.version->AtLeast(1, 22)) {
      // Alpha and off by default in 1.21 only; 1.22+ has it on, 1.27 removed it.
      FeatureGates gates(view.Flag("feature-gates").value_or(""));
      gates.Set(kLeaderMigrationFeatureGate, "true");
      pod.SetFlag(view.container, "feature-gates", gates.ToString());
    }
    return pod.EnsureHostPathMount(
        view.container,
        HostPathMount{std::string(kLeaderMigrationVolume), path, "File", path, true});
  }

  absl::Status Prepare() {
    const ComponentView& kcm = *view_.controller_manager;
    if (!kcm.LeaderElect()) {
      return Precondition(StrCat(
          kcm.path,
          ": kube-controller-manager has --leader-elect=false; Leader Migration needs "
          "leader election (without it the flag is silently ignored). Remove --leader-elect=false "
          "first"));
    }
    absl::StatusOr<KubeVersion> version = VersionOf(kcm);
    if (!version.ok()) return version.status();
    absl::StatusOr<std::string> config =
        RenderConfig(lm::Component::kKubeControllerManager, *version);
    if (!config.ok()) return config.status();
    StaticPod pod = kcm.pod;
    absl::Status enabled = EnableLeaderMigration(kcm, pod);
    if (!enabled.ok()) return enabled;
    Write(settings_.paths.leader_migration_config, *config, "");
    return WriteManifest(kcm, pod);
  }

  absl::Status PreparedToInTree() {
    const ComponentView& kcm = *view_.controller_manager;
    StaticPod pod = kcm.pod;
    DisableLeaderMigration(kcm, pod);
    absl::Status written = WriteManifest(kcm, pod);
    if (!written.ok()) return written;
    if (std::optional<std::string> used = kcm.Flag("leader-migration-config");
        used && *used != settings_.paths.leader_migration_config) {
      plan_.notes.push_back(StrCat("kube-controller-manager read its Leader Migration file at ",
                                   *used, "; handoff leaves that file in place"));
    }
    Write(settings_.paths.leader_migration_config, std::nullopt, "");
    return absl::OkStatus();
  }

  // The image for `component` at the target version, or its current image when no target is set.
  absl::StatusOr<std::string> TargetImage(const ComponentView& view) const {
    const std::string current = view.pod.Image(view.container);
    if (auto it = settings_.images.find(view.component); it != settings_.images.end()) {
      return it->second;
    }
    if (!settings_.k8s_version) return current;
    const KubeVersion& target = *settings_.k8s_version;
    if (target.patch < 0) {
      return absl::InvalidArgumentError(StrCat("--k8s-version ", target.ToString(),
                                               " needs a patch number to tag images (e.g. ",
                                               target.ToString(), ".0)"));
    }
    if (view.version && target.AtLeast(view.version->major, view.version->minor) == false) {
      return absl::InvalidArgumentError(
          StrCat("--k8s-version ", target.ToString(), " is older than ", view.component, " ",
                 view.version->ToString(), " (", view.path, "); --k8s-version names version N+1"));
    }
    ImageRef ref = ImageRef::Parse(current);
    if (ref.tag.empty()) {
      return absl::InvalidArgumentError(StrCat(view.path, ": image ", current,
                                               " has no tag to replace; set images.",
                                               view.component, " in the settings file"));
    }
    return ref.WithTag(target.ToString());
  }

  absl::StatusOr<StaticPod> Retagged(const ComponentView& view) const {
    absl::StatusOr<std::string> image = TargetImage(view);
    if (!image.ok()) return image.status();
    StaticPod pod = view.pod;
    pod.SetImage(view.container, *image);
    return pod;
  }

  // The flag settings of the kubelet's move to external on a control-plane node.
  static KubeletEdits ControlPlaneKubeletEdits() {
    return {{"cloud-provider", "external"}, {"cloud-config", std::nullopt}};
  }

  // The flags file with `edits` made (a flag set to nullopt removed), nullopt when there is no
  // flags file.
  absl::StatusOr<std::optional<std::string>> EditFlagsFile(const KubeletEdits& edits) const {
    if (!snapshot_.kubelet_flags) return std::optional<std::string>();
    absl::StatusOr<KubeletFlagsFile> file =
        KubeletFlagsFile::Parse(*snapshot_.kubelet_flags, settings_.paths.kubelet_flags_file);
    if (!file.ok()) return file.status();
    for (const auto& [name, value] : edits) {
      if (value) {
        file->flags().Set(name, *value);
      } else {
        file->flags().Remove(name);
      }
    }
    return std::optional<std::string>(file->Emit());
  }

  // The Leader Migration file for the cloud-controller-manager of the settings' image.
  absl::StatusOr<std::string> CloudControllerManagerConfig() const {
    absl::StatusOr<KubeVersion> ccm_version = KubeVersion::FromImage(settings_.ccm.image);
    if (!ccm_version.ok()) {
      if (!settings_.k8s_version) {
        return absl::InvalidArgumentError(StrCat("the cloud-controller-manager image ",
                                                 settings_.ccm.image,
                                                 " does not name its Kubernetes version; pass "
                                                 "--k8s-version so the Leader Migration file "
                                                 "uses its controller names"));
      }
      ccm_version = *settings_.k8s_version;
    }
    return RenderConfig(lm::Component::kCloudControllerManager, *ccm_version);
  }

  absl::Status Migrate() {
    const ComponentView& kcm = *view_.controller_manager;
    // The cloud-controller-manager is built from the kube-controller-manager as it runs now.
    const std::string ccm_path =
        JoinPath(settings_.paths.manifest_dir, "cloud-controller-manager.yaml");
    absl::StatusOr<StaticPod> ccm =
        BuildCloudControllerManager(kcm, settings_, ccm_path, true, &plan_.notes);
    if (!ccm.ok()) return ccm.status();
    absl::StatusOr<std::string> config = CloudControllerManagerConfig();
    if (!config.ok()) return config.status();
    absl::StatusOr<std::vector<MigrationRecord::KubeletFile>> kubelet = PlanKubeletExternal();
    if (!kubelet.ok()) return kubelet.status();

    std::optional<MigrationRecord::File> kcm_config;
    if (std::optional<std::string> used = kcm.Flag("leader-migration-config")) {
      std::optional<std::string> host = HostPathOf(kcm.pod, kcm.container, *used);
      std::optional<std::string> content = host ? Current(*host) : std::nullopt;
      if (content) kcm_config = MigrationRecord::File{*host, *content};
    }
    WriteRecord(view_, kcm_config, *kubelet);
    // The order is the real node's (measured with kubeadm v1.26 nodes): the managers reach the
    // API through their own node's API server (kubeadm's controller-manager.conf names the
    // node's address), which is gone for up to 45 s once its manifest changes.
    //  - The kube-controller-manager goes first. On the node whose manager leads (the
    //    coordinator moves it last), a leader that lost its API server would run on blind until
    //    its renew deadline (10 s) and its leases would expire on their own (15 s more); stopped
    //    by its manifest, it is proven gone and its leases released at once, so a
    //    cloud-controller-manager on another node takes the migration lease at its next retry.
    //  - The API server next, while only standbys run here.
    //  - The cloud-controller-manager after the API server: the first one in the cluster takes
    //    its main lease at once, and would lose it again (and crash-loop until the API server is
    //    back) if its API server went away after it started.
    //  - The kubelet last, as in every move (KubeletSettings::settle).
    absl::StatusOr<StaticPod> kcm_pod = ExternalControllerManager(kcm);
    if (!kcm_pod.ok()) return kcm_pod.status();
    absl::Status written = WriteManifest(kcm, *kcm_pod);
    if (!written.ok()) return written;
    written = WriteRetaggedScheduler();
    if (!written.ok()) return written;
    written = WriteExternalApiserver();
    if (!written.ok()) return written;
    Write(settings_.paths.leader_migration_config, *config, "");
    Write(ccm_path, ccm->Emit(), std::string(kCloudControllerManager));
    WriteKubelet(*kubelet);
    return absl::OkStatus();
  }

  // The kubelet's files with --cloud-provider=external and without --cloud-config, each with
  // its text now and after: none when handoff does not manage the kubelet (with a note saying
  // so). With the kubelet's unit read, every flag is set where the kubelet reads it
  // (SetKubeletFlag: kubeadm-flags.env, KUBELET_EXTRA_ARGS in /etc/default/kubelet or
  // /etc/sysconfig/kubelet, ...); without one, in the flags file.
  absl::StatusOr<std::vector<MigrationRecord::KubeletFile>> PlanKubeletExternal(
      const KubeletEdits& edits = ControlPlaneKubeletEdits()) {
    using Files = std::vector<MigrationRecord::KubeletFile>;
    const std::string& path = settings_.paths.kubelet_flags_file;
    if (path.empty()) {
      plan_.notes.push_back(
          "the kubelet's flags are not managed here (paths.kubeletFlagsFile is "
          "empty): give the kubelet --cloud-provider=external yourself");
      return Files();
    }
    if (snapshot_.kubelet_unit) return KubeletUnitEdited(edits);
    if (!snapshot_.kubelet_flags) {
      return Precondition(StrCat(path,
                                 " does not exist, so the kubelet cannot be given "
                                 "--cloud-provider=external; set paths.kubeletFlagsFile (or "
                                 "\"\" to manage the kubelet yourself)"));
    }
    absl::StatusOr<std::optional<std::string>> flags = EditFlagsFile(edits);
    if (!flags.ok()) return flags.status();
    if (!*flags || **flags == *snapshot_.kubelet_flags) return Files();
    return Files{{path, *snapshot_.kubelet_flags, **flags}};
  }

  // The environment files of the kubelet's unit to write so that it runs with `edits`: each flag
  // set where it is read, the result checked as systemd would start it.
  absl::StatusOr<std::vector<MigrationRecord::KubeletFile>> KubeletUnitEdited(
      const KubeletEdits& edits) const {
    const KubeletUnit& now = *snapshot_.kubelet_unit;
    KubeletUnit unit = now;
    for (const auto& [name, value] : edits) {
      absl::StatusOr<std::map<std::string, std::string>> texts = SetKubeletFlag(unit, name, value);
      if (!texts.ok()) {
        return Precondition(StrCat("the kubelet cannot be moved to --cloud-provider=external: ",
                                   texts.status().message()));
      }
      for (const auto& [path, text] : *texts) unit.environment[path] = text;
    }
    absl::Status effect = TakesEffect(unit);
    if (!effect.ok()) return effect;
    std::vector<MigrationRecord::KubeletFile> files;
    for (const auto& [path, text] : unit.environment) {
      const std::string& before = now.environment.at(path);
      if (text != before) files.push_back(MigrationRecord::KubeletFile{path, before, text});
    }
    return files;
  }

  // Whether the kubelet, as `unit` starts it, runs --cloud-provider=external without
  // --cloud-config: the planned files read back as systemd reads them.
  absl::Status TakesEffect(const KubeletUnit& unit) const {
    absl::StatusOr<EffectiveKubelet> kubelet = ReadEffectiveKubelet(unit);
    if (!kubelet.ok()) return Precondition(std::string(kubelet.status().message()));
    const KubeletFlag* provider = kubelet->flags.Effective("cloud-provider");
    if (provider == nullptr || provider->value != std::optional<std::string>("external")) {
      return absl::InternalError(
          StrCat("the planned kubelet files would not start the kubelet with "
                 "--cloud-provider=external (",
                 provider == nullptr ? "it would have none" : DescribeFlag(*provider),
                 "); nothing will be written"));
    }
    if (const KubeletFlag* config = kubelet->flags.Effective("cloud-config")) {
      return absl::InternalError(StrCat("the planned kubelet files would leave ",
                                        DescribeFlag(*config), "; nothing will be written"));
    }
    return absl::OkStatus();
  }

  // The kubelet's planned files, each a change of the kubelet's: written last and together, the
  // kubelet restarted once after them (Applier).
  void WriteKubelet(const std::vector<MigrationRecord::KubeletFile>& files) {
    for (const MigrationRecord::KubeletFile& file : files) {
      Write(file.path, file.after, std::string(kKubelet));
    }
  }

  // The migration record of the node as `view` shows it (the managers before they go external),
  // written first so that moving back always finds it.
  void WriteRecord(const NodeView& view, const std::optional<MigrationRecord::File>& kcm_config,
                   std::vector<MigrationRecord::KubeletFile> kubelet_files,
                   const std::vector<std::string>& created = {}) {
    std::optional<std::vector<std::string>> kubelet_flags;
    if (snapshot_.kubelet_flags) {
      absl::StatusOr<KubeletFlagsFile> file = KubeletFlagsFile::Parse(*snapshot_.kubelet_flags, "");
      if (file.ok()) kubelet_flags = file->flags().items();
    }
    MigrationRecord record =
        MigrationRecord::Capture(view, kubelet_flags, kcm_config, std::move(kubelet_files));
    for (const std::string& path : created) record.AddCreatedFile(path);
    Write(MigrationRecordPath(settings_.paths), record.Emit(), "");
  }

  absl::Status WriteExternalApiserver() {
    if (!view_.apiserver) return absl::OkStatus();
    absl::StatusOr<StaticPod> pod = Retagged(*view_.apiserver);
    if (!pod.ok()) return pod.status();
    pod->SetFlag(view_.apiserver->container, "cloud-provider", "external");
    pod->RemoveFlag(view_.apiserver->container, "cloud-config");
    return WriteManifest(*view_.apiserver, *pod);
  }

  absl::Status WriteRetaggedScheduler() {
    if (!view_.scheduler) return absl::OkStatus();
    absl::StatusOr<StaticPod> pod = Retagged(*view_.scheduler);
    if (!pod.ok()) return pod.status();
    return WriteManifest(*view_.scheduler, *pod);
  }

  // The kube-controller-manager `kcm` once external: the target image, no Leader Migration, no
  // in-tree provider or its --cloud-config, the settings' volume plugin and Node IPAM choice.
  absl::StatusOr<StaticPod> ExternalControllerManager(const ComponentView& kcm) {
    absl::StatusOr<StaticPod> kcm_pod = Retagged(kcm);
    if (!kcm_pod.ok()) return kcm_pod.status();
    DisableLeaderMigration(kcm, *kcm_pod);
    kcm_pod->SetFlag(kcm.container, "cloud-provider", "external");
    kcm_pod->RemoveFlag(kcm.container, "cloud-config");
    if (!settings_.external_cloud_volume_plugin.empty()) {
      kcm_pod->SetFlag(kcm.container, "external-cloud-volume-plugin",
                       settings_.external_cloud_volume_plugin);
    }
    if (settings_.migrate_nodeipam) {
      // The cloud-controller-manager's Node IPAM takes over; kube-controller-manager must not run
      // its own ("nodeipam" stays accepted as an alias of node-ipam-controller from 1.28).
      std::string controllers = kcm.Flag("controllers").value_or("*");
      if (controllers.find("-nodeipam") == std::string::npos) controllers += ",-nodeipam";
      kcm_pod->SetFlag(kcm.container, "controllers", controllers);
      plan_.notes.push_back(
          "nodeipam: make sure the cloud-controller-manager runs its Node IPAM "
          "controller (cloudControllerManager.extraArgs)");
    }
    return kcm_pod;
  }

  absl::Status MigratedToPrepared() {
    const std::string record_path = MigrationRecordPath(settings_.paths);
    if (!snapshot_.migration_record) {
      return Precondition(StrCat(
          "there is no migration record at ", record_path,
          ", so handoff does not know which images and flags this node had before it moved to "
          "migrated, and it never guesses them. Restore the manifests from a backup (handoff-agent "
          "backups), or write the prepared manifests by hand"));
    }
    absl::StatusOr<MigrationRecord> record =
        MigrationRecord::Parse(*snapshot_.migration_record, record_path);
    if (!record.ok()) return record.status();
    if (!record->Has(kKubeControllerManager)) {
      return Precondition(StrCat(record_path, " has no kube-controller-manager entry"));
    }
    // Moving back is the forward move in reverse order (the scheduler, the
    // kube-controller-manager, the cloud-controller-manager, the API server), but the
    // kube-controller-manager's Leader Migration file comes back before the manifests, and the
    // kubelet goes last, as in every move: a real kubelet drops a static pod change in its
    // first seconds after a restart (KubeletSettings::settle), so no manifest follows it.
    const ComponentView& ccm = *view_.cloud_controller_manager;
    // The kube-controller-manager's Leader Migration file comes back where it was (the same
    // path unless the node had its own before handoff prepared it), before the manifest that
    // mounts it.
    std::optional<MigrationRecord::File> kcm_config = record->leader_migration_config();
    const ComponentView& kcm = *view_.controller_manager;
    StaticPod kcm_pod = kcm.pod;
    absl::Status kcm_restored = record->Restore(kcm.component, kcm_pod, kcm.container);
    if (!kcm_restored.ok()) return kcm_restored;
    if (!WithPod(kcm, kcm_pod).LeaderMigrationEnabled()) {
      // A record written by the downtime path (stopped → external) holds the in-tree
      // kube-controller-manager without Leader Migration: in prepared it runs with it, as
      // `--to prepared` from in-tree gives it.
      const ComponentView restored = WithPod(kcm, kcm_pod);
      absl::StatusOr<KubeVersion> version = VersionOf(restored);
      if (!version.ok()) return version.status();
      absl::StatusOr<std::string> config =
          RenderConfig(lm::Component::kKubeControllerManager, *version);
      if (!config.ok()) return config.status();
      absl::Status enabled = EnableLeaderMigration(restored, kcm_pod);
      if (!enabled.ok()) return enabled;
      kcm_config = MigrationRecord::File{settings_.paths.leader_migration_config, *config};
    }
    if (kcm_config) Write(kcm_config->path, kcm_config->content, "");
    auto restore = [&](const std::optional<ComponentView>& component) -> absl::Status {
      if (!component || !record->Has(component->component)) return absl::OkStatus();
      if (component->component == kKubeControllerManager) return WriteManifest(kcm, kcm_pod);
      StaticPod pod = component->pod;
      absl::Status restored = record->Restore(component->component, pod, component->container);
      if (!restored.ok()) return restored;
      return WriteManifest(*component, pod);
    };
    for (const std::optional<ComponentView>* component :
         {&view_.scheduler, &view_.controller_manager}) {
      if (absl::Status restored = restore(*component); !restored.ok()) return restored;
    }
    // Then the cloud-controller-manager goes: the kube-controller-manager with Leader Migration
    // already waits for the migration lease and takes it at its next retry once the
    // cloud-controller-manager is gone, rather than only starting then. Its file goes after it.
    Write(ccm.path, std::nullopt, ccm.component);
    if (!kcm_config || kcm_config->path != settings_.paths.leader_migration_config) {
      Write(settings_.paths.leader_migration_config, std::nullopt, "");
    }
    if (absl::Status restored = restore(view_.apiserver); !restored.ok()) return restored;
    if (absl::Status restored = RestoreKubelet(*record); !restored.ok()) return restored;
    Write(record_path, std::nullopt, "");
    return absl::OkStatus();
  }

  absl::Status Finalize() {
    const ComponentView& ccm = *view_.cloud_controller_manager;
    StaticPod pod = ccm.pod;
    DisableLeaderMigration(ccm, pod);
    absl::Status written = WriteManifest(ccm, pod);
    if (!written.ok()) return written;
    Write(settings_.paths.leader_migration_config, std::nullopt, "");
    return absl::OkStatus();
  }

  absl::Status FinalizedToMigrated() {
    const ComponentView& ccm = *view_.cloud_controller_manager;
    absl::StatusOr<KubeVersion> version = VersionOf(ccm);
    if (!version.ok()) return version.status();
    absl::StatusOr<std::string> config =
        RenderConfig(lm::Component::kCloudControllerManager, *version);
    if (!config.ok()) return config.status();
    StaticPod pod = ccm.pod;
    absl::Status enabled = EnableLeaderMigration(ccm, pod);
    if (!enabled.ok()) return enabled;
    Write(settings_.paths.leader_migration_config, *config, "");
    return WriteManifest(ccm, pod);
  }

  // `view` with another pod (its version read again from the pod's image).
  static ComponentView WithPod(const ComponentView& view, StaticPod pod) {
    ComponentView changed = view;
    changed.pod = std::move(pod);
    changed.version.reset();
    absl::StatusOr<KubeVersion> version =
        KubeVersion::FromImage(changed.pod.Image(changed.container));
    if (version.ok()) changed.version = *version;
    return changed;
  }

  std::string ControllerManagerPath() const {
    return JoinPath(settings_.paths.manifest_dir, StrCat(kKubeControllerManager, ".yaml"));
  }

  // The migration record, parsed; FailedPrecondition when there is none (handoff never guesses
  // what a node had before it went external).
  absl::StatusOr<MigrationRecord> RequireRecord() const {
    const std::string record_path = MigrationRecordPath(settings_.paths);
    if (!snapshot_.migration_record) {
      return Precondition(StrCat(
          "there is no migration record at ", record_path,
          ", so handoff does not know which images and flags this node had before it went "
          "external, and it never guesses them. Restore the manifests from a backup "
          "(handoff-agent backups), or write the in-tree manifests by hand"));
    }
    absl::StatusOr<MigrationRecord> record =
        MigrationRecord::Parse(*snapshot_.migration_record, record_path);
    if (!record.ok()) return record.status();
    if (!record->Has(kKubeControllerManager)) {
      return Precondition(StrCat(record_path, " has no kube-controller-manager entry"));
    }
    return record;
  }

  // in-tree → stopped: the kube-controller-manager's manifest moves, byte for byte, out of the
  // manifest directory into handoff's state dir. The parked copy is written first, so that
  // whatever happens the manifest exists in one place or both, never in none.
  absl::Status Stop() {
    const ComponentView& kcm = *view_.controller_manager;
    const std::optional<std::string> content = Current(kcm.path);
    if (!content) return absl::InternalError(StrCat(kcm.path, ": not read"));
    if (kcm.path != ControllerManagerPath()) {
      plan_.notes.push_back(StrCat("kube-controller-manager's manifest ", kcm.path,
                                   " comes back as ", ControllerManagerPath(),
                                   " when the node leaves stopped"));
    }
    plan_.notes.push_back(
        "kube-controller-manager stops: no controller (cloud or other) runs on this node until "
        "it moves on to external, or back to in-tree");
    Write(ParkedControllerManagerPath(settings_.paths), *content, "");
    Write(kcm.path, std::nullopt, kcm.component);
    return absl::OkStatus();
  }

  // stopped → in-tree: the parked manifest goes back as it was.
  absl::Status StoppedToInTree() {
    const std::string parked = ParkedControllerManagerPath(settings_.paths);
    Write(ControllerManagerPath(), Current(parked), std::string(kKubeControllerManager));
    Write(parked, std::nullopt, "");
    return absl::OkStatus();
  }

  // stopped → external, in Migrate's order less the cloud-controller-manager and Leader
  // Migration: the record (of the node as in-tree, the parked kube-controller-manager in it as
  // the manifest it will be), kube-apiserver, the kube-controller-manager back in the manifest
  // directory and external, the parked copy removed, kube-scheduler, the kubelet.
  absl::Status StoppedToExternal() {
    const ComponentView& parked = *view_.parked_controller_manager;
    absl::StatusOr<std::vector<MigrationRecord::KubeletFile>> kubelet = PlanKubeletExternal();
    if (!kubelet.ok()) return kubelet.status();
    ComponentView kcm = parked;
    kcm.path = ControllerManagerPath();
    NodeView recorded = view_;
    recorded.controller_manager = kcm;
    recorded.parked_controller_manager.reset();
    WriteRecord(recorded, std::nullopt, *kubelet);
    absl::Status written = WriteExternalApiserver();
    if (!written.ok()) return written;
    absl::StatusOr<StaticPod> pod = ExternalControllerManager(kcm);
    if (!pod.ok()) return pod.status();
    // AWS's flags table for this path names --leader-elect=true: written out, so that the
    // manifest says what the managers rely on (the default is true as well).
    pod->SetFlag(kcm.container, "leader-elect", "true");
    if (!kcm.LeaderElect()) {
      plan_.notes.push_back(StrCat(
          "kube-controller-manager had --leader-elect=false; it comes back with "
          "--leader-elect=true, so that only one replica runs the controllers"));
    }
    absl::Status valid = pod->Validate();
    if (!valid.ok()) {
      return absl::InternalError(
          StrCat("the planned manifest is not a valid Pod: ", valid.message()));
    }
    Write(kcm.path, pod->Emit(), kcm.component);
    Write(parked.path, std::nullopt, "");
    written = WriteRetaggedScheduler();
    if (!written.ok()) return written;
    WriteKubelet(*kubelet);
    return absl::OkStatus();
  }

  // external → stopped: the reverse of StoppedToExternal, everything from the migration record,
  // but the kubelet last (as in every move: see MigratedToPrepared). The kube-controller-manager
  // is parked as the record has it, without Leader Migration (a record written by migrate holds
  // it as prepared).
  absl::Status ExternalToStopped() {
    absl::StatusOr<MigrationRecord> record = RequireRecord();
    if (!record.ok()) return record.status();
    absl::Status status = RestoreFromRecord(*record, view_.scheduler);
    if (!status.ok()) return status;
    const ComponentView& kcm = *view_.controller_manager;
    StaticPod pod = kcm.pod;
    status = record->Restore(kcm.component, pod, kcm.container);
    if (!status.ok()) return status;
    DisableLeaderMigration(WithPod(kcm, pod), pod);
    status = pod.Validate();
    if (!status.ok()) {
      return absl::InternalError(
          StrCat("the planned manifest is not a valid Pod: ", status.message()));
    }
    Write(ParkedControllerManagerPath(settings_.paths), pod.Emit(), "");
    Write(kcm.path, std::nullopt, kcm.component);
    status = RestoreFromRecord(*record, view_.apiserver);
    if (!status.ok()) return status;
    status = RestoreKubelet(*record);
    if (!status.ok()) return status;
    Write(MigrationRecordPath(settings_.paths), std::nullopt, "");
    return absl::OkStatus();
  }

  // external → finalized: the cloud-controller-manager, without Leader Migration (nothing to
  // hand over: no manager runs the cloud controllers). external → migrated: the same with Leader
  // Migration and its file, written first (a node that joined with kubeadm's external
  // configuration during a Leader Migration rollout; the other managers hold the lease). It is
  // built from the in-tree kube-controller-manager the record holds, whose --cloud-config it
  // takes over; a node with no record (kubeadm wrote it external) gets it from the external one.
  absl::Status AddCloudControllerManager(bool leader_migration) {
    const ComponentView& kcm = *view_.controller_manager;
    ComponentView source = kcm;
    if (snapshot_.migration_record) {
      absl::StatusOr<MigrationRecord> record = RequireRecord();
      if (!record.ok()) return record.status();
      StaticPod pod = kcm.pod;
      absl::Status restored = record->Restore(kcm.component, pod, kcm.container);
      if (!restored.ok()) return restored;
      source = WithPod(kcm, std::move(pod));
    } else {
      plan_.notes.push_back(StrCat(
          "there is no migration record at ", MigrationRecordPath(settings_.paths),
          ": the cloud-controller-manager is built from the external kube-controller-manager, "
          "so it gets no --cloud-config"));
    }
    const std::string ccm_path =
        JoinPath(settings_.paths.manifest_dir, "cloud-controller-manager.yaml");
    absl::StatusOr<StaticPod> ccm =
        BuildCloudControllerManager(source, settings_, ccm_path, leader_migration, &plan_.notes);
    if (!ccm.ok()) return ccm.status();
    if (leader_migration) {
      absl::StatusOr<std::string> config = CloudControllerManagerConfig();
      if (!config.ok()) return config.status();
      Write(settings_.paths.leader_migration_config, *config, "");
    }
    Write(ccm_path, ccm->Emit(), std::string(kCloudControllerManager));
    return absl::OkStatus();
  }

  // finalized → external and migrated → external: the cloud-controller-manager goes, then the
  // Leader Migration file it mounted (if any).
  absl::Status RemoveCloudControllerManager() {
    const ComponentView& ccm = *view_.cloud_controller_manager;
    Write(ccm.path, std::nullopt, ccm.component);
    if (ccm.LeaderMigrationEnabled())
      Write(settings_.paths.leader_migration_config, std::nullopt, "");
    return absl::OkStatus();
  }

  absl::Status RestoreKubelet(const MigrationRecord& record,
                              const std::vector<std::string>& flag_names = {"cloud-provider",
                                                                            "cloud-config"}) {
    if (!record.kubelet_files().empty()) return RestoreKubeletFiles(record, flag_names);
    if (!record.kubelet_flags() || !snapshot_.kubelet_flags) return absl::OkStatus();
    absl::StatusOr<KubeletFlagsFile> file =
        KubeletFlagsFile::Parse(*snapshot_.kubelet_flags, settings_.paths.kubelet_flags_file);
    if (!file.ok()) return file.status();
    file->flags() = FlagList(*record.kubelet_flags());
    Write(settings_.paths.kubelet_flags_file, file->Emit(), std::string(kKubelet));
    return absl::OkStatus();
  }

  // The kubelet's files as the record has them from before the move, each while it still holds
  // what the move wrote. One changed since (an operator's edit, a tool's rewrite) is not
  // overwritten: the kubelet's --cloud-provider and --cloud-config go back to what they were,
  // set where the kubelet reads them now, and the plan says so.
  absl::Status RestoreKubeletFiles(const MigrationRecord& record,
                                   const std::vector<std::string>& flag_names) {
    std::vector<std::string> edited;
    for (const MigrationRecord::KubeletFile& file : record.kubelet_files()) {
      if (Current(file.path) != std::optional<std::string>(file.after)) edited.push_back(file.path);
    }
    if (edited.empty()) {
      for (const MigrationRecord::KubeletFile& file : record.kubelet_files()) {
        Write(file.path, file.before, std::string(kKubelet));
      }
      return absl::OkStatus();
    }
    if (!snapshot_.kubelet_unit) {
      return Precondition(StrCat(StrJoin(edited, ", "),
                                 " changed since the move and the kubelet's unit cannot be read "
                                 "now, so handoff cannot tell where to put its flags back"));
    }
    KubeletUnit was = *snapshot_.kubelet_unit;
    for (const MigrationRecord::KubeletFile& file : record.kubelet_files()) {
      was.environment[file.path] = file.before;
    }
    absl::StatusOr<EffectiveKubelet> before = ReadEffectiveKubelet(was);
    if (!before.ok()) {
      return Precondition(StrCat("the kubelet's recorded files do not read back: ",
                                 before.status().message()));
    }
    KubeletUnit unit = *snapshot_.kubelet_unit;
    for (const std::string& name : flag_names) {
      const KubeletFlag* flag = before->flags.Effective(name);
      std::optional<std::string> value;
      if (flag != nullptr) value = flag->value.value_or("");
      absl::StatusOr<std::map<std::string, std::string>> texts = SetKubeletFlag(unit, name, value);
      if (!texts.ok()) {
        return Precondition(StrCat("the kubelet's --", name, " cannot be put back: ",
                                   texts.status().message()));
      }
      for (const auto& [path, text] : *texts) unit.environment[path] = text;
    }
    for (const auto& [path, text] : unit.environment) {
      Write(path, text, std::string(kKubelet));
    }
    plan_.notes.push_back(StrCat(
        StrJoin(edited, ", "), " changed since the move, so ", edited.size() == 1 ? "it is" : "they are",
        " not put back as recorded: only the kubelet's --", StrJoin(flag_names, ", --"),
        " go back to what they were, where the kubelet reads them now"));
    return absl::OkStatus();
  }

  absl::Status RestoreFromRecord(const MigrationRecord& record,
                                 const std::optional<ComponentView>& component) {
    if (!component || !record.Has(component->component)) return absl::OkStatus();
    StaticPod pod = component->pod;
    absl::Status restored = record.Restore(component->component, pod, component->container);
    if (!restored.ok()) return restored;
    return WriteManifest(*component, pod);
  }

  // The worker's kubelet flags its move sets (RestoreKubeletFiles puts the same back).
  static std::vector<std::string> WorkerKubeletFlags() {
    return {"cloud-provider", "cloud-config", "image-credential-provider-config",
            "image-credential-provider-bin-dir", "hostname-override"};
  }

  // in-tree → external on a worker: the record, the credential provider's configuration (unless
  // the kubelet's is already there and names ecr-credential-provider), then the kubelet's files:
  // --cloud-provider=external without --cloud-config, the credential provider's two flags, and
  // --hostname-override when the name an external kubelet takes (its override, else the host
  // name, lower-cased) is not its Node's. Refused before anything is written without
  // ecr-credential-provider or the Node's name.
  absl::Status WorkerToExternal() {
    const WorkerSettings& worker = snapshot_.worker;
    const std::string binary = JoinPath(worker.credential_provider_bin_dir, kEcrCredentialProvider);
    if (!snapshot_.credential_provider_binary) {
      return Precondition(StrCat(
          binary, " is missing: install ", kEcrCredentialProvider,
          " (k8s.io/cloud-provider-aws cmd/ecr-credential-provider, at the "
          "cloud-controller-manager's version) there, or set worker.credentialProviderBinDir to "
          "where it is; an external kubelet pulls images from ECR only through it. Nothing was "
          "written"));
    }
    if (snapshot_.credential_provider_binary->is_directory ||
        (snapshot_.credential_provider_binary->mode & 0111) == 0) {
      return Precondition(StrCat(binary, " is not an executable file (mode ",
                                 absl::StrFormat("%04o", snapshot_.credential_provider_binary->mode),
                                 "): the kubelet could not run it. Nothing was written"));
    }
    if (worker.node_name.empty()) {
      return Precondition(
          "the Node's name is not known (worker.nodeName, or the instance metadata's "
          "local-hostname): an external kubelet no longer takes it from the in-tree provider, "
          "and one that registers under another name makes a new Node while the old one goes "
          "NotReady. Nothing was written");
    }
    absl::StatusOr<KubeletCommandLine> flags = ExpectedKubeletFlags(snapshot_);
    if (!flags.ok()) return Precondition(std::string(flags.status().message()));
    const std::string& config = worker.credential_provider_config;
    if (const KubeletFlag* given = flags->Effective("image-credential-provider-config");
        given != nullptr && given->value != std::optional<std::string>(config)) {
      return Precondition(StrCat(
          DescribeFlag(*given), ": the kubelet already has a credential provider configuration. "
          "handoff does not merge into it: add the ", kEcrCredentialProvider, " provider there and "
          "set worker.credentialProviderConfig to ", given->value.value_or("")));
    }
    if (const KubeletFlag* given = flags->Effective("image-credential-provider-bin-dir");
        given != nullptr &&
        given->value != std::optional<std::string>(worker.credential_provider_bin_dir)) {
      return Precondition(StrCat(DescribeFlag(*given), ": the kubelet looks for credential "
                                 "providers there; set worker.credentialProviderBinDir to ",
                                 given->value.value_or("")));
    }
    std::vector<std::string> created;
    if (snapshot_.credential_provider_config) {
      absl::Status usable = CheckEcrCredentialProviderConfig(*snapshot_.credential_provider_config,
                                                             config);
      if (!usable.ok()) {
        return Precondition(StrCat(usable.message(), ". handoff writes ", config,
                                   " only where there is none: fix it, remove it, or set "
                                   "worker.credentialProviderConfig to another path"));
      }
    } else if (!snapshot_.credential_provider_config_dir_exists) {
      return Precondition(StrCat(ParentPath(config), " does not exist, so the credential "
                                 "provider's configuration cannot be written there: create the "
                                 "directory, or set worker.credentialProviderConfig to a file in "
                                 "one that exists. Nothing was written"));
    } else {
      created.push_back(config);
    }
    KubeletEdits edits = ControlPlaneKubeletEdits();
    edits.emplace_back("image-credential-provider-config", config);
    edits.emplace_back("image-credential-provider-bin-dir", worker.credential_provider_bin_dir);
    const KubeletFlag* override = flags->Effective("hostname-override");
    std::string name = override ? override->value.value_or("") : snapshot_.host_name;
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (name != worker.node_name) {
      edits.emplace_back("hostname-override", worker.node_name);
      plan_.notes.push_back(StrCat(
          "the external kubelet would register as ", name.empty() ? "<unknown>" : name,
          "; --hostname-override=", worker.node_name, " keeps its Node"));
    }
    absl::StatusOr<std::vector<MigrationRecord::KubeletFile>> kubelet = PlanKubeletExternal(edits);
    if (!kubelet.ok()) return kubelet.status();
    WriteRecord(view_, std::nullopt, *kubelet, created);
    if (!created.empty()) Write(config, EcrCredentialProviderConfig(), "");
    WriteKubelet(*kubelet);
    return absl::OkStatus();
  }

  // external → in-tree on a worker: the kubelet's files from the record, then what the move
  // created (the credential provider's configuration, while it is as handoff wrote it), then
  // the record.
  absl::Status WorkerToInTree() {
    const std::string record_path = MigrationRecordPath(settings_.paths);
    if (!snapshot_.migration_record) {
      return Precondition(StrCat(
          "there is no migration record at ", record_path,
          ", so handoff does not know which flags this kubelet had before it went external, and "
          "it never guesses them. Give the kubelet --cloud-provider=aws (and its --cloud-config) "
          "by hand"));
    }
    absl::StatusOr<MigrationRecord> record =
        MigrationRecord::Parse(*snapshot_.migration_record, record_path);
    if (!record.ok()) return record.status();
    absl::Status restored = RestoreKubelet(*record, WorkerKubeletFlags());
    if (!restored.ok()) return restored;
    for (const std::string& path : record->created_files()) {
      const std::optional<std::string> now = Current(path);
      if (!now) continue;
      if (*now == EcrCredentialProviderConfig()) {
        Write(path, std::nullopt, "");
      } else {
        plan_.notes.push_back(StrCat(path, " changed since handoff wrote it, so it is left in "
                                           "place (the in-tree kubelet does not read it)"));
      }
    }
    Write(record_path, std::nullopt, "");
    return absl::OkStatus();
  }

  // Every plan is checked by classifying the node it would leave behind.
  absl::StatusOr<Plan> CheckOutcome() {
    Classification after = Classify(SnapshotAfter(snapshot_, plan_));
    if (after.state != plan_.to) {
      return absl::InternalError(
          StrCat("the planned files would leave the node ", NodeStateName(after.state), ", not ",
                 NodeStateName(plan_.to), "; nothing will be written. Reasons:\n  - ",
                 StrJoin(after.problems, "\n  - ")));
    }
    return plan_;
  }

  const NodeSnapshot& snapshot_;
  const Classification& current_;
  const Settings& settings_;
  const NodeView& view_;
  Plan plan_;
};

}  // namespace

absl::StatusOr<Plan> PlanTransition(const NodeSnapshot& snapshot, const Classification& current,
                                    NodeState target, const Settings& settings) {
  if (target == NodeState::kInconsistent) {
    return absl::InvalidArgumentError("inconsistent is not a state a node can be moved to");
  }
  return Planner(snapshot, current, settings).Run(target);
}

}  // namespace handoff
