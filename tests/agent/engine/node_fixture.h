// Test helpers: load a fixture node (a directory tree under tests/testdata/nodes) into an
// in-memory file system, and carry out a plan on it.
#ifndef HANDOFF_TESTS_AGENT_ENGINE_NODE_FIXTURE_H_
#define HANDOFF_TESTS_AGENT_ENGINE_NODE_FIXTURE_H_

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "agent/engine/classify.h"
#include "agent/engine/planner.h"
#include "gtest/gtest.h"
#include "common/base/strings.h"
#include "tests/common/systemd/kubelet_layouts.h"
#include "tests/support/memory_file_system.h"

namespace handoff::testing {

inline std::string TestdataPath(const std::string& relative) {
  return std::string(HANDOFF_TESTDATA_DIR) + "/" + relative;
}

inline std::string ReadTestdata(const std::string& relative) {
  std::ifstream in(TestdataPath(relative), std::ios::binary);
  EXPECT_TRUE(in) << "missing test data " << relative;
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// Every regular file under tests/testdata/nodes/<name>, at its host path.
inline MemoryFileSystem LoadNode(const std::string& name) {
  MemoryFileSystem fs;
  const std::filesystem::path root = TestdataPath("nodes/" + name);
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream content;
    content << in.rdbuf();
    fs.SetFile("/" + std::filesystem::relative(entry.path(), root).string(), content.str());
  }
  return fs;
}

// The kubelet's unit as the pkgs.k8s.io deb installs it (kubelet.service and kubeadm's drop-in,
// which reads kubeadm-flags.env, then /etc/default/kubelet), written into `fs`.
inline void AddDebKubeletUnit(MemoryFileSystem& fs) {
  const std::vector<systemd::testing::KubeletLayout> layouts = systemd::testing::KubeletLayouts();
  for (const auto& [path, text] : layouts[1].files) {
    if (StrContains(path, "/systemd/")) fs.SetFile(path, text);
  }
}

// Settings for the kubeadm fixture's move to v1.27.6 with the AWS cloud-controller-manager.
inline Settings KubeadmSettings() {
  Settings settings;
  settings.k8s_version = *KubeVersion::Parse("v1.27.6");
  settings.ccm.image = "registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.1";
  return settings;
}

inline void ApplyPlan(const Plan& plan, MemoryFileSystem& fs) {
  for (const FileChange& change : plan.changes) {
    if (change.after) {
      fs.SetFile(change.path, *change.after);
    } else {
      fs.DeleteFile(change.path);
    }
  }
}

inline Classification ClassifyNode(const MemoryFileSystem& fs, const NodePaths& paths) {
  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(fs, paths);
  EXPECT_TRUE(snapshot.ok()) << snapshot.status();
  return Classify(*snapshot);
}

inline absl::StatusOr<Plan> PlanNode(const MemoryFileSystem& fs, NodeState target,
                                     const Settings& settings) {
  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(fs, settings.paths);
  if (!snapshot.ok()) return snapshot.status();
  return PlanTransition(*snapshot, Classify(*snapshot), target, settings);
}

// The value the kubelet runs with for --`name` on `fs` (read as `settings` say), "<none>" when
// it is not given, "<bare>" for a flag without a value.
inline std::string EffectiveKubeletFlag(const MemoryFileSystem& fs, const Settings& settings,
                                        const std::string& name) {
  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(fs, settings);
  EXPECT_TRUE(snapshot.ok()) << snapshot.status();
  if (!snapshot.ok()) return "<unreadable>";
  absl::StatusOr<KubeletCommandLine> flags = ExpectedKubeletFlags(*snapshot);
  EXPECT_TRUE(flags.ok()) << flags.status();
  if (!flags.ok()) return "<unreadable>";
  const KubeletFlag* flag = flags->Effective(name);
  return flag == nullptr ? "<none>" : flag->value.value_or("<bare>");
}

}  // namespace handoff::testing

#endif  // HANDOFF_TESTS_AGENT_ENGINE_NODE_FIXTURE_H_
