// Which program a simulated node's static pod runs: the stand-in, or a real upstream binary
// from the components dir (tests/real/components.sh builds it) chosen by the pod's image. The
// one place that maps images to binaries. Pure: no files are looked at.
#ifndef HANDOFF_REHEARSAL_KUBELET_POD_BINARIES_H_
#define HANDOFF_REHEARSAL_KUBELET_POD_BINARIES_H_

#include <string>
#include <string_view>

namespace handoff::sandbox {

struct PodBinary {
  std::string path;   // the file executed
  bool real = false;  // an upstream binary: runs the way a container runtime runs it (pod_exec.h)
  // Something the sandbox's summary should say about this choice ("" when nothing): the image
  // asks for a release that is not built, and another one runs in its place.
  std::string note;
};

// With `real_bin_dir` empty, always the stand-in (the kubelet's behaviour without
// --real-bin-dir). Otherwise, by image (registry and tag suffixes such as "-rke2r1" ignored):
//   .../kube-controller-manager:v1.26.*                   → <dir>/kube-controller-manager
//   .../kube-controller-manager:v1.27.*                   → <dir>/kube-controller-manager, with a
//       note: no 1.27 kube-controller-manager is built, the N+1 external manager runs the 1.26
//       binary
//   .../provider-aws/cloud-controller-manager:v1.27.*     → <dir>/aws-cloud-controller-manager
//   anything else (kube-apiserver, kube-scheduler, other releases) → the stand-in.
PodBinary PodBinaryFor(std::string_view image, std::string_view standin,
                       std::string_view real_bin_dir);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_KUBELET_POD_BINARIES_H_
