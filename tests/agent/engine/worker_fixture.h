// A kubeadm worker for tests: the kubelet's unit as the pkgs.k8s.io deb installs it, joined with
// the in-tree provider (kubeletExtraArgs in kubeadm-flags.env), ecr-credential-provider
// installed. Its host name is the short one, as on EC2 with a custom AMI; its Node is named after
// the private DNS name, as the in-tree provider names it.
#ifndef HANDOFF_TESTS_AGENT_ENGINE_WORKER_FIXTURE_H_
#define HANDOFF_TESTS_AGENT_ENGINE_WORKER_FIXTURE_H_

#include <string>
#include <vector>

#include "agent/engine/settings.h"
#include "common/base/strings.h"
#include "gtest/gtest.h"
#include "tests/agent/engine/node_fixture.h"
#include "tests/support/memory_file_system.h"

namespace handoff::testing {

inline constexpr char kWorkerNodeName[] = "ip-10-0-1-20.ec2.internal";
inline constexpr char kWorkerFlagsFile[] = "/var/lib/kubelet/kubeadm-flags.env";
inline constexpr char kWorkerDefaultsFile[] = "/etc/default/kubelet";
inline constexpr char kWorkerBinDir[] = "/usr/libexec/kubelet-image-credential-provider-plugins";
inline constexpr char kWorkerCredentialConfig[] =
    "/etc/kubernetes/image-credential-provider-config.yaml";

inline Settings WorkerSettingsFor(const std::string& node_name = kWorkerNodeName) {
  Settings settings;
  settings.role = NodeRole::kWorker;
  settings.worker.node_name = node_name;
  return settings;
}

// `defaults` is /etc/default/kubelet.
inline MemoryFileSystem WorkerNode(const std::string& defaults = "KUBELET_EXTRA_ARGS=\n") {
  MemoryFileSystem fs;
  AddDebKubeletUnit(fs);
  fs.SetFile(kWorkerFlagsFile,
             "KUBELET_KUBEADM_ARGS=\"--cloud-provider=aws --cloud-config=/etc/kubernetes/cloud.conf "
             "--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock\"\n");
  fs.SetFile(kWorkerDefaultsFile, defaults);
  fs.SetFile("/etc/hostname", "ip-10-0-1-20\n");
  EXPECT_TRUE(fs.CreateDirectory("/etc/kubernetes", 0755).ok());  // kubeadm join makes it
  fs.SetFile(StrCat(kWorkerBinDir, "/ecr-credential-provider"), "\x7f" "ELF", 0755);
  return fs;
}

}  // namespace handoff::testing

#endif  // HANDOFF_TESTS_AGENT_ENGINE_WORKER_FIXTURE_H_
