#include "common/systemd/unit_file.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "common/base/strings.h"
#include "tests/common/systemd/kubelet_layouts.h"
#include "tests/support/memory_file_system.h"

namespace handoff::systemd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::KubeletLayout;
using testing::KubeletLayouts;

const Specifiers kSpecifiers{"ip-10-0-1-10.ec2.internal",
                             "kubelet.service"};

struct Loaded {
  ServiceCommand command;
  ExpandedCommand expanded;
};

absl::StatusOr<Loaded> Load(const std::map<std::string, std::string>& files) {
  MemoryFileSystem fs;
  for (const auto& [path, text] : files) fs.SetFile(path, text);
  absl::StatusOr<std::vector<UnitFileText>> units = FindUnitFiles(fs, "kubelet.service");
  if (!units.ok()) return units.status();
  absl::StatusOr<ServiceCommand> command = MergeServiceCommand(*units, kSpecifiers);
  if (!command.ok()) return command.status();
  std::map<std::string, std::string> texts;
  for (const EnvironmentFileSetting& setting : command->environment_files) {
    if (auto it = files.find(setting.path); it != files.end()) texts[setting.path] = it->second;
  }
  absl::StatusOr<ServiceEnvironment> environment = BuildEnvironment(*command, texts);
  if (!environment.ok()) return environment.status();
  absl::StatusOr<ExpandedCommand> expanded = ExpandCommand(*command, *environment);
  if (!expanded.ok()) return expanded.status();
  return Loaded{std::move(*command), std::move(*expanded)};
}

std::vector<std::string> Args(const ExpandedCommand& expanded) {
  std::vector<std::string> args;
  for (size_t i = 1; i < expanded.argv.size(); ++i) args.push_back(expanded.argv[i].text);
  return args;
}

TEST(UnitFileTest, TheKubeletStartsWithTheFlagsOfEachPackageLayout) {
  const std::vector<KubeletLayout> layouts = KubeletLayouts();
  ASSERT_GE(layouts.size(), 6u);
  for (const KubeletLayout& layout : layouts) {
    absl::StatusOr<Loaded> loaded = Load(layout.files);
    ASSERT_TRUE(loaded.ok()) << layout.name << ": " << loaded.status();
    EXPECT_EQ(loaded->command.fragment, layout.expected_fragment) << layout.name;
    EXPECT_EQ(loaded->command.drop_ins, layout.expected_drop_ins) << layout.name;
    ASSERT_FALSE(loaded->expanded.argv.empty()) << layout.name;
    EXPECT_EQ(loaded->expanded.argv[0].text, "/usr/bin/kubelet") << layout.name;
    EXPECT_EQ(Args(loaded->expanded), layout.expected_args) << layout.name;
  }
}

TEST(UnitFileTest, EachWordNamesTheFileItWasWrittenIn) {
  absl::StatusOr<Loaded> loaded = Load(KubeletLayouts()[1].files);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  std::map<std::string, std::string> where;
  for (const CommandWord& word : loaded->expanded.argv) {
    where[word.text] = StrCat(word.variable, " @ ", Describe(word.origin));
  }
  EXPECT_EQ(where["--cloud-provider=aws"], "KUBELET_EXTRA_ARGS @ /etc/default/kubelet line 1");
  EXPECT_EQ(where["--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock"],
            "KUBELET_KUBEADM_ARGS @ /var/lib/kubelet/kubeadm-flags.env line 1");
  EXPECT_EQ(where["--config=/var/lib/kubelet/config.yaml"],
            "KUBELET_CONFIG_ARGS @ /usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf "
            "line 4");
  EXPECT_EQ(where["/usr/bin/kubelet"],
            " @ /usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf line 11");
  EXPECT_THAT(loaded->expanded.unset_variables, IsEmpty());
}

TEST(UnitFileTest, AVariableNoFileSetsExpandsToNothing) {
  std::map<std::string, std::string> files = KubeletLayouts()[1].files;
  files.erase("/etc/default/kubelet");  // optional: '-'
  absl::StatusOr<Loaded> loaded = Load(files);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_THAT(loaded->expanded.unset_variables, ElementsAre("KUBELET_EXTRA_ARGS"));
  EXPECT_EQ(Args(loaded->expanded).back(),
            "--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock");
}

TEST(UnitFileTest, SpecifiersAndEscapesOfTheCommandLine) {
  absl::StatusOr<Loaded> loaded = Load(
      {{"/etc/systemd/system/kubelet.service",
        "[Service]\nEnvironment=A=x\nExecStart=-/usr/bin/kubelet --hostname-override=%H %%H "
        "'it''s' a\\sb \"${A}y\" $$A --x=$A\n"}});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_THAT(Args(loaded->expanded),
              ElementsAre("--hostname-override=ip-10-0-1-10.ec2.internal", "%H", "its", "a b",
                          "xy", "$A", "--x=$A"));
}

TEST(UnitFileTest, RefusesWhatSystemdRefusesOrWhatCannotBeTold) {
  const std::string unit = "/usr/lib/systemd/system/kubelet.service";
  const std::string drop_in = "/etc/systemd/system/kubelet.service.d/20-x.conf";
  struct Refusal {
    std::map<std::string, std::string> files;
    std::string message;
  };
  const std::vector<Refusal> refusals = {
      {{}, "no kubelet.service in /etc/systemd/system"},
      {{{unit, "[Service]\nExecStart=/usr/bin/kubelet\n"},
        {drop_in, "[Service]\nExecStart=/usr/bin/kubelet --v=2\n"}},
       drop_in + " line 2: a second ExecStart= (the first is at " + unit + " line 2)"},
      {{{unit, "[Service]\nRestart=always\n"}}, "no ExecStart= is left"},
      {{{unit, "[Service]\nExecStart=/usr/bin/kubelet --name=%m\n"}},
       unit + " line 2: the specifier %m"},
      {{{unit, "[Service]\nExecStart=/usr/bin/kubelet a\\x41\n"}}, "the escape \\x"},
      {{{unit, "[Service]\nUnsetEnvironment=KUBELET_EXTRA_ARGS\nExecStart=/usr/bin/kubelet\n"}},
       unit + " line 2: UnsetEnvironment= makes"},
      {{{unit, "[Service]\nEnvironmentFile=/etc/kubelet/*.env\nExecStart=/usr/bin/kubelet\n"}},
       "is a wildcard"},
      {{{unit, "[Service]\nEnvironmentFile=/etc/kubelet.env\nExecStart=/usr/bin/kubelet\n"}},
       "/etc/kubelet.env does not exist, and " + unit + " line 2 needs it"},
      {{{unit, ""}}, "is empty, so systemd takes kubelet.service as masked"},
  };
  for (const Refusal& refusal : refusals) {
    absl::StatusOr<Loaded> loaded = Load(refusal.files);
    EXPECT_THAT(loaded.status().message(), HasSubstr(refusal.message)) << refusal.message;
  }
}

TEST(UnitFileTest, ResetsAndOrderOfTheSettings) {
  absl::StatusOr<Loaded> loaded = Load(
      {{"/usr/lib/systemd/system/kubelet.service",
        "[Service]\nEnvironment=A=1 B=2\nEnvironmentFile=-/a.env\nExecStart=/usr/bin/kubelet\n"},
       {"/usr/lib/systemd/system/kubelet.service.d/10-a.conf",
        "[Service]\nEnvironment=\nEnvironment=\"C=3 4\" bad-name=5\nEnvironmentFile=\n"
        "EnvironmentFile=-/b.env\nEnvironmentFile=relative.env\n"},
       // A type-wide drop-in: sorted among the unit's own by name.
       {"/etc/systemd/system/service.d/05-all.conf", "[Service]\nEnvironment=D=0\n"},
       {"/a.env", "A=from-a\n"},
       {"/b.env", "C=from-b\n"}});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_THAT(loaded->command.drop_ins,
              ElementsAre("/etc/systemd/system/service.d/05-all.conf",
                          "/usr/lib/systemd/system/kubelet.service.d/10-a.conf"));
  std::vector<std::string> environment;
  for (const EnvironmentSetting& setting : loaded->command.environment) {
    environment.push_back(StrCat(setting.key, "=", setting.value));
  }
  EXPECT_THAT(environment, ElementsAre("C=3 4"));
  ASSERT_EQ(loaded->command.environment_files.size(), 1u);
  EXPECT_EQ(loaded->command.environment_files[0].path, "/b.env");
  EXPECT_TRUE(loaded->command.environment_files[0].optional);
}

}  // namespace
}  // namespace handoff::systemd
