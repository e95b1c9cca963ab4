// The unit merge of common/systemd against the real systemd's: for each layout, the files
// systemd loads, in its order, its Environment= and EnvironmentFile= lists and the ExecStart
// command line it stores, as `systemd-analyze --root=DIR verify` prints them (at debug level it
// dumps the loaded unit). Variables are expanded only when systemd starts the process, which
// needs a running manager: that part is read from systemd's source (unit_file.h).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "common/fs/file_system.h"
#include "common/systemd/unit_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/systemd/kubelet_layouts.h"

namespace handoff::systemd {
namespace {

using testing::KubeletLayout;
using testing::KubeletLayouts;

struct Dump {
  std::string fragment;
  std::vector<std::string> drop_ins;
  std::vector<std::string> environment;
  std::vector<std::string> environment_files;
  std::vector<std::string> exec_start;
};

// A word of systemd's "Command Line:" dump: plain, or in double quotes with C escapes.
std::vector<std::string> SplitDumpedCommand(std::string_view line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    if (i == line.size()) break;
    std::string word;
    if (line[i] == '"') {
      for (++i; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] == '\\' && i + 1 < line.size()) {
          const char next = line[++i];
          word.push_back(next == 't' ? '\t' : next == 'n' ? '\n' : next);
        } else {
          word.push_back(line[i]);
        }
      }
      ++i;
    } else {
      while (i < line.size() && line[i] != ' ') word.push_back(line[i++]);
    }
    words.push_back(word);
  }
  return words;
}

std::string StripRoot(const std::string& path, const std::string& root) {
  return StartsWith(path, root) ? path.substr(root.size()) : path;
}

// Runs systemd-analyze on `root`; nullopt (with the reason in `why`) when it cannot.
std::optional<Dump> SystemdDump(const std::string& root, std::string& why) {
  const std::string command = StrCat("SYSTEMD_LOG_LEVEL=debug systemd-analyze --root=", root,
                                     " verify kubelet.service 2>&1");
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    why = "popen failed";
    return std::nullopt;
  }
  std::string output;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  ::pclose(pipe);
  Dump dump;
  bool in_unit = false;
  bool in_exec_start = false;
  for (std::string_view line : StrSplit(output, "\n")) {
    std::string_view text = line.substr(std::min(line.find_first_not_of('\t'), line.size()));
    if (StartsWith(text, "-> Unit kubelet.service:")) in_unit = true;
    if (!in_unit) continue;
    auto value = [&](std::string_view key) { return std::string(text.substr(key.size())); };
    if (StartsWith(text, "Fragment Path: ")) {
      dump.fragment = StripRoot(value("Fragment Path: "), root);
    }
    if (StartsWith(text, "DropIn Path: ")) {
      dump.drop_ins.push_back(StripRoot(value("DropIn Path: "), root));
    }
    if (StartsWith(text, "Environment: ")) dump.environment.push_back(value("Environment: "));
    if (StartsWith(text, "EnvironmentFile: ")) {
      dump.environment_files.push_back(value("EnvironmentFile: "));
    }
    if (StartsWith(text, "-> ExecStart:")) in_exec_start = true;
    if (in_exec_start && StartsWith(text, "Command Line: ") && dump.exec_start.empty()) {
      dump.exec_start = SplitDumpedCommand(text.substr(14));
    }
  }
  if (!in_unit) {
    why = StrCat("systemd-analyze printed no unit dump:\n", output.substr(0, 2000));
    return std::nullopt;
  }
  return dump;
}

std::vector<KubeletLayout> Layouts() {
  std::vector<KubeletLayout> layouts = KubeletLayouts();
  layouts.push_back(
      {"resets, a type-wide drop-in, the same name in two directories",
       {{"/usr/lib/systemd/system/kubelet.service",
         "[Service]\nEnvironment=A=1 B=2\nEnvironmentFile=-/a.env\nExecStart=/usr/bin/kubelet\n"},
        {"/usr/lib/systemd/system/kubelet.service.d/10-a.conf",
         "[Service]\nEnvironment=\nEnvironment=\"C=3 4\" bad-name=5 'Q=a b'\nEnvironmentFile=\n"
         "EnvironmentFile=-/b.env\n"},
        {"/etc/systemd/system/service.d/05-all.conf", "[Service]\nEnvironment=D=0\n"},
        {"/etc/systemd/system/service.d/10-a.conf", "[Service]\nEnvironment=E=lost\n"},
        {"/usr/lib/systemd/system/service.d/07-b.conf", "[Service]\nEnvironment=F=7\n"},
        {"/etc/systemd/system/kubelet.service.d/07-b.conf", "[Service]\nEnvironment=G=8\n"}},
       {},
       "",
       {}});
  layouts.push_back(
      {"specifiers, escapes, quotes and a continuation",
       {{"/etc/systemd/system/kubelet.service",
         "[Service]\nEnvironment=A=x\n# a comment\nExecStart=-/usr/bin/kubelet --h=%H %%H \\\n"
         "  'it''s' a\\sb \"${A}y\" $$A --x=$A --q=\"a b\" a\\tb\n"}},
       {},
       "",
       {}});
  layouts.push_back(
      {"a line continued at the end of the file, without a newline",
       {{"/etc/systemd/system/kubelet.service",
         "[Service]\nExecStart=/usr/bin/kubelet --v=2 \\\n --cloud-provider=aws \\"}},
       {},
       "",
       {}});
  return layouts;
}

TEST(RealSystemdTest, TheMergeIsSystemdsForEveryLayout) {
  if (::system("command -v systemd-analyze >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "systemd-analyze is not installed (Debian package systemd; "
                    "packaging/install-deps.sh installs it)";
  }
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  const Specifiers specifiers{host, "kubelet.service"};
  const std::vector<KubeletLayout> layouts = Layouts();
  ASSERT_GE(layouts.size(), 9u);
  for (const KubeletLayout& layout : layouts) {
    SCOPED_TRACE(layout.name);
    std::string root = StrCat(::testing::TempDir(), "systemd-root-XXXXXX");
    ASSERT_NE(::mkdtemp(root.data()), nullptr);
    for (const auto& [path, text] : layout.files) {
      std::filesystem::create_directories(std::filesystem::path(root + path).parent_path());
      std::ofstream(root + path) << text;
    }
    // verify checks that the program exists and is executable.
    std::filesystem::create_directories(root + "/usr/bin");
    std::ofstream(root + "/usr/bin/kubelet") << "#!/bin/sh\n";
    std::filesystem::permissions(root + "/usr/bin/kubelet", std::filesystem::perms::owner_all);

    std::string why;
    std::optional<Dump> dump = SystemdDump(root, why);
    ASSERT_TRUE(dump.has_value()) << why;
    ASSERT_FALSE(dump->fragment.empty()) << why;
    ASSERT_FALSE(dump->exec_start.empty()) << why;

    std::unique_ptr<FileSystem> fs = NewPosixFileSystem(root);
    absl::StatusOr<std::vector<UnitFileText>> files = FindUnitFiles(*fs, "kubelet.service");
    ASSERT_TRUE(files.ok()) << files.status();
    absl::StatusOr<ServiceCommand> ours = MergeServiceCommand(*files, specifiers);
    ASSERT_TRUE(ours.ok()) << ours.status();

    EXPECT_EQ(ours->fragment, dump->fragment);
    EXPECT_EQ(ours->drop_ins, dump->drop_ins);
    std::vector<std::string> environment;
    for (const EnvironmentSetting& setting : ours->environment) {
      environment.push_back(StrCat(setting.key, "=", setting.value));
    }
    EXPECT_EQ(environment, dump->environment);
    std::vector<std::string> environment_files;
    for (const EnvironmentFileSetting& setting : ours->environment_files) {
      environment_files.push_back(StrCat(setting.optional ? "-" : "", setting.path));
    }
    EXPECT_EQ(environment_files, dump->environment_files);
    EXPECT_EQ(ours->exec_start, dump->exec_start);
    std::filesystem::remove_all(root);
  }
}

}  // namespace
}  // namespace handoff::systemd
