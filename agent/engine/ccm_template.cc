#include "agent/engine/ccm_template.h"

#include "common/base/strings.h"

namespace handoff {
namespace {

// kubeadm's layout for a control-plane static pod (cmd/kubeadm/app/phases/controlplane), keys
// sorted as kubeadm writes them. Flags, image and volumes are filled in below.
constexpr char kTemplate[] = R"(apiVersion: v1
kind: Pod
metadata:
  creationTimestamp: null
  labels:
    component: cloud-controller-manager
    tier: control-plane
  name: cloud-controller-manager
  namespace: kube-system
spec:
  containers:
  - args: []
    image: ""
    imagePullPolicy: IfNotPresent
    livenessProbe:
      failureThreshold: 8
      httpGet:
        host: 127.0.0.1
        path: /healthz
        port: 10258
        scheme: HTTPS
      initialDelaySeconds: 10
      periodSeconds: 10
      timeoutSeconds: 15
    name: cloud-controller-manager
    resources:
      requests:
        cpu: 200m
    startupProbe:
      failureThreshold: 24
      httpGet:
        host: 127.0.0.1
        path: /healthz
        port: 10258
        scheme: HTTPS
      initialDelaySeconds: 10
      periodSeconds: 10
      timeoutSeconds: 15
  hostNetwork: true
  priorityClassName: system-node-critical
  securityContext:
    seccompProfile:
      type: RuntimeDefault
status: {}
)";

// Mounts of the kube-controller-manager that the cloud-controller-manager has no use for: the
// flexvolume plugin dir (kubeadm's default, or wherever --flex-volume-plugin-dir points) and the
// kube-controller-manager's own Leader Migration file.
bool SkipMount(const ComponentView& kcm, const HostPathMount& mount) {
  const std::string flex_dir = kcm.Flag("flex-volume-plugin-dir")
                                   .value_or("/usr/libexec/kubernetes/kubelet-plugins/volume/exec");
  const std::optional<std::string> config = kcm.Flag("leader-migration-config");
  return mount.mount_path == flex_dir || mount.name == kLeaderMigrationVolume ||
         (config && mount.mount_path == *config);
}

// The kube-controller-manager's env entries to copy, as name/value maps; `notes` gets the
// skipped ones.
YAML::Node CopiedEnv(const ComponentView& kcm, std::vector<std::string>* notes) {
  YAML::Node copied(YAML::NodeType::Sequence);
  const YAML::Node env = kcm.pod.node()["spec"]["containers"][kcm.container]["env"];
  if (!env.IsDefined() || !env.IsSequence()) return copied;
  for (const YAML::Node& item : env) {
    if (!item.IsMap() || !item["name"].IsDefined() || !item["name"].IsScalar()) continue;
    const std::string name = item["name"].Scalar();
    if (item["valueFrom"].IsDefined()) {
      if (notes != nullptr) {
        notes->push_back(StrCat("the kube-controller-manager's env ", name, " (", kcm.path,
                                ") comes from valueFrom and is not copied to the "
                                "cloud-controller-manager; add it there yourself if it needs it"));
      }
      continue;
    }
    YAML::Node entry(YAML::NodeType::Map);
    entry["name"] = name;
    if (item["value"].IsDefined()) entry["value"] = YAML::Clone(item["value"]);
    copied.push_back(entry);
  }
  return copied;
}

}  // namespace

absl::StatusOr<StaticPod> BuildCloudControllerManager(const ComponentView& kcm,
                                                      const Settings& settings,
                                                      const std::string& manifest_path,
                                                      bool leader_migration,
                                                      std::vector<std::string>* notes) {
  if (settings.ccm.image.empty()) {
    return absl::InvalidArgumentError(
        "the cloud-controller-manager image is not set: pass --ccm-image (e.g. "
        "registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.1) or set "
        "cloudControllerManager.image in the settings file");
  }
  const YAML::Node env = CopiedEnv(kcm, notes);
  std::string text = kTemplate;
  if (env.size() > 0) {
    // Placed in the template rather than added to the parsed pod, so that the key comes where
    // kubeadm writes it (keys sorted: args, command, env, image); a pod without env keeps its
    // exact bytes.
    constexpr std::string_view kArgsLine = "  - args: []\n";
    text.insert(text.find(kArgsLine) + kArgsLine.size(), "    env: []\n");
  }
  absl::StatusOr<StaticPod> parsed = StaticPod::Parse(text, manifest_path);
  if (!parsed.ok()) return parsed.status();
  StaticPod pod = *std::move(parsed);
  const size_t c = 0;
  pod.SetImage(c, settings.ccm.image);
  if (env.size() > 0) pod.node()["spec"]["containers"][c]["env"] = env;

  const std::string kubeconfig =
      !settings.ccm.kubeconfig.empty()
          ? settings.ccm.kubeconfig
          : kcm.Flag("kubeconfig").value_or("/etc/kubernetes/controller-manager.conf");
  const std::string bind_address = kcm.Flag("bind-address").value_or("127.0.0.1");
  pod.SetFlag(c, "authentication-kubeconfig", kubeconfig);
  pod.SetFlag(c, "authorization-kubeconfig", kubeconfig);
  pod.SetFlag(c, "bind-address", bind_address);
  if (std::optional<std::string> cloud_config = kcm.Flag("cloud-config")) {
    pod.SetFlag(c, "cloud-config", *cloud_config);
  }
  pod.SetFlag(c, "cloud-provider", settings.ccm.cloud_provider);
  if (settings.ccm.configure_cloud_routes) {
    pod.SetFlag(c, "cluster-cidr", settings.ccm.cluster_cidr);
    pod.SetFlag(c, "configure-cloud-routes", "true");
  } else {
    // Routes default to on in the AWS CCM and then need --cluster-cidr.
    pod.SetFlag(c, "configure-cloud-routes", "false");
  }
  if (leader_migration) pod.SetFlag(c, "enable-leader-migration", std::nullopt);
  pod.SetFlag(c, "kubeconfig", kubeconfig);
  pod.SetFlag(c, "leader-elect", "true");
  if (leader_migration) {
    pod.SetFlag(c, "leader-migration-config", settings.paths.leader_migration_config);
  }
  pod.SetFlag(c, "secure-port", std::to_string(kCloudControllerManagerPort));
  pod.SetFlag(c, "use-service-account-credentials", "true");
  pod.SetFlag(c, "v", "2");
  for (const auto& [flag, value] : settings.ccm.extra_args) {
    pod.SetFlag(c, flag, value.empty() ? std::nullopt : std::optional<std::string>(value));
  }
  // Probe where the manager listens: kubeadm's controller-manager binds to loopback.
  if (bind_address != "0.0.0.0" && bind_address != "::") {
    pod.node()["spec"]["containers"][0]["livenessProbe"]["httpGet"]["host"] = bind_address;
    pod.node()["spec"]["containers"][0]["startupProbe"]["httpGet"]["host"] = bind_address;
  }

  for (const HostPathMount& mount : kcm.pod.HostPathMounts(kcm.container)) {
    if (SkipMount(kcm, mount)) continue;
    absl::Status added = pod.EnsureHostPathMount(c, mount);
    if (!added.ok()) return added;
  }
  if (!pod.MountCovering(c, kubeconfig)) {
    absl::Status added = pod.EnsureHostPathMount(
        c, HostPathMount{"kubeconfig", kubeconfig, "FileOrCreate", kubeconfig, true});
    if (!added.ok()) return added;
  }
  if (leader_migration) {
    const std::string& path = settings.paths.leader_migration_config;
    absl::Status added = pod.EnsureHostPathMount(
        c, HostPathMount{std::string(kLeaderMigrationVolume), path, "File", path, true});
    if (!added.ok()) return added;
  }
  return pod;
}

}  // namespace handoff
