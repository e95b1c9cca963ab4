// What the sandbox's simulated kubelet makes of its manifest directory: the pods to run, each as
// one process, with the argv, environment and content hash of its first container. Pure: no
// files, no clock. Thread-compatible.
//
// The rules model the kubelet's file source (kubernetes/kubernetes pkg/kubelet/config/file.go):
// names starting with "." are skipped, every other file is a pod manifest whatever its
// extension, a file that does not decode into a valid pod yields no pod, and of two files naming
// the same pod the first in name order wins.
#ifndef HANDOFF_REHEARSAL_KUBELET_POD_SPEC_H_
#define HANDOFF_REHEARSAL_KUBELET_POD_SPEC_H_

#include <map>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "agent/manifest/static_pod.h"

namespace handoff::sandbox {

// One regular file of the manifest directory.
struct ManifestFile {
  std::string name;  // the file name, without the directory
  std::string content;
};

// A pod the kubelet should run: its first container, as one process.
struct PodSpec {
  std::string name;  // metadata.name
  std::string file;  // the manifest's host path ("/etc/kubernetes/manifests/kcm.yaml")
  // Changes whenever the kubelet would restart the pod: the decoded pod (key order and
  // formatting ignored), the node name and the file path, like kubernetes.io/config.hash.
  std::string hash;
  // The container's command followed by its args; without a command, the image's entrypoint
  // followed by the args. argv[0] is what the process shows as its name.
  std::vector<std::string> argv;
  // The `component` of its run records: basename(argv[0]), "aws-cloud-controller-manager" read
  // as "cloud-controller-manager" (the stand-in's own naming).
  std::string component;
  std::string image;
  // The image's tag when it is a Kubernetes version ("v1.27.1"), else "".
  std::string version;
  // The container's hostPath mounts, host paths as the manifest names them.
  std::vector<HostPathMount> mounts;
  // The container's env entries with a value (name, value), in manifest order; entries with
  // valueFrom are left out (a static pod cannot read the API: the kubelet refuses them too).
  std::vector<std::pair<std::string, std::string>> env;
};

struct DesiredPods {
  std::map<std::string, PodSpec> pods;  // by name
  // One line per file that yields no pod, and why (for the kubelet's log): "no pod from
  // <path>: <why>".
  std::vector<std::string> problems;
};

// The pods `files` (in any order) describe, for node `node_name`; `manifest_dir` is the
// directory's host path. Dotfiles are skipped silently.
DesiredPods PodsFromManifests(std::vector<ManifestFile> files, std::string_view manifest_dir,
                              std::string_view node_name);

// The pod `pod` describes, or an error naming the file: it does not decode, is not a valid pod,
// or its first container has no command and an image whose entrypoint is unknown here.
absl::StatusOr<PodSpec> PodFromManifest(const StaticPod& pod, std::string_view path,
                                        std::string_view node_name);

// The entrypoint of `image` when a container gives no command: the AWS cloud-controller-manager
// image runs /bin/aws-cloud-controller-manager (kubernetes/cloud-provider-aws Dockerfile); any
// other image is unknown (NotFound).
absl::StatusOr<std::string> ImageEntrypoint(std::string_view image);

// The `component` of a process with this argv[0] (see PodSpec::component).
std::string ComponentOf(std::string_view argv0);

// What a pod's process is told through its environment (the stand-in reads it).
struct PodContext {
  std::string node;     // HANDOFF_SANDBOX_NODE
  std::string records;  // HANDOFF_SANDBOX_RECORDS ("" = unset)
  std::string root;     // HANDOFF_SANDBOX_ROOT: the node's root directory
};

// "NAME=value" items: HANDOFF_SANDBOX_NODE, HANDOFF_SANDBOX_ROOT, HANDOFF_SANDBOX_RECORDS (when
// set), HANDOFF_SANDBOX_MOUNTS ("mountPath=<root><hostPath>" lines, one per hostPath mount),
// HANDOFF_SANDBOX_VERSION (when the image's tag is a version), and PATH from `path`.
std::vector<std::string> PodEnvironment(const PodSpec& pod, const PodContext& context,
                                        std::string_view path);

// "NAME=value" items for a real binary run as the container (pod_exec.h): PATH from `path`,
// HOSTNAME=`node` and HOME=/root (what containerd sets for a root container), TZ=UTC (as the
// images have it), then the container's env, whose entries replace earlier ones of the same
// name (each name once: Go reads the first).
std::vector<std::string> ContainerEnvironment(const PodSpec& pod, std::string_view node,
                                              std::string_view path);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_KUBELET_POD_SPEC_H_
