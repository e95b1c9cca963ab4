#include "common/base/strings.h"

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

using ::testing::ElementsAre;

TEST(StrCatTest, JoinsStringsCharactersAndNumbers) {
  const std::string s = "str";
  const std::string_view view = "view";
  EXPECT_EQ(StrCat(s, "-", view, ':', 42, " ", static_cast<size_t>(7), -3), "str-view:42 7-3");
  EXPECT_EQ(StrCat(), "");
}

TEST(StrCatTest, TakesAbslStatusMessages) {
  absl::Status status = absl::NotFoundError("gone");
  EXPECT_EQ(StrCat("error: ", status.message()), "error: gone");
}

TEST(StrAppendTest, AppendsInPlace) {
  std::string out = "a";
  StrAppend(&out, "b", std::string("c"), 1);
  EXPECT_EQ(out, "abc1");
}

TEST(StrJoinTest, JoinsWithSeparator) {
  EXPECT_EQ(StrJoin(std::vector<std::string>{"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(StrJoin(std::vector<std::string_view>{"x"}, ","), "x");
  EXPECT_EQ(StrJoin(std::vector<std::string>{}, ","), "");
  EXPECT_EQ(StrJoin(std::vector<std::string>{"", ""}, "|"), "|");
}

TEST(StrSplitTest, SplitsAtEverySeparator) {
  EXPECT_THAT(StrSplit("a,b,,c", ","), ElementsAre("a", "b", "", "c"));
  EXPECT_THAT(StrSplit("a b\tc", " \t"), ElementsAre("a", "b", "c"));
  EXPECT_THAT(StrSplit("", ","), ElementsAre(""));
  EXPECT_THAT(StrSplit(",", ","), ElementsAre("", ""));
  EXPECT_THAT(StrSplit("abc", ","), ElementsAre("abc"));
}

TEST(StrSplitTest, SkipEmptyDropsEmptyPieces) {
  EXPECT_THAT(StrSplit("  a   b ", " ", /*skip_empty=*/true), ElementsAre("a", "b"));
  EXPECT_TRUE(StrSplit("", ",", /*skip_empty=*/true).empty());
  EXPECT_TRUE(StrSplit(",,,", ",", /*skip_empty=*/true).empty());
}

TEST(ToStringsTest, CopiesViews) {
  std::vector<std::string> copies = ToStrings(StrSplit("a:b", ":"));
  EXPECT_THAT(copies, ElementsAre("a", "b"));
}

TEST(PrefixSuffixTest, StartsEndsContainsStrip) {
  EXPECT_TRUE(StartsWith("--flag=value", "--"));
  EXPECT_TRUE(StartsWith("abc", ""));
  EXPECT_FALSE(StartsWith("-", "--"));
  EXPECT_TRUE(EndsWith("file.yaml", ".yaml"));
  EXPECT_TRUE(EndsWith("x", ""));
  EXPECT_FALSE(EndsWith("yaml", "file.yaml"));
  EXPECT_TRUE(StrContains("a: b", ": "));
  EXPECT_FALSE(StrContains("a:b", ": "));
  EXPECT_EQ(StripPrefix("--name", "--"), "name");
  EXPECT_EQ(StripPrefix("name", "--"), "name");
}

TEST(StripWhitespaceTest, StripsSpacesTabsAndLineEnds) {
  EXPECT_EQ(StripWhitespace(" \t a b \r\n"), "a b");
  EXPECT_EQ(StripWhitespace("   "), "");
  EXPECT_EQ(StripWhitespace(""), "");
  EXPECT_EQ(StripWhitespace("x"), "x");
  EXPECT_EQ(StripLeadingWhitespace("\n  a b  "), "a b  ");
  EXPECT_EQ(StripLeadingWhitespace(" \t"), "");
}

}  // namespace
}  // namespace handoff
