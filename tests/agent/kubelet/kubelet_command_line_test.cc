#include "agent/kubelet/kubelet_command_line.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/systemd/kubelet_layouts.h"
#include "tests/support/memory_file_system.h"

namespace handoff {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using systemd::CommandWord;
using systemd::testing::KubeletLayout;
using systemd::testing::KubeletLayouts;

KubeletUnit UnitOf(const std::map<std::string, std::string>& files) {
  MemoryFileSystem fs;
  for (const auto& [path, text] : files) fs.SetFile(path, text);
  KubeletUnit unit;
  unit.unit_files = *systemd::FindUnitFiles(fs, "kubelet.service");
  unit.specifiers = {"ip-10-0-1-10.ec2.internal", "kubelet.service"};
  for (const auto& [path, text] : files) {
    if (!StrContains(path, "/systemd/")) unit.environment[path] = text;
  }
  return unit;
}

std::vector<CommandWord> Words(const std::vector<std::string>& texts) {
  std::vector<CommandWord> words;
  for (const std::string& text : texts) {
    words.push_back(CommandWord{text, "", {"unit", 1}, -1});
  }
  return words;
}

std::vector<std::string> Names(const KubeletCommandLine& line) {
  std::vector<std::string> names;
  for (const KubeletFlag& flag : line.flags) {
    names.push_back(StrCat(flag.name, flag.value ? "=" + *flag.value : ""));
  }
  return names;
}

TEST(KubeletCommandLineTest, ReadsTheFormsPflagReads) {
  absl::StatusOr<KubeletCommandLine> line = ParseKubeletCommandLine(
      Words({"/usr/bin/kubelet", "--cloud-provider", "aws", "--fail-swap-on", "--node-ip",
             "--v=2", "-v", "4", "--register-node=false", "--version", "--", "ignored"}));
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->program, "/usr/bin/kubelet");
  // A flag that is no boolean takes the next word, even one that starts with "--".
  EXPECT_THAT(Names(*line), ElementsAre("cloud-provider=aws", "fail-swap-on", "node-ip=--v=2",
                                        "v=4", "register-node=false", "version"));
  ASSERT_NE(line->Effective("v"), nullptr);
  EXPECT_EQ(line->Effective("v")->value, "4");
  EXPECT_EQ(line->Effective("hostname-override"), nullptr);
}

TEST(KubeletCommandLineTest, TheLastOccurrenceIsEffective) {
  absl::StatusOr<KubeletCommandLine> line = ParseKubeletCommandLine(
      Words({"kubelet", "--cloud-provider=aws", "--v=2", "--cloud-provider=external"}));
  ASSERT_TRUE(line.ok());
  EXPECT_EQ(line->Effective("cloud-provider")->value, "external");
  EXPECT_EQ(line->All("cloud-provider").size(), 2u);
}

TEST(KubeletCommandLineTest, RefusesWhatTheKubeletWouldRefuse) {
  EXPECT_THAT(ParseKubeletCommandLine(Words({"kubelet", "--v=2", "--cloud-provider"}))
                  .status()
                  .message(),
              HasSubstr("--cloud-provider is last and has no value"));
  EXPECT_THAT(ParseKubeletCommandLine(Words({"kubelet", "--fail-swap-on", "false"}))
                  .status()
                  .message(),
              HasSubstr("unit line 1: \"false\" is no flag"));
}

TEST(KubeletCommandLineTest, EachLayoutsCloudProviderAndWhereItIsWritten) {
  const std::vector<std::string> expected = {
      "--cloud-provider=aws (KUBELET_KUBEADM_ARGS, /var/lib/kubelet/kubeadm-flags.env line 1)",
      "--cloud-provider=aws (KUBELET_EXTRA_ARGS, /etc/default/kubelet line 1)",
      "--cloud-provider=external (KUBELET_EXTRA_ARGS, /etc/sysconfig/kubelet line 1)",
      "--cloud-provider=aws (KUBELET_KUBEADM_ARGS, /var/lib/kubelet/kubeadm-flags.env line 1)",
      "--cloud-provider=aws (/etc/systemd/system/kubelet.service.d/90-aws.conf line 3)",
      "--cloud-provider=aws --v=4 (FLAGS, /etc/kubelet.env line 1)",
  };
  const std::vector<KubeletLayout> layouts = KubeletLayouts();
  ASSERT_EQ(layouts.size(), expected.size());
  for (size_t i = 0; i < layouts.size(); ++i) {
    absl::StatusOr<EffectiveKubelet> kubelet = ReadEffectiveKubelet(UnitOf(layouts[i].files));
    ASSERT_TRUE(kubelet.ok()) << layouts[i].name << ": " << kubelet.status();
    const KubeletFlag* provider = kubelet->flags.Effective("cloud-provider");
    ASSERT_NE(provider, nullptr) << layouts[i].name;
    EXPECT_EQ(DescribeFlag(*provider), expected[i]) << layouts[i].name;
  }
}

TEST(KubeletCommandLineTest, AnExportedVariableNeverReachesTheKubelet) {
  std::map<std::string, std::string> files = KubeletLayouts()[1].files;
  files["/etc/default/kubelet"] = "export KUBELET_EXTRA_ARGS=--cloud-provider=external\n";
  absl::StatusOr<EffectiveKubelet> kubelet = ReadEffectiveKubelet(UnitOf(files));
  EXPECT_THAT(kubelet.status().message(),
              HasSubstr("/etc/default/kubelet line 1: \"export KUBELET_EXTRA_ARGS\" is no "
                        "variable name, so systemd ignores the line; the kubelet's command line "
                        "uses $KUBELET_EXTRA_ARGS"));
}

// The move's edit on every layout where handoff may write: the kubelet then runs external,
// every file that named the flag names external, and nothing else changes.
TEST(KubeletCommandLineTest, SettingTheFlagWritesItWhereItTakesEffect) {
  const std::vector<KubeletLayout> layouts = KubeletLayouts();
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(layouts[i].name);
    KubeletUnit unit = UnitOf(layouts[i].files);
    absl::StatusOr<std::map<std::string, std::string>> written =
        SetKubeletFlag(unit, "cloud-provider", "external");
    ASSERT_TRUE(written.ok()) << written.status();
    for (const auto& [path, text] : *written) unit.environment[path] = text;
    absl::StatusOr<EffectiveKubelet> after = ReadEffectiveKubelet(unit);
    ASSERT_TRUE(after.ok()) << after.status();
    for (const KubeletFlag* flag : after->flags.All("cloud-provider")) {
      EXPECT_EQ(flag->value, "external") << DescribeFlag(*flag);
    }
    EXPECT_EQ(after->flags.Effective("cloud-provider")->value, "external");
  }
  // The flag in /etc/default/kubelet: that file is written, kubeadm-flags.env is not.
  absl::StatusOr<std::map<std::string, std::string>> written =
      SetKubeletFlag(UnitOf(layouts[1].files), "cloud-provider", "external");
  ASSERT_TRUE(written.ok());
  EXPECT_THAT(*written, ElementsAre(::testing::Pair(
                            "/etc/default/kubelet",
                            "KUBELET_EXTRA_ARGS=\"--cloud-provider=external "
                            "--node-labels='a=b'\"\n")));
}

TEST(KubeletCommandLineTest, RefusesToSetAFlagWrittenInAUnitFile) {
  const std::vector<KubeletLayout> layouts = KubeletLayouts();
  EXPECT_THAT(SetKubeletFlag(UnitOf(layouts[4].files), "cloud-provider", "external")
                  .status()
                  .message(),
              HasSubstr("--cloud-provider=aws (/etc/systemd/system/kubelet.service.d/90-aws.conf "
                        "line 3) is written in the unit's ExecStart line"));
  EXPECT_THAT(SetKubeletFlag(UnitOf(layouts[5].files), "cloud-provider", "external")
                  .status()
                  .message(),
              HasSubstr("through ${FLAGS}"));
}

TEST(KubeletCommandLineTest, ANewFlagGoesToKubeadmsVariableAndARemovedOneLeavesNoTrace) {
  std::map<std::string, std::string> files = KubeletLayouts()[0].files;
  KubeletUnit unit = UnitOf(files);
  absl::StatusOr<std::map<std::string, std::string>> added =
      SetKubeletFlag(unit, "hostname-override", "ip-10-0-1-10.ec2.internal");
  ASSERT_TRUE(added.ok()) << added.status();
  ASSERT_EQ(added->count("/var/lib/kubelet/kubeadm-flags.env"), 1u);
  EXPECT_THAT(added->at("/var/lib/kubelet/kubeadm-flags.env"),
              HasSubstr("--cloud-provider=aws --hostname-override=ip-10-0-1-10.ec2.internal\"\n"));

  absl::StatusOr<std::map<std::string, std::string>> removed =
      SetKubeletFlag(unit, "cloud-provider", std::nullopt);
  ASSERT_TRUE(removed.ok()) << removed.status();
  for (const auto& [path, text] : *removed) unit.environment[path] = text;
  absl::StatusOr<EffectiveKubelet> after = ReadEffectiveKubelet(unit);
  ASSERT_TRUE(after.ok());
  EXPECT_THAT(after->flags.All("cloud-provider"), IsEmpty());
  EXPECT_THAT(unit.environment["/var/lib/kubelet/kubeadm-flags.env"],
              HasSubstr("pause:3.9\"\n"));
}

TEST(KubeletCommandLineTest, ASplitFlagIsRewrittenWithItsValue) {
  std::map<std::string, std::string> files = KubeletLayouts()[1].files;
  files["/etc/default/kubelet"] = "KUBELET_EXTRA_ARGS=\"--cloud-provider aws --v=2\"\n";
  KubeletUnit unit = UnitOf(files);
  absl::StatusOr<std::map<std::string, std::string>> written =
      SetKubeletFlag(unit, "cloud-provider", "external");
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->at("/etc/default/kubelet"),
            "KUBELET_EXTRA_ARGS=\"--cloud-provider=external --v=2\"\n");
}

}  // namespace
}  // namespace handoff
