#include "common/systemd/environment_file.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::systemd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::SizeIs;

std::vector<std::pair<std::string, std::string>> Pairs(const EnvironmentFile& file) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const EnvironmentAssignment& assignment : file.assignments) {
    pairs.emplace_back(assignment.key, assignment.value);
  }
  return pairs;
}

struct Case {
  std::string name;
  std::string text;
  std::vector<std::pair<std::string, std::string>> expected;
};

// Each read as systemd's parse_env_file_internal reads it (src/basic/env-file.c).
TEST(EnvironmentFileTest, ReadsEachFormAsSystemdDoes) {
  const std::vector<Case> cases = {
      {"kubeadm's own line", "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///run/"
                             "containerd/containerd.sock --pod-infra-container-image=pause:3.9\"\n",
       {{"KUBELET_KUBEADM_ARGS", "--container-runtime-endpoint=unix:///run/containerd/"
                                 "containerd.sock --pod-infra-container-image=pause:3.9"}}},
      {"unquoted, inner white space kept, outer dropped", "KUBELET_EXTRA_ARGS=  --a=1   --b=2  \n",
       {{"KUBELET_EXTRA_ARGS", "--a=1   --b=2"}}},
      {"white space around the key", "  KEY  =value\n", {{"KEY", "value"}}},
      {"single quotes verbatim", "K='a \\\" $b'\n", {{"K", "a \\\" $b"}}},
      {"double-quote escapes", "K=\"a\\\"b\\\\c\\$d\\x\"\n", {{"K", "a\"b\\c$d\\x"}}},
      // After a closing quote, unquoted text starts; a quote within unquoted text is kept.
      {"a quote after unquoted text is kept", "K=\"a b\"c' d'\n", {{"K", "a bc' d'"}}},
      {"quoted pieces join", "K=\"a\" 'b'\n", {{"K", "ab"}}},
      {"a quoted value over two lines", "K=\"one\ntwo\"\nL=3\n", {{"K", "one\ntwo"}, {"L", "3"}}},
      {"an unquoted continuation", "K=one \\\ntwo\n", {{"K", "one two"}}},
      {"comments and blank lines", "# a comment\n; another\n\n   # indented\nK=1\n", {{"K", "1"}}},
      {"a line without '=' is skipped", "just words\nK=1\n", {{"K", "1"}}},
      {"an empty value", "K=\nL=\"\"\n", {{"K", ""}, {"L", ""}}},
      {"no newline at the end", "K=last", {{"K", "last"}}},
      {"a quote left open at the end", "K=\"open", {{"K", "open"}}},
      {"a key set twice: both kept, in order", "K=1\nK=2\n", {{"K", "1"}, {"K", "2"}}},
      {"a '#' inside a value is no comment", "K=a#b\n", {{"K", "a#b"}}},
  };
  for (const Case& c : cases) {
    absl::StatusOr<EnvironmentFile> file = ParseEnvironmentFile(c.text, "/etc/default/kubelet");
    ASSERT_TRUE(file.ok()) << c.name << ": " << file.status();
    EXPECT_EQ(Pairs(*file), c.expected) << c.name;
    EXPECT_THAT(file->ignored, IsEmpty()) << c.name;
  }
}

TEST(EnvironmentFileTest, NamesTheLinesSystemdIgnores) {
  absl::StatusOr<EnvironmentFile> file = ParseEnvironmentFile(
      "export KUBELET_EXTRA_ARGS=--cloud-provider=aws\n1X=2\nGOOD=1\nBAD=\xff\xfe\n",
      "/etc/default/kubelet");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_THAT(Pairs(*file), ElementsAre(Pair("GOOD", "1")));
  ASSERT_THAT(file->ignored, SizeIs(3));
  EXPECT_EQ(file->ignored[0].key, "export KUBELET_EXTRA_ARGS");
  EXPECT_THAT(file->ignored[0].message, HasSubstr("/etc/default/kubelet line 1: \"export "
                                          "KUBELET_EXTRA_ARGS\" is no variable name"));
  EXPECT_THAT(file->ignored[1].message, HasSubstr("line 2: \"1X\""));
  EXPECT_THAT(file->ignored[2].message, HasSubstr("line 4: the value of BAD is not UTF-8"));
}

TEST(EnvironmentFileTest, RefusesWhatSystemdVersionsReadDifferently) {
  absl::StatusOr<EnvironmentFile> file =
      ParseEnvironmentFile("# set below \\\nKUBELET_EXTRA_ARGS=--cloud-provider=aws\n",
                           "/etc/sysconfig/kubelet");
  EXPECT_THAT(file.status().message(),
              HasSubstr("/etc/sysconfig/kubelet line 1: a comment ends with a backslash before an "
                        "assignment on line 2"));
  // Before a comment or a blank line it changes nothing.
  EXPECT_TRUE(ParseEnvironmentFile("# a \\\n# b\nK=1\n", "f").ok());
  EXPECT_THAT(ParseEnvironmentFile(std::string("K=a\0b\n", 6), "f").status().message(),
              HasSubstr("f line 1: a NUL byte"));
}

TEST(EnvironmentFileTest, TheLastAssignmentIsTheOneTheProcessSees) {
  absl::StatusOr<EnvironmentFile> file = ParseEnvironmentFile("K=1\nL=2\nK=3\n", "f");
  ASSERT_TRUE(file.ok());
  ASSERT_NE(file->Find("K"), nullptr);
  EXPECT_EQ(file->Find("K")->value, "3");
  EXPECT_EQ(file->Find("K")->line, 3);
  EXPECT_EQ(file->Find("M"), nullptr);
}

TEST(EnvironmentFileTest, ReplacingAnAssignmentKeepsEveryOtherByte) {
  const std::vector<std::string> texts = {
      "# kept\nKUBELET_EXTRA_ARGS=--cloud-provider=aws --v=2\nOTHER=1\n",
      "KUBELET_EXTRA_ARGS=\"--cloud-provider=aws\"   \n# after\n",
      "KUBELET_EXTRA_ARGS='--cloud-provider=aws'",
      "KUBELET_EXTRA_ARGS=--cloud-provider=aws \\\n  --v=2\nOTHER=\"x\"\n",
      "  KUBELET_EXTRA_ARGS = \"--a\"\" --b\"\n",
  };
  for (const std::string& text : texts) {
    absl::StatusOr<EnvironmentFile> before = ParseEnvironmentFile(text, "f");
    ASSERT_TRUE(before.ok()) << text;
    const EnvironmentAssignment* assignment = before->Find("KUBELET_EXTRA_ARGS");
    ASSERT_NE(assignment, nullptr) << text;
    const std::string value = "--cloud-provider=external --x=\"q\" $HOME \\ `b`";
    const std::string rewritten = ReplaceAssignment(text, *assignment, value);
    absl::StatusOr<EnvironmentFile> after = ParseEnvironmentFile(rewritten, "f");
    ASSERT_TRUE(after.ok()) << rewritten;
    ASSERT_NE(after->Find("KUBELET_EXTRA_ARGS"), nullptr) << rewritten;
    EXPECT_EQ(after->Find("KUBELET_EXTRA_ARGS")->value, value) << rewritten;
    // Everything before and after the assignment is as it was.
    EXPECT_EQ(rewritten.substr(0, assignment->begin), text.substr(0, assignment->begin));
    EXPECT_EQ(rewritten.substr(rewritten.size() - (text.size() - assignment->end)),
              text.substr(assignment->end))
        << text;
    std::vector<std::pair<std::string, std::string>> others_before = Pairs(*before);
    std::vector<std::pair<std::string, std::string>> others_after = Pairs(*after);
    const auto extra = [](const auto& p) { return p.first == "KUBELET_EXTRA_ARGS"; };
    others_before.erase(std::remove_if(others_before.begin(), others_before.end(), extra),
                        others_before.end());
    others_after.erase(std::remove_if(others_after.begin(), others_after.end(), extra),
                       others_after.end());
    EXPECT_EQ(others_after, others_before) << text;
  }
}

TEST(EnvironmentFileTest, AnAppendedAssignmentReadsBack) {
  for (const std::string& text : std::vector<std::string>{"", "A=1", "A=1\n"}) {
    const std::string appended = AppendAssignment(text, "KUBELET_EXTRA_ARGS", "--a=\"b c\"");
    absl::StatusOr<EnvironmentFile> file = ParseEnvironmentFile(appended, "f");
    ASSERT_TRUE(file.ok());
    ASSERT_NE(file->Find("KUBELET_EXTRA_ARGS"), nullptr) << appended;
    EXPECT_EQ(file->Find("KUBELET_EXTRA_ARGS")->value, "--a=\"b c\"");
    EXPECT_EQ(file->Find("A") != nullptr, !text.empty());
  }
}

}  // namespace
}  // namespace handoff::systemd
