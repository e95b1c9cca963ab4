// Static pod manifests: whatever the manifest directory holds is parsed and classified; a pod
// handoff accepts must survive Emit → Parse unchanged in meaning (the kubelet would otherwise run
// something else after a rewrite), Emit must be a fixed point, and a flag edit must read back.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "agent/engine/classify.h"
#include "agent/engine/node_snapshot.h"
#include "agent/manifest/static_pod.h"
#include "tests/fuzz/fuzz_check.h"

namespace handoff {
namespace {

constexpr size_t kMaxContainers = 8;

// The other manifests of a kubeadm node, so that classification gets past "no such component"
// whichever component the input claims to be.
std::vector<ManifestFile> KubeadmManifests() {
  std::vector<ManifestFile> files;
  for (const char* component : {"kube-apiserver", "kube-controller-manager", "kube-scheduler"}) {
    const std::string path =
        std::string(HANDOFF_TESTDATA_DIR) + "/nodes/kubeadm/etc/kubernetes/manifests/" + component +
        ".yaml";
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    ManifestFile file;
    file.path = std::string("/etc/kubernetes/manifests/") + component + ".yaml";
    file.content = text.str();
    absl::StatusOr<StaticPod> pod = StaticPod::Parse(file.content, file.path);
    if (pod.ok()) file.pod = *std::move(pod);
    files.push_back(std::move(file));
  }
  return files;
}

std::string Describe(const std::string& what, const std::string& emitted) {
  return what + "; emitted:\n" + emitted;
}

// Returns the pod read back from its emitted text.
StaticPod CheckRoundTrip(const StaticPod& pod) {
  const std::string emitted = pod.Emit();
  absl::StatusOr<StaticPod> reparsed = StaticPod::Parse(emitted, "emitted.yaml");
  FUZZ_CHECK(reparsed.ok(), Describe(reparsed.status().ToString(), emitted));
  FUZZ_CHECK(pod.SemanticallyEquals(*reparsed), Describe("the emitted pod means something else",
                                                         emitted));
  const std::string again = reparsed->Emit();
  FUZZ_CHECK(again == emitted, Describe("Emit is not a fixed point; second emit:\n" + again,
                                        emitted));
  FUZZ_CHECK(reparsed->Validate().ok() == pod.Validate().ok(),
             Describe("validation differs after the round trip", emitted));
  return *std::move(reparsed);
}

// The accessors handoff calls on any pod it finds; none may throw or crash.
void ReadEverything(const StaticPod& pod) {
  (void)pod.PodName();
  (void)pod.Namespace();
  const std::vector<std::string> names = pod.ContainerNames();
  for (size_t i = 0; i < names.size() && i < kMaxContainers; ++i) {
    (void)pod.Argv(i);
    (void)pod.GetFlag(i, "cloud-provider");
    (void)pod.CountFlag(i, "leader-migration-config");
    (void)pod.Image(i);
    (void)pod.HostPathMounts(i);
    (void)pod.MountCovering(i, "/etc/kubernetes/leader-migration.yaml");
    (void)pod.FindHostPathMount(i, "k8s-certs");
    (void)pod.FindContainer(names[i]);
  }
}

// The edits the planner makes, on a pod that validates (the planner edits nothing else).
void EditAndReread(const StaticPod& pod) {
  if (!pod.Validate().ok() || pod.ContainerNames().empty()) return;
  StaticPod edited = pod;
  edited.SetFlag(0, "cloud-provider", std::string("external"));
  edited.SetFlag(0, "enable-leader-migration", std::nullopt);
  const bool removed = edited.RemoveFlag(0, "configure-cloud-routes");
  (void)removed;
  edited.SetImage(0, "registry.k8s.io/kube-controller-manager:v1.27.3");
  HostPathMount mount{"leader-migration", "/etc/kubernetes/leader-migration.yaml", "File",
                      "/etc/kubernetes/leader-migration.yaml", true};
  const bool mounted = edited.EnsureHostPathMount(0, mount).ok();
  const StaticPod reread = CheckRoundTrip(edited);
  FUZZ_CHECK(reread.GetFlag(0, "cloud-provider") == std::optional<std::string>("external"),
             edited.Emit());
  FUZZ_CHECK(reread.GetFlag(0, "enable-leader-migration") == std::optional<std::string>("true"),
             edited.Emit());
  FUZZ_CHECK(reread.CountFlag(0, "configure-cloud-routes") == 0, edited.Emit());
  FUZZ_CHECK(reread.Image(0) == "registry.k8s.io/kube-controller-manager:v1.27.3",
             edited.Emit());
  if (mounted) {
    FUZZ_CHECK(reread.FindHostPathMount(0, "leader-migration").has_value(), edited.Emit());
  }
}

// The kubeadm node without the manifest at `path`, one snapshot per path, built once: copying
// three parsed pods into a fresh snapshot for every input took a quarter of the time.
NodeSnapshot& KubeadmNodeWithout(const std::string& path) {
  static auto* const snapshots = new std::map<std::string, NodeSnapshot>();
  auto [it, inserted] = snapshots->try_emplace(path);
  if (inserted) {
    static const std::vector<ManifestFile>* const kubeadm =
        new std::vector<ManifestFile>(KubeadmManifests());
    for (const ManifestFile& other : *kubeadm) {
      if (other.path != path) it->second.manifests.push_back(other);
    }
  }
  return it->second;
}

void ClassifyAsNode(std::string_view text, const absl::StatusOr<StaticPod>& pod) {
  ManifestFile file;
  // Named after the pod when it claims to be a component, so that it replaces that component.
  const std::string name = pod.ok() ? pod->PodName() : "";
  const bool component = name == kKubeApiserver || name == kKubeControllerManager ||
                         name == kKubeScheduler || name == kCloudControllerManager;
  file.path = "/etc/kubernetes/manifests/" + (component ? name : std::string("fuzz")) + ".yaml";
  file.content = std::string(text);
  if (pod.ok()) {
    file.pod = *pod;
  } else {
    file.parse_error = std::string(pod.status().message());
  }
  // The input's file goes last and is taken out again, so that every input sees the same node.
  NodeSnapshot& snapshot = KubeadmNodeWithout(file.path);
  snapshot.manifests.push_back(std::move(file));
  const Classification classification = Classify(snapshot);
  snapshot.manifests.pop_back();
  FUZZ_CHECK(classification.state == NodeState::kInconsistent ||
                 classification.problems.empty(),
             "a consistent node with problems");
}

void FuzzOne(std::string_view text) {
  const absl::StatusOr<StaticPod> pod = StaticPod::Parse(text, "/etc/kubernetes/manifests/x.yaml");
  ClassifyAsNode(text, pod);
  if (!pod.ok()) return;
  ReadEverything(*pod);
  (void)pod->Validate();
  CheckRoundTrip(*pod);
  EditAndReread(*pod);
}

}  // namespace
}  // namespace handoff

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  handoff::FuzzOne(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
