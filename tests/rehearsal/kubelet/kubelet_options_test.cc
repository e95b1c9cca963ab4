#include "rehearsal/kubelet/kubelet_options.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::sandbox {
namespace {

using ::testing::HasSubstr;

TEST(KubeletOptionsTest, DefaultsAreTheKubelets) {
  absl::StatusOr<KubeletOptions> options =
      ParseKubeletOptions({"--root=/srv/nodes/cp-1/", "--standin", "/usr/bin/handoff-standin"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->root, "/srv/nodes/cp-1");
  EXPECT_EQ(options->pod_manifest_path, "/etc/kubernetes/manifests");
  EXPECT_EQ(options->healthz_bind_address, "127.0.0.1");
  EXPECT_EQ(options->healthz_port, 10248);
  EXPECT_EQ(options->standin, "/usr/bin/handoff-standin");
  EXPECT_EQ(options->records, "");
  EXPECT_EQ(options->node_name, "cp-1");
  EXPECT_EQ(options->file_check_frequency, std::chrono::seconds(1));
  // A changed static pod: 10 s plus up to half of it, as a real v1.26 kubelet retries it.
  EXPECT_EQ(options->pod_restart_delay, std::chrono::seconds(10));
  EXPECT_EQ(options->pod_restart_jitter, 0.5);
}

TEST(KubeletOptionsTest, TheChangedPodsRestartDelayCanBeShortenedOrTurnedOff) {
  absl::StatusOr<KubeletOptions> options = ParseKubeletOptions(
      {"--root=/n", "--standin=/s", "--pod-restart-delay=700ms", "--pod-restart-jitter=0.25"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->pod_restart_delay, std::chrono::milliseconds(700));
  EXPECT_EQ(options->pod_restart_jitter, 0.25);
  options = ParseKubeletOptions({"--root=/n", "--standin=/s", "--pod-restart-delay=0s"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->pod_restart_delay, std::chrono::milliseconds(0));
  for (const char* bad :
       {"--pod-restart-jitter=1.5", "--pod-restart-jitter=-0.1", "--pod-restart-jitter=half"}) {
    EXPECT_THAT(
        std::string(ParseKubeletOptions({"--root=/n", "--standin=/s", bad}).status().message()),
        HasSubstr("--pod-restart-jitter must be a fraction from 0 to 1"))
        << bad;
  }
  EXPECT_THAT(
      std::string(ParseKubeletOptions({"--root=/n", "--standin=/s", "--pod-restart-delay=soon"})
                      .status()
                      .message()),
      HasSubstr("--pod-restart-delay must be a duration"));
}

TEST(KubeletOptionsTest, LastOccurrenceWinsAndUnknownFlagsAreIgnored) {
  absl::StatusOr<KubeletOptions> options = ParseKubeletOptions(
      {"--root", "/n/cp-2", "--standin=/s", "--healthz-bind-address=127.0.1.2", "--healthz-port",
       "10248", "--node-name=cp-2", "--records=/r/cp-2.jsonl", "--file-check-frequency=250ms",
       "--pod-manifest-path=/etc/kubernetes/manifests/", "--container-runtime-endpoint",
       "unix:///run/containerd/containerd.sock", "--cloud-provider=external",
       "--healthz-port=10348"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->healthz_bind_address, "127.0.1.2");
  EXPECT_EQ(options->healthz_port, 10348);
  EXPECT_EQ(options->node_name, "cp-2");
  EXPECT_EQ(options->records, "/r/cp-2.jsonl");
  EXPECT_EQ(options->file_check_frequency, std::chrono::milliseconds(250));
  EXPECT_EQ(options->pod_manifest_path, "/etc/kubernetes/manifests");
}

TEST(KubeletOptionsTest, EveryProblemIsNamed) {
  absl::StatusOr<KubeletOptions> options = ParseKubeletOptions(
      {"--healthz-port=http", "--file-check-frequency=often", "--pod-manifest-path=manifests"});
  ASSERT_FALSE(options.ok());
  const std::string message(options.status().message());
  EXPECT_THAT(message, HasSubstr("--root is required"));
  EXPECT_THAT(message, HasSubstr("--standin is required"));
  EXPECT_THAT(message, HasSubstr("--healthz-port must be a port number (0-65535), not http"));
  EXPECT_THAT(message, HasSubstr("--file-check-frequency must be a positive duration"));
  EXPECT_THAT(message, HasSubstr("--pod-manifest-path must be an absolute path"));
  EXPECT_THAT(std::string(ParseKubeletOptions({"--root", "--standin=/s"}).status().message()),
              HasSubstr("--root needs a value"));
}

TEST(KubeletOptionsTest, AKubeconfigTurnsTheNodesHeartbeatOn) {
  absl::StatusOr<KubeletOptions> options = ParseKubeletOptions({"--root=/n", "--standin=/s"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->kubeconfig, "");
  EXPECT_EQ(options->node_lease_renew_interval, std::chrono::seconds(10));
  options = ParseKubeletOptions({"--root=/n", "--standin=/s", "--kubeconfig",
                                 "/etc/kubernetes/kubelet.conf", "--node-lease-renew-interval=1s"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->kubeconfig, "/etc/kubernetes/kubelet.conf");
  EXPECT_EQ(options->node_lease_renew_interval, std::chrono::seconds(1));
  EXPECT_THAT(std::string(ParseKubeletOptions({"--root=/n", "--standin=/s", "--kubeconfig=k.conf"})
                              .status()
                              .message()),
              HasSubstr("--kubeconfig must be an absolute path under --root, not k.conf"));
  for (const char* bad : {"--node-lease-renew-interval=0s", "--node-lease-renew-interval=often"}) {
    EXPECT_THAT(
        std::string(ParseKubeletOptions({"--root=/n", "--standin=/s", bad}).status().message()),
        HasSubstr("--node-lease-renew-interval must be a positive duration"))
        << bad;
  }
}

}  // namespace
}  // namespace handoff::sandbox
