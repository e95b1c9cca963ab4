#include "rehearsal/kubelet/cri_listing.h"

#include <unistd.h>

#include "absl/time/clock.h"
#include "agent/verify/worker_proof.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/kubelet/process_control.h"

namespace handoff::sandbox {
namespace {

using ::testing::IsEmpty;

PodProcesses Pods(int workload_pid, std::uint64_t start) {
  PodProcesses pods;
  pods["workload"] = PodProcess{workload_pid, start, "h1", "workload"};
  pods["gone"] = PodProcess{99999, 7, "h2", "sidecar"};
  return pods;
}

std::optional<std::int64_t> AllButGone(const PodProcess& pod) {
  if (pod.component == "sidecar") return std::nullopt;
  return static_cast<std::int64_t>(pod.start_time) * 1000;
}

// The listing is what the worker's proof reads (agent/verify/worker_proof.h): the same reader,
// not a look at the JSON's fields, decides.
TEST(CriListingTest, TheWorkersProofReadsItAsCrictlsAndSeesARestartedPod) {
  absl::StatusOr<std::vector<CriContainer>> before =
      ParseCriContainers(CriListing(Pods(100, 5), "w-1", AllButGone));
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_EQ(before->size(), 1u);  // the pod whose process is gone is not listed
  EXPECT_EQ((*before)[0].name, "workload");
  EXPECT_EQ((*before)[0].pod, "/workload-w-1");
  EXPECT_EQ((*before)[0].id.size(), 64u);
  EXPECT_EQ((*before)[0].created_at, "5000");

  // The same processes after the kubelet's restart: nothing restarted.
  absl::StatusOr<std::vector<CriContainer>> same =
      ParseCriContainers(CriListing(Pods(100, 5), "w-1", AllButGone));
  ASSERT_TRUE(same.ok());
  EXPECT_THAT(RestartedContainers(*before, *same), IsEmpty());
  // Another process for the pod: a restarted container in the same sandbox.
  absl::StatusOr<std::vector<CriContainer>> restarted =
      ParseCriContainers(CriListing(Pods(101, 9), "w-1", AllButGone));
  ASSERT_TRUE(restarted.ok());
  EXPECT_EQ((*restarted)[0].pod_sandbox_id, (*before)[0].pod_sandbox_id);
  EXPECT_NE((*restarted)[0].id, (*before)[0].id);
  EXPECT_EQ(RestartedContainers(*before, *restarted).size(), 1u);
}

TEST(CriListingTest, RunningSinceIsTheProcesssStartAndNothingForAnotherStartTime) {
  const int self = static_cast<int>(::getpid());
  const std::optional<ProcStat> stat = ReadProcStat(self);
  ASSERT_TRUE(stat);
  const std::optional<std::int64_t> since = RunningSince(PodProcess{self, stat->start_time, "", ""});
  ASSERT_TRUE(since);
  const std::int64_t now = absl::ToUnixNanos(absl::Now());
  // Clock ticks are 10 ms; this test process started within the hour.
  EXPECT_LE(*since, now + 1000000000LL);
  EXPECT_GT(*since, now - 3600LL * 1000000000LL);
  // The pid with another start time is another process: not running.
  EXPECT_FALSE(RunningSince(PodProcess{self, stat->start_time + 1, "", ""}));
}

}  // namespace
}  // namespace handoff::sandbox
