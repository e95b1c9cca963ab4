// The applier checks the restarted kubelet at the settings' kubelet.healthzUrl.
#include <sstream>

#include "agent/apply/applier.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/apply/fake_kubelet.h"
#include "tests/agent/engine/node_fixture.h"
#include "tests/support/fake_clock.h"

namespace handoff {
namespace {

using testing::FakeKubelet;
using ::testing::HasSubstr;
using testing::KubeadmSettings;
using testing::LoadNode;

class KubeletHealthApplyTest : public ::testing::Test {
 protected:
  KubeletHealthApplyTest() : fs_(LoadNode("kubeadm")), kubelet_(fs_, KubeadmSettings().paths) {}

  absl::StatusOr<ApplyReport> Apply(const Settings& settings, NodeState target) {
    ApplyOptions options;
    options.verify_options.timeout = absl::Minutes(1);
    Applier applier(Host{fs_, kubelet_, kubelet_, clock_, kubelet_, kubelet_}, settings, options,
                    log_);
    return applier.Apply(target);
  }

  MemoryFileSystem fs_;
  FakeKubelet kubelet_;
  FakeClock clock_;
  std::ostringstream log_;
};

TEST_F(KubeletHealthApplyTest, RestartedKubeletIsCheckedAtTheConfiguredUrl) {
  Settings settings = KubeadmSettings();
  settings.kubelet.healthz.host = "127.0.1.2";
  settings.kubelet.healthz.port = 10348;
  // Only the default port fails: a move that asks the configured one succeeds.
  kubelet_.unhealthy_ports.insert(10248);
  absl::StatusOr<ApplyReport> prepared = Apply(settings, NodeState::kPrepared);
  ASSERT_TRUE(prepared.ok() && prepared->ok());
  absl::StatusOr<ApplyReport> migrated = Apply(settings, NodeState::kMigrated);
  ASSERT_TRUE(migrated.ok()) << migrated.status();
  EXPECT_TRUE(migrated->ok()) << migrated->failure;
  EXPECT_THAT(kubelet_.commands, ::testing::ElementsAre("systemctl restart kubelet"));
}

TEST_F(KubeletHealthApplyTest, UnhealthyConfiguredUrlRollsBack) {
  Settings settings = KubeadmSettings();
  settings.kubelet.healthz.host = "127.0.1.2";
  settings.kubelet.healthz.port = 10348;
  absl::StatusOr<ApplyReport> prepared = Apply(settings, NodeState::kPrepared);
  ASSERT_TRUE(prepared.ok() && prepared->ok());
  kubelet_.unhealthy_ports.insert(10348);
  absl::StatusOr<ApplyReport> migrated = Apply(settings, NodeState::kMigrated);
  ASSERT_TRUE(migrated.ok()) << migrated.status();
  EXPECT_FALSE(migrated->ok());
  EXPECT_THAT(migrated->failure, HasSubstr("http://127.0.1.2:10348/healthz"));
}

}  // namespace
}  // namespace handoff
