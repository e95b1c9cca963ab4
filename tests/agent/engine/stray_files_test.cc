// The manifest directory's stray files (agent/engine/node_snapshot.h): which files are named, and
// the node as it would be with them moved out.
#include "agent/engine/classify.h"
#include "agent/engine/node_snapshot.h"
#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/engine/node_fixture.h"

namespace handoff {
namespace {

using ::handoff::testing::KubeadmSettings;
using ::handoff::testing::LoadNode;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kManifests[] = "/etc/kubernetes/manifests";

NodeSnapshot Read(const MemoryFileSystem& fs) {
  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(fs, KubeadmSettings().paths);
  EXPECT_TRUE(snapshot.ok()) << snapshot.status();
  return snapshot.ok() ? *std::move(snapshot) : NodeSnapshot();
}

TEST(StrayFilesTest, ACopyOfAPodAndAFileThatIsNoPodAreStrayTheCanonicalIsNot) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  const std::string kcm = std::string(kManifests) + "/kube-controller-manager.yaml";
  fs.SetFile(kcm + ".bak", *fs.ReadFile(kcm));
  fs.SetFile(std::string(kManifests) + "/notes.txt", "the manifests before 1.26: [kept\n");
  const NodeSnapshot snapshot = Read(fs);
  const std::vector<std::string> stray = StrayManifestFiles(snapshot);
  ASSERT_EQ(stray.size(), 2u);
  // Those that are no pod first, then the copies.
  EXPECT_THAT(stray[0], HasSubstr(std::string(kManifests) + "/notes.txt: not a pod manifest ("));
  EXPECT_EQ(stray[1], StrCat(kcm, ".bak: pod kube-system/kube-controller-manager again (", kcm,
                             " defines it)"));
  EXPECT_EQ(Classify(snapshot).state, NodeState::kInconsistent);

  // Moved out, the node is the in-tree one it was.
  const NodeSnapshot kept = WithoutStrayFiles(snapshot);
  EXPECT_THAT(StrayManifestFiles(kept), IsEmpty());
  EXPECT_EQ(Classify(kept).state, NodeState::kInTree);
  EXPECT_EQ(kept.manifests.size(), snapshot.manifests.size() - 2);
}

TEST(StrayFilesTest, AYamlMapThatIsNoPodIsStray) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  fs.SetFile(std::string(kManifests) + "/kustomization.yaml", "resources: [etcd.yaml]\n");
  const std::vector<std::string> stray = StrayManifestFiles(Read(fs));
  ASSERT_EQ(stray.size(), 1u);
  EXPECT_EQ(stray[0],
            std::string(kManifests) +
                "/kustomization.yaml: not a pod manifest (kind \"\", metadata.name \"\")");
}

TEST(StrayFilesTest, ANodeWithoutStrayFilesIsKeptWhole) {
  const NodeSnapshot snapshot = Read(LoadNode("kubeadm"));
  EXPECT_THAT(StrayManifestFiles(snapshot), IsEmpty());
  EXPECT_EQ(WithoutStrayFiles(snapshot).manifests.size(), snapshot.manifests.size());
}

}  // namespace
}  // namespace handoff
