#include "agent/manifest/flag_list.h"

#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Optional;

using Items = std::vector<std::string>;

TEST(IsBooleanFlagTest, KnownBooleansOnly) {
  EXPECT_TRUE(IsBooleanFlag("leader-elect"));
  EXPECT_TRUE(IsBooleanFlag("enable-leader-migration"));
  EXPECT_TRUE(IsBooleanFlag("allocate-node-cidrs"));
  EXPECT_FALSE(IsBooleanFlag("cloud-provider"));
  EXPECT_FALSE(IsBooleanFlag("leader-elect-resource-lock"));
  EXPECT_FALSE(IsBooleanFlag("--leader-elect"));
}

TEST(FlagListGetTest, EqualsForm) {
  FlagList flags(Items{"kube-controller-manager", "--cloud-provider=aws", "--v=2"});
  EXPECT_THAT(flags.Get("cloud-provider"), Optional(std::string("aws")));
  EXPECT_THAT(flags.Get("v"), Optional(std::string("2")));
  EXPECT_EQ(flags.Get("cloud-config"), std::nullopt);
  // A prefix of a name is not the name.
  EXPECT_EQ(flags.Get("cloud"), std::nullopt);
  EXPECT_EQ(flags.Get("kube-controller-manager"), std::nullopt);
}

TEST(FlagListGetTest, EmptyValueAndValueWithEquals) {
  FlagList flags(Items{"--cloud-config=", "--feature-gates=A=true,B=false"});
  EXPECT_THAT(flags.Get("cloud-config"), Optional(std::string("")));
  EXPECT_THAT(flags.Get("feature-gates"), Optional(std::string("A=true,B=false")));
}

TEST(FlagListGetTest, SplitForm) {
  FlagList flags(Items{"kcm", "--cloud-provider", "aws", "--v", "2"});
  EXPECT_THAT(flags.Get("cloud-provider"), Optional(std::string("aws")));
  EXPECT_THAT(flags.Get("v"), Optional(std::string("2")));
  // "aws" is a value, not a flag or a name.
  EXPECT_THAT(flags.Names(), ElementsAre("cloud-provider", "v"));
}

TEST(FlagListGetTest, SplitFlagDoesNotTakeAFollowingFlag) {
  FlagList flags(Items{"--cloud-provider", "--leader-elect=false"});
  EXPECT_THAT(flags.Get("cloud-provider"), Optional(std::string("true")));
  EXPECT_THAT(flags.Get("leader-elect"), Optional(std::string("false")));
}

TEST(FlagListGetTest, BareBooleanReadsTrue) {
  FlagList flags(Items{"kcm", "--leader-elect", "--v=2"});
  EXPECT_THAT(flags.Get("leader-elect"), Optional(std::string("true")));
}

TEST(FlagListGetTest, KnownBooleanNeverTakesTheNextItem) {
  // pflag reads "--leader-elect false" as leader-elect=true plus a stray argument "false".
  FlagList flags(Items{"kcm", "--leader-elect", "false"});
  EXPECT_THAT(flags.Get("leader-elect"), Optional(std::string("true")));
  std::vector<FlagOccurrence> found = flags.Find("leader-elect");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_FALSE(found[0].split);
  EXPECT_EQ(found[0].value, std::nullopt);
}

TEST(FlagListGetTest, LastOccurrenceWins) {
  FlagList flags(Items{"--cloud-provider=aws", "--v=2", "--cloud-provider", "external",
                       "--leader-elect=false", "--leader-elect"});
  EXPECT_THAT(flags.Get("cloud-provider"), Optional(std::string("external")));
  EXPECT_THAT(flags.Get("leader-elect"), Optional(std::string("true")));
}

TEST(FlagListFindTest, ReportsEveryOccurrenceWithItsForm) {
  FlagList flags(Items{"kcm", "--a=1", "--b", "--a", "2", "--a"});
  std::vector<FlagOccurrence> found = flags.Find("a");
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].index, 1u);
  EXPECT_FALSE(found[0].split);
  EXPECT_THAT(found[0].value, Optional(std::string("1")));
  EXPECT_EQ(found[1].index, 3u);
  EXPECT_TRUE(found[1].split);
  EXPECT_THAT(found[1].value, Optional(std::string("2")));
  EXPECT_EQ(found[2].index, 5u);
  EXPECT_FALSE(found[2].split);
  EXPECT_EQ(found[2].value, std::nullopt);
  EXPECT_THAT(flags.Names(), ElementsAre("a", "b", "a", "a"));
}

TEST(FlagListFindTest, SingleDashAndPositionalsAreNotFlags) {
  FlagList flags(Items{"kcm", "-v", "--", "positional"});
  EXPECT_THAT(flags.Names(), IsEmpty());
  EXPECT_THAT(flags.Find("v"), IsEmpty());
}

TEST(FlagListSetTest, ReplacesEqualsFormInPlace) {
  FlagList flags(Items{"kcm", "--cloud-provider=aws", "--v=2"});
  flags.Set("cloud-provider", "external");
  EXPECT_THAT(flags.items(), ElementsAre("kcm", "--cloud-provider=external", "--v=2"));
}

TEST(FlagListSetTest, KeepsSplitForm) {
  FlagList flags(Items{"kcm", "--cloud-provider", "aws", "--v=2"});
  flags.Set("cloud-provider", "external");
  EXPECT_THAT(flags.items(), ElementsAre("kcm", "--cloud-provider", "external", "--v=2"));
}

TEST(FlagListSetTest, SplitFlagSetToBareDropsTheValueItem) {
  FlagList flags(Items{"kcm", "--cloud-provider", "aws", "--v=2"});
  flags.Set("cloud-provider", std::nullopt);
  EXPECT_THAT(flags.items(), ElementsAre("kcm", "--cloud-provider", "--v=2"));
}

TEST(FlagListSetTest, BareBooleanSetTrueStaysBare) {
  FlagList flags(Items{"kcm", "--leader-elect"});
  flags.Set("leader-elect", "true");
  EXPECT_THAT(flags.items(), ElementsAre("kcm", "--leader-elect"));
}

TEST(FlagListSetTest, BareBooleanSetFalseGetsAValue) {
  FlagList flags(Items{"kcm", "--leader-elect", "--v=2"});
  flags.Set("leader-elect", "false");
  EXPECT_THAT(flags.items(), ElementsAre("kcm", "--leader-elect=false", "--v=2"));
  EXPECT_THAT(flags.Get("leader-elect"), Optional(std::string("false")));
}

TEST(FlagListSetTest, EqualsFormSetToBare) {
  FlagList flags(Items{"--enable-leader-migration=true", "--v=2"});
  flags.Set("enable-leader-migration", std::nullopt);
  EXPECT_THAT(flags.items(), ElementsAre("--enable-leader-migration", "--v=2"));
}

TEST(FlagListSetTest, CollapsesDuplicatesIntoTheLastOccurrence) {
  FlagList flags(Items{"kcm", "--cloud-provider", "aws", "--v=2", "--cloud-provider=gce",
                       "--leader-elect", "--cloud-provider", "x"});
  flags.Set("cloud-provider", "external");
  EXPECT_THAT(flags.items(),
              ElementsAre("kcm", "--v=2", "--leader-elect", "--cloud-provider", "external"));
  EXPECT_EQ(flags.Find("cloud-provider").size(), 1u);
}

TEST(FlagListSetTest, CollapsesDuplicatesKeepingTheLastForm) {
  FlagList flags(Items{"--a", "1", "--a=2", "--b=3"});
  flags.Set("a", "9");
  EXPECT_THAT(flags.items(), ElementsAre("--a=9", "--b=3"));
}

TEST(FlagListSetTest, NewFlagGoesToItsSortedPlace) {
  FlagList flags(Items{"kube-controller-manager", "--allocate-node-cidrs=true",
                       "--cloud-provider=aws", "--kubeconfig=/etc/kubernetes/kcm.conf",
                       "--use-service-account-credentials=true"});
  flags.Set("leader-migration-config", "/etc/kubernetes/lm.yaml");
  EXPECT_THAT(flags.items(),
              ElementsAre("kube-controller-manager", "--allocate-node-cidrs=true",
                          "--cloud-provider=aws", "--kubeconfig=/etc/kubernetes/kcm.conf",
                          "--leader-migration-config=/etc/kubernetes/lm.yaml",
                          "--use-service-account-credentials=true"));
}

TEST(FlagListSetTest, NewFlagBeforeAllOrAfterAll) {
  FlagList first(Items{"kcm", "--b=1", "--c=2"});
  first.Set("a", "0");
  EXPECT_THAT(first.items(), ElementsAre("kcm", "--a=0", "--b=1", "--c=2"));
  FlagList last(Items{"kcm", "--b=1", "--c=2"});
  last.Set("z", std::nullopt);
  EXPECT_THAT(last.items(), ElementsAre("kcm", "--b=1", "--c=2", "--z"));
}

TEST(FlagListSetTest, SortedMeansSortedByNameAsKubeadmSorts) {
  // kubeadm sorts by flag name: "leader-elect" < "leader-elect-lease-duration", although the
  // items compare the other way ('-' < '=').
  FlagList flags(Items{"kcm", "--leader-elect=true", "--leader-elect-lease-duration=15s", "--v=2"});
  flags.Set("leader-elect-retry-period", "2s");
  EXPECT_THAT(flags.items(),
              ElementsAre("kcm", "--leader-elect=true", "--leader-elect-lease-duration=15s",
                          "--leader-elect-retry-period=2s", "--v=2"));
  FlagList prefix(Items{"kcm", "--leader-elect-lease-duration=15s", "--v=2"});
  prefix.Set("leader-elect", "true");
  EXPECT_THAT(prefix.items(), ElementsAre("kcm", "--leader-elect=true",
                                          "--leader-elect-lease-duration=15s", "--v=2"));
}

TEST(FlagListSetTest, NewFlagIsAppendedWhenFlagsAreNotSorted) {
  FlagList flags(Items{"kcm", "--v=2", "--cloud-provider=aws"});
  flags.Set("bind-address", "127.0.0.1");
  EXPECT_THAT(flags.items(),
              ElementsAre("kcm", "--v=2", "--cloud-provider=aws", "--bind-address=127.0.0.1"));
}

TEST(FlagListSetTest, NewFlagInSortedSplitListGoesBeforeTheNextFlag) {
  FlagList flags(Items{"kcm", "--a", "1", "--c", "3"});
  flags.Set("b", "2");
  EXPECT_THAT(flags.items(), ElementsAre("kcm", "--a", "1", "--b=2", "--c", "3"));
  EXPECT_THAT(flags.Get("a"), Optional(std::string("1")));
  EXPECT_THAT(flags.Get("c"), Optional(std::string("3")));
}

TEST(FlagListSetTest, IntoEmptyList) {
  FlagList flags(Items{});
  flags.Set("cloud-provider", "external");
  EXPECT_THAT(flags.items(), ElementsAre("--cloud-provider=external"));
}

TEST(FlagListRemoveTest, RemovesEveryFormAndSplitValues) {
  FlagList flags(Items{"kcm", "--cloud-provider", "aws", "--v=2", "--cloud-provider=gce",
                       "--leader-elect", "--cloud-provider"});
  EXPECT_TRUE(flags.Remove("cloud-provider"));
  EXPECT_THAT(flags.items(), ElementsAre("kcm", "--v=2", "--leader-elect"));
  EXPECT_FALSE(flags.Remove("cloud-provider"));
  EXPECT_THAT(flags.items(), ElementsAre("kcm", "--v=2", "--leader-elect"));
}

TEST(FlagListRemoveTest, BareBooleanLeavesTheFollowingItem) {
  FlagList flags(Items{"kcm", "--leader-elect", "stray"});
  EXPECT_TRUE(flags.Remove("leader-elect"));
  EXPECT_THAT(flags.items(), ElementsAre("kcm", "stray"));
}

TEST(FlagListRemoveTest, AbsentFlagChangesNothing) {
  FlagList flags(Items{"kcm", "--cloud-provider-x=1"});
  EXPECT_FALSE(flags.Remove("cloud-provider"));
  EXPECT_THAT(flags.items(), ElementsAre("kcm", "--cloud-provider-x=1"));
}

}  // namespace
}  // namespace handoff
