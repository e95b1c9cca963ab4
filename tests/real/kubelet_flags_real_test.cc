// The kubelet's boolean flags as handoff knows them (agent/kubelet/kubelet_command_line.h)
// against the real kubelet v1.26's own: which of the flags `kubelet --help` lists take no
// value. pflag prints a type after every flag that takes one ("--cloud-provider string") and
// none after a boolean, except that a word in backquotes in the usage replaces the type
// ("--seccomp-default RuntimeDefault"); such a flag is asked directly, --name=notabool --help
// failing with strconv.ParseBool exactly for a boolean.
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "agent/kubelet/kubelet_command_line.h"
#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/real/components.h"

namespace handoff {
namespace {

std::string Output(const std::string& command) {
  FILE* pipe = ::popen(StrCat(command, " 2>&1").c_str(), "r");
  if (pipe == nullptr) return "";
  std::string output;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  ::pclose(pipe);
  return output;
}

TEST(KubeletFlagsRealTest, TheBooleanFlagsAreTheRealKubeletsOwn) {
  absl::StatusOr<sandbox::real::Components> components = sandbox::real::FindComponents(
      sandbox::real::ProcessEnvironment(), {sandbox::real::kKubelet});
  if (!components.ok()) {
    const char* require = getenv("HANDOFF_REQUIRE_REAL");
    if (require != nullptr && std::string(require) == "1") FAIL() << components.status();
    GTEST_SKIP() << components.status();
  }
  const std::string kubelet = components->Binary(sandbox::real::kKubelet);
  const std::string help = Output(StrCat(kubelet, " --help"));
  const std::regex line(R"(^\s+(?:-\w, )?--([\w-]+)(?: (\S+))?(?:\s{2,}|\s*$))");
  int listed = 0;
  std::vector<std::string> mismatches;
  for (std::string_view text : StrSplit(help, "\n")) {
    std::smatch match;
    const std::string copy(text);
    if (!std::regex_search(copy, match, line)) continue;
    ++listed;
    const std::string name = match[1];
    const std::string type = match[2];
    bool boolean = type.empty();
    if (!type.empty() && std::isupper(static_cast<unsigned char>(type[0])) != 0) {
      boolean = StrContains(Output(StrCat(kubelet, " --", name, "=notabool --help")),
                            "strconv.ParseBool");
    }
    if (boolean != IsKubeletBooleanFlag(name)) {
      mismatches.push_back(StrCat("--", name, " is ", boolean ? "" : "not ", "a boolean"));
    }
  }
  EXPECT_GT(listed, 100) << help.substr(0, 2000);
  EXPECT_THAT(mismatches, ::testing::IsEmpty()) << components->VersionOf(sandbox::real::kKubelet);
}

}  // namespace
}  // namespace handoff
