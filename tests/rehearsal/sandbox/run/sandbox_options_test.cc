// What `handoffctl sandbox --fault` takes: one fault, or several run one after another.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/sandbox/sandbox.h"

namespace handoff::sandbox {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(SandboxOptionsTest, FaultsAreAListInTheirOrder) {
  std::vector<Fault> faults = {Fault::kUnhealthy};
  ASSERT_TRUE(ParseFaults("", &faults));
  EXPECT_THAT(faults, IsEmpty());
  ASSERT_TRUE(ParseFaults("kubelet-kill, agent-kill,coordinator-kill", &faults));
  EXPECT_THAT(faults,
              ElementsAre(Fault::kKubeletKill, Fault::kAgentKill, Fault::kCoordinatorKill));
  for (Fault fault : {Fault::kAgentKill, Fault::kCoordinatorKill, Fault::kUnhealthy,
                      Fault::kStrayBackup, Fault::kKubeletKill}) {
    Fault parsed = Fault::kNone;
    ASSERT_TRUE(ParseFault(FaultName(fault), &parsed)) << FaultName(fault);
    EXPECT_EQ(parsed, fault);
  }
}

TEST(SandboxOptionsTest, AnUnknownOrRepeatedFaultIsRefusedAndChangesNothing) {
  std::vector<Fault> faults = {Fault::kUnhealthy};
  for (const char* bad : {"meteor", "agent-kill,agent-kill", "agent-kill,,meteor"}) {
    EXPECT_FALSE(ParseFaults(bad, &faults)) << bad;
    EXPECT_THAT(faults, ElementsAre(Fault::kUnhealthy)) << bad;
  }
}

}  // namespace
}  // namespace handoff::sandbox
