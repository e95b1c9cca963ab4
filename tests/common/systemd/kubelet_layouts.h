// The kubelet's unit files as the kubeadm packages install them, and the places operators put
// their own flags: the table the unit tests and the check against the real systemd share.
#ifndef HANDOFF_TESTS_COMMON_SYSTEMD_KUBELET_LAYOUTS_H_
#define HANDOFF_TESTS_COMMON_SYSTEMD_KUBELET_LAYOUTS_H_

#include <map>
#include <string>
#include <vector>

namespace handoff::systemd::testing {

// kubernetes/release cmd/krel/templates/latest/kubelet/kubelet.service.
inline constexpr char kKubeletService[] = R"([Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
)";

// kubernetes/release cmd/krel/templates/latest/kubeadm/10-kubeadm.conf, reading `defaults`
// (/etc/default/kubelet in the deb, /etc/sysconfig/kubelet in the rpm).
inline std::string KubeadmDropIn(const std::string& defaults) {
  return R"(# Note: This dropin only works with kubeadm and kubelet v1.11+
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
# This is a file that "kubeadm init" and "kubeadm join" generates at runtime, populating the KUBELET_KUBEADM_ARGS variable dynamically
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# This is a file that the user can use for overrides of the kubelet args as a last resort. Preferably, the user should use
# the .NodeRegistration.KubeletExtraArgs object in the configuration files instead. KUBELET_EXTRA_ARGS should be sourced from this file.
EnvironmentFile=-)" + defaults + R"(
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
)";
}

inline constexpr char kKubeadmFlags[] =
    "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///var/run/containerd/"
    "containerd.sock --pod-infra-container-image=registry.k8s.io/pause:3.9 "
    "--cloud-provider=aws\"\n";

struct KubeletLayout {
  std::string name;
  std::map<std::string, std::string> files;  // path → text
  // What the kubelet is started with: every word after the program.
  std::vector<std::string> expected_args;
  std::string expected_fragment;
  std::vector<std::string> expected_drop_ins;
};

inline const std::vector<std::string> kKubeadmArgs = {
    "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
    "--kubeconfig=/etc/kubernetes/kubelet.conf",
    "--config=/var/lib/kubelet/config.yaml",
    "--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock",
    "--pod-infra-container-image=registry.k8s.io/pause:3.9",
    "--cloud-provider=aws",
};

inline std::vector<std::string> Plus(std::vector<std::string> args,
                                     const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

inline std::vector<KubeletLayout> KubeletLayouts() {
  return {
      {"deb from apt.kubernetes.io (the drop-in in /etc)",
       {{"/lib/systemd/system/kubelet.service", kKubeletService},
        {"/etc/systemd/system/kubelet.service.d/10-kubeadm.conf",
         KubeadmDropIn("/etc/default/kubelet")},
        {"/var/lib/kubelet/kubeadm-flags.env", kKubeadmFlags},
        {"/etc/default/kubelet", "KUBELET_EXTRA_ARGS=\n"}},
       kKubeadmArgs,
       "/lib/systemd/system/kubelet.service",
       {"/etc/systemd/system/kubelet.service.d/10-kubeadm.conf"}},
      {"deb from pkgs.k8s.io, the flag in /etc/default/kubelet",
       {{"/usr/lib/systemd/system/kubelet.service", kKubeletService},
        {"/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
         KubeadmDropIn("/etc/default/kubelet")},
        {"/var/lib/kubelet/kubeadm-flags.env",
         "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///var/run/containerd/"
         "containerd.sock\"\n"},
        {"/etc/default/kubelet", "KUBELET_EXTRA_ARGS=--cloud-provider=aws --node-labels='a=b'\n"}},
       {"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
        "--kubeconfig=/etc/kubernetes/kubelet.conf", "--config=/var/lib/kubelet/config.yaml",
        "--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock",
        "--cloud-provider=aws", "--node-labels=a=b"},
       "/usr/lib/systemd/system/kubelet.service",
       {"/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf"}},
      {"rpm, /etc/sysconfig/kubelet overriding kubeadm-flags.env",
       {{"/usr/lib/systemd/system/kubelet.service", kKubeletService},
        {"/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
         KubeadmDropIn("/etc/sysconfig/kubelet")},
        {"/var/lib/kubelet/kubeadm-flags.env", kKubeadmFlags},
        {"/etc/sysconfig/kubelet", "KUBELET_EXTRA_ARGS=\"--cloud-provider=external\"\n"}},
       Plus(kKubeadmArgs, {"--cloud-provider=external"}),
       "/usr/lib/systemd/system/kubelet.service",
       {"/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf"}},
      {"an operator's drop-in: Environment= loses to the environment files",
       {{"/usr/lib/systemd/system/kubelet.service", kKubeletService},
        {"/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
         KubeadmDropIn("/etc/default/kubelet")},
        {"/etc/systemd/system/kubelet.service.d/20-cloud.conf",
         "[Service]\nEnvironment=\"KUBELET_EXTRA_ARGS=--cloud-provider=external\"\n"},
        {"/var/lib/kubelet/kubeadm-flags.env", kKubeadmFlags},
        {"/etc/default/kubelet", "KUBELET_EXTRA_ARGS=--v=2\n"}},
       Plus(kKubeadmArgs, {"--v=2"}),
       "/usr/lib/systemd/system/kubelet.service",
       {"/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
        "/etc/systemd/system/kubelet.service.d/20-cloud.conf"}},
      {"an operator's drop-in that replaces ExecStart, with the flag written in it",
       {{"/usr/lib/systemd/system/kubelet.service", kKubeletService},
        {"/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
         KubeadmDropIn("/etc/default/kubelet")},
        {"/etc/systemd/system/kubelet.service.d/90-aws.conf",
         "[Service]\nExecStart=\nExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS \\\n"
         "    $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS --cloud-provider=aws "
         "\"--node-labels=zone=a b\"\n"},
        {"/var/lib/kubelet/kubeadm-flags.env", kKubeadmFlags}},
       Plus(kKubeadmArgs, {"--cloud-provider=aws", "--node-labels=zone=a b"}),
       "/usr/lib/systemd/system/kubelet.service",
       {"/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
        "/etc/systemd/system/kubelet.service.d/90-aws.conf"}},
      {"the same drop-in name in /etc masks the package's",
       {{"/usr/lib/systemd/system/kubelet.service", kKubeletService},
        {"/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
         KubeadmDropIn("/etc/default/kubelet")},
        {"/etc/systemd/system/kubelet.service.d/10-kubeadm.conf",
         "[Service]\nEnvironmentFile=/etc/kubelet.env\nExecStart=\n"
         "ExecStart=/usr/bin/kubelet ${FLAGS}\n"},
        {"/etc/kubelet.env", "FLAGS=--cloud-provider=aws --v=4\n"}},
       {"--cloud-provider=aws --v=4"},
       "/usr/lib/systemd/system/kubelet.service",
       {"/etc/systemd/system/kubelet.service.d/10-kubeadm.conf"}},
  };
}

}  // namespace handoff::systemd::testing

#endif  // HANDOFF_TESTS_COMMON_SYSTEMD_KUBELET_LAYOUTS_H_
