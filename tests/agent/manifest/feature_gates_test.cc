#include "agent/manifest/feature_gates.h"

#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

using ::testing::Optional;

TEST(FeatureGatesTest, ParsesAndKeepsOrder) {
  FeatureGates gates("CSIMigrationAWS=true,DisableCloudProviders=false");
  EXPECT_THAT(gates.Get("CSIMigrationAWS"), Optional(std::string("true")));
  EXPECT_THAT(gates.Get("DisableCloudProviders"), Optional(std::string("false")));
  EXPECT_EQ(gates.Get("Other"), std::nullopt);
  EXPECT_EQ(gates.ToString(), "CSIMigrationAWS=true,DisableCloudProviders=false");
  EXPECT_FALSE(gates.empty());
}

TEST(FeatureGatesTest, TrimsWhiteSpaceAndSkipsEmptyItems) {
  FeatureGates gates(" A = true ,, B=false, ");
  EXPECT_THAT(gates.Get("A"), Optional(std::string("true")));
  EXPECT_EQ(gates.ToString(), "A=true,B=false");
}

TEST(FeatureGatesTest, EmptyValue) {
  FeatureGates gates("");
  EXPECT_TRUE(gates.empty());
  EXPECT_EQ(gates.ToString(), "");
  gates.Set("A", "true");
  EXPECT_EQ(gates.ToString(), "A=true");
}

TEST(FeatureGatesTest, SetReplacesInPlaceOrAppends) {
  FeatureGates gates("A=true,B=false,C=true");
  gates.Set("B", "true");
  gates.Set("D", "false");
  EXPECT_EQ(gates.ToString(), "A=true,B=true,C=true,D=false");
}

TEST(FeatureGatesTest, RepeatedGateReadsItsLastSetting) {
  // component-base's featuregate applies the items in order, so the last one wins.
  FeatureGates gates("A=false,B=true,A=true");
  EXPECT_THAT(gates.Get("A"), Optional(std::string("true")));
}

TEST(FeatureGatesTest, SetCollapsesRepeats) {
  FeatureGates gates("A=false,B=true,A=false");
  gates.Set("A", "true");
  EXPECT_THAT(gates.Get("A"), Optional(std::string("true")));
  EXPECT_EQ(gates.ToString(), "A=true,B=true");
}

TEST(FeatureGatesTest, RemoveRemovesEveryOccurrence) {
  FeatureGates gates("A=true,B=false,A=false");
  EXPECT_TRUE(gates.Remove("A"));
  EXPECT_EQ(gates.ToString(), "B=false");
  EXPECT_FALSE(gates.Remove("A"));
  EXPECT_TRUE(gates.Remove("B"));
  EXPECT_TRUE(gates.empty());
  EXPECT_EQ(gates.ToString(), "");
}

TEST(FeatureGatesTest, NameWithoutValue) {
  FeatureGates gates("A");
  EXPECT_THAT(gates.Get("A"), Optional(std::string("")));
}

}  // namespace
}  // namespace handoff
