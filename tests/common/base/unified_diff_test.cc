#include "common/base/unified_diff.h"

#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace handoff {
namespace {

// "prefix1\nprefix2\n...prefixN\n".
std::string NumberedLines(const std::string& prefix, int count) {
  std::string text;
  for (int i = 1; i <= count; ++i) text += prefix + std::to_string(i) + "\n";
  return text;
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

// The expected hunks below are what GNU diffutils' `diff -u` prints for the same two files.

TEST(UnifiedDiffTest, EqualInputsGiveNothing) {
  EXPECT_EQ(UnifiedDiff("/etc/x", std::string("a\nb\n"), std::string("a\nb\n")), "");
  EXPECT_EQ(UnifiedDiff("/etc/x", std::string(""), std::string("")), "");
  EXPECT_EQ(UnifiedDiff("/etc/x", std::nullopt, std::nullopt), "");
}

TEST(UnifiedDiffTest, ChangeInTheMiddleHasThreeLinesOfContext) {
  const std::string before = NumberedLines("line ", 12);
  const std::string after = Replace(before, "line 7\n", "line seven\n");
  EXPECT_EQ(UnifiedDiff("/etc/kubernetes/manifests/kcm.yaml", before, after),
            "--- a/etc/kubernetes/manifests/kcm.yaml\n"
            "+++ b/etc/kubernetes/manifests/kcm.yaml\n"
            "@@ -4,7 +4,7 @@\n"
            " line 4\n"
            " line 5\n"
            " line 6\n"
            "-line 7\n"
            "+line seven\n"
            " line 8\n"
            " line 9\n"
            " line 10\n");
}

TEST(UnifiedDiffTest, RelativePathStillGetsSlashAfterPrefix) {
  EXPECT_EQ(UnifiedDiff("kcm.yaml", std::string("a\n"), std::string("b\n")),
            "--- a/kcm.yaml\n"
            "+++ b/kcm.yaml\n"
            "@@ -1 +1 @@\n"
            "-a\n"
            "+b\n");
}

TEST(UnifiedDiffTest, CreatedFile) {
  EXPECT_EQ(UnifiedDiff("/etc/kubernetes/manifests/ccm.yaml", std::nullopt,
                        std::string("apiVersion: v1\nkind: Pod\nmetadata: {}\n")),
            "--- /dev/null\n"
            "+++ b/etc/kubernetes/manifests/ccm.yaml\n"
            "@@ -0,0 +1,3 @@\n"
            "+apiVersion: v1\n"
            "+kind: Pod\n"
            "+metadata: {}\n");
}

TEST(UnifiedDiffTest, CreatedOneLineFileNamesOnlyTheStart) {
  EXPECT_EQ(UnifiedDiff("/x", std::nullopt, std::string("only\n")),
            "--- /dev/null\n"
            "+++ b/x\n"
            "@@ -0,0 +1 @@\n"
            "+only\n");
}

TEST(UnifiedDiffTest, RemovedFile) {
  EXPECT_EQ(UnifiedDiff("/etc/kubernetes/manifests/old.yaml", std::string("a\nb\n"), std::nullopt),
            "--- a/etc/kubernetes/manifests/old.yaml\n"
            "+++ /dev/null\n"
            "@@ -1,2 +0,0 @@\n"
            "-a\n"
            "-b\n");
}

TEST(UnifiedDiffTest, TwoDistantChangesMakeTwoHunks) {
  const std::string before = NumberedLines("l", 20);
  const std::string after = Replace(Replace(before, "l2\n", "L2\n"), "l18\n", "L18\n");
  EXPECT_EQ(UnifiedDiff("/f", before, after),
            "--- a/f\n"
            "+++ b/f\n"
            "@@ -1,5 +1,5 @@\n"
            " l1\n"
            "-l2\n"
            "+L2\n"
            " l3\n"
            " l4\n"
            " l5\n"
            "@@ -15,6 +15,6 @@\n"
            " l15\n"
            " l16\n"
            " l17\n"
            "-l18\n"
            "+L18\n"
            " l19\n"
            " l20\n");
}

TEST(UnifiedDiffTest, ChangesSixLinesApartShareOneHunk) {
  const std::string before = NumberedLines("l", 20);
  const std::string after = Replace(Replace(before, "l3\n", "X3\n"), "l10\n", "X10\n");
  EXPECT_EQ(UnifiedDiff("/f", before, after),
            "--- a/f\n"
            "+++ b/f\n"
            "@@ -1,13 +1,13 @@\n"
            " l1\n"
            " l2\n"
            "-l3\n"
            "+X3\n"
            " l4\n"
            " l5\n"
            " l6\n"
            " l7\n"
            " l8\n"
            " l9\n"
            "-l10\n"
            "+X10\n"
            " l11\n"
            " l12\n"
            " l13\n");
}

TEST(UnifiedDiffTest, ChangesSevenLinesApartMakeTwoHunks) {
  const std::string before = NumberedLines("l", 20);
  const std::string after = Replace(Replace(before, "l3\n", "X3\n"), "l11\n", "X11\n");
  EXPECT_EQ(UnifiedDiff("/f", before, after),
            "--- a/f\n"
            "+++ b/f\n"
            "@@ -1,6 +1,6 @@\n"
            " l1\n"
            " l2\n"
            "-l3\n"
            "+X3\n"
            " l4\n"
            " l5\n"
            " l6\n"
            "@@ -8,7 +8,7 @@\n"
            " l8\n"
            " l9\n"
            " l10\n"
            "-l11\n"
            "+X11\n"
            " l12\n"
            " l13\n"
            " l14\n");
}

TEST(UnifiedDiffTest, PureInsertionAndPureDeletion) {
  const std::string before = "1\n2\n3\n4\n5\n6\n7\n8\n";
  EXPECT_EQ(UnifiedDiff("/f", before, std::string("1\n2\n3\n4\nnew\n5\n6\n7\n8\n")),
            "--- a/f\n+++ b/f\n"
            "@@ -2,6 +2,7 @@\n"
            " 2\n 3\n 4\n+new\n 5\n 6\n 7\n");
  EXPECT_EQ(UnifiedDiff("/f", before, std::string("1\n2\n3\n5\n6\n7\n8\n")),
            "--- a/f\n+++ b/f\n"
            "@@ -1,7 +1,6 @@\n"
            " 1\n 2\n 3\n-4\n 5\n 6\n 7\n");
}

TEST(UnifiedDiffTest, InsertionAtTheStart) {
  EXPECT_EQ(UnifiedDiff("/f", std::string("1\n2\n3\n4\n5\n"), std::string("x\n1\n2\n3\n4\n5\n")),
            "--- a/f\n+++ b/f\n"
            "@@ -1,3 +1,4 @@\n"
            "+x\n 1\n 2\n 3\n");
}

TEST(UnifiedDiffTest, AddingTheFinalNewline) {
  EXPECT_EQ(UnifiedDiff("/f", std::string("a\nb\nc"), std::string("a\nb\nc\n")),
            "--- a/f\n+++ b/f\n"
            "@@ -1,3 +1,3 @@\n"
            " a\n"
            " b\n"
            "-c\n"
            "\\ No newline at end of file\n"
            "+c\n");
}

TEST(UnifiedDiffTest, ContextLineWithoutFinalNewline) {
  EXPECT_EQ(UnifiedDiff("/f", std::string("a\nb\nc"), std::string("a\nB\nc")),
            "--- a/f\n+++ b/f\n"
            "@@ -1,3 +1,3 @@\n"
            " a\n"
            "-b\n"
            "+B\n"
            " c\n"
            "\\ No newline at end of file\n");
}

TEST(UnifiedDiffTest, RepeatedLinesJoinIntoOneChangeAsGnuDiffPrintsThem) {
  // Several minimal scripts exist; diff -u keeps the deleted "e" next to the other changes.
  EXPECT_EQ(
      UnifiedDiff("/f", std::string("b\ne\ne\nb\nc\ne\nd\n"), std::string("X\nz\ne\nb\nc\ne\nX\n")),
      "--- a/f\n+++ b/f\n"
      "@@ -1,7 +1,7 @@\n"
      "-b\n"
      "-e\n"
      "+X\n"
      "+z\n"
      " e\n"
      " b\n"
      " c\n"
      " e\n"
      "-d\n"
      "+X\n");
}

TEST(UnifiedDiffTest, EmptyFileToContent) {
  EXPECT_EQ(UnifiedDiff("/f", std::string(""), std::string("a\n")),
            "--- a/f\n+++ b/f\n"
            "@@ -0,0 +1 @@\n"
            "+a\n");
}

}  // namespace
}  // namespace handoff
