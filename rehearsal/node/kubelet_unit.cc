#include "rehearsal/node/kubelet_unit.h"

#include <utility>

#include "common/base/strings.h"
#include "common/systemd/unit_file.h"

namespace handoff::sandbox::node {

std::map<std::string, std::string> KubeletPackageFiles(const std::string& kubelet) {
  return {
      {kKubeletUnitFile,
       StrCat("[Unit]\n"
              "Description=kubelet: The Kubernetes Node Agent\n"
              "Documentation=https://kubernetes.io/docs/\n"
              "Wants=network-online.target\n"
              "After=network-online.target\n"
              "\n"
              "[Service]\n"
              "ExecStart=",
              kubelet,
              "\n"
              "Restart=always\n"
              "StartLimitInterval=0\n"
              "RestartSec=10\n"
              "\n"
              "[Install]\n"
              "WantedBy=multi-user.target\n")},
      {kKubeadmDropInFile,
       StrCat("# Note: This dropin only works with kubeadm and kubelet v1.11+\n"
              "[Service]\n"
              "Environment=\"KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/"
              "bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf\"\n"
              "Environment=\"KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml\"\n"
              "# This is a file that \"kubeadm init\" and \"kubeadm join\" generates at runtime, "
              "populating the KUBELET_KUBEADM_ARGS variable dynamically\n"
              "EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\n"
              "# This is a file that the user can use for overrides of the kubelet args as a last "
              "resort.\n"
              "EnvironmentFile=-/etc/default/kubelet\n"
              "ExecStart=\n"
              "ExecStart=",
              kubelet,
              " $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS "
              "$KUBELET_EXTRA_ARGS\n")},
  };
}

absl::StatusOr<std::vector<std::string>> KubeletArgv(const FileSystem& fs,
                                                     const std::string& host_name) {
  absl::StatusOr<std::vector<systemd::UnitFileText>> files =
      systemd::FindUnitFiles(fs, "kubelet.service");
  if (!files.ok()) return files.status();
  absl::StatusOr<systemd::ServiceCommand> command =
      systemd::MergeServiceCommand(*files, systemd::Specifiers{host_name, "kubelet.service"});
  if (!command.ok()) return command.status();
  absl::StatusOr<std::map<std::string, std::string>> texts =
      systemd::ReadEnvironmentFiles(fs, *command);
  if (!texts.ok()) return texts.status();
  absl::StatusOr<systemd::ServiceEnvironment> environment =
      systemd::BuildEnvironment(*command, *texts);
  if (!environment.ok()) return environment.status();
  absl::StatusOr<systemd::ExpandedCommand> expanded =
      systemd::ExpandCommand(*command, *environment);
  if (!expanded.ok()) return expanded.status();
  std::vector<std::string> argv;
  for (systemd::CommandWord& word : expanded->argv) argv.push_back(std::move(word.text));
  return argv;
}

}  // namespace handoff::sandbox::node
