// The kubelet of a kubeadm sandbox node as the kubeadm packages install it and systemd starts
// it: the unit file and kubeadm's drop-in, written into the node's /etc as the kubeadm docs'
// install without a package manager puts them, and the command line systemd would start from
// them (common/systemd, the reader the agent uses, checked against the real systemd's).
#ifndef HANDOFF_REHEARSAL_NODE_KUBELET_UNIT_H_
#define HANDOFF_REHEARSAL_NODE_KUBELET_UNIT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/fs/file_system.h"

namespace handoff::sandbox::node {

inline constexpr char kKubeletUnitFile[] = "/etc/systemd/system/kubelet.service";
inline constexpr char kKubeadmDropInFile[] =
    "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf";

// The two files, by path, with `kubelet` (absolute) as the program: kubernetes/release's
// kubelet.service and 10-kubeadm.conf templates (deb: EnvironmentFile=-/etc/default/kubelet).
std::map<std::string, std::string> KubeletPackageFiles(const std::string& kubelet);

// The kubelet's argv (argv[0] the program) as systemd would start it on `fs` now: its unit,
// drop-ins and environment files read as they are, %H standing for `host_name`. Errors name
// the file that does not parse or is missing. systemd reads unit files again only on
// `systemctl daemon-reload` and environment files at every start; this reads both at every
// start, as if every change were followed by a daemon-reload.
absl::StatusOr<std::vector<std::string>> KubeletArgv(const FileSystem& fs,
                                                     const std::string& host_name);

}  // namespace handoff::sandbox::node

#endif  // HANDOFF_REHEARSAL_NODE_KUBELET_UNIT_H_
