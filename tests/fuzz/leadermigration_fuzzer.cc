// LeaderMigrationConfiguration files: Lint (with and without a reader) takes any text, problems
// and ParseAndValidate agree, and what Render writes for a reader passes Lint for that reader with
// the leader name read back.
//
// Input: the first byte picks the reader and its version, the rest is the file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/leadermigration/config.h"
#include "tests/fuzz/fuzz_check.h"

namespace handoff::leadermigration {
namespace {

// Versions across the changes the linter knows about: first Leader Migration (1.21), default
// config (1.22), v1 (1.24), new controller names (1.28), strict decoding (1.32).
constexpr int kMinors[] = {20, 21, 22, 23, 24, 27, 28, 31, 32, 33};

std::string ProblemsText(const LintResult& result) {
  std::string text;
  for (const Problem& problem : result.problems) text += FormatProblem("f", problem) + "\n";
  return text;
}

void CheckRender(Component reader, const KubeVersion& version, uint8_t flags,
                 const std::string& leader_name) {
  RenderOptions render;
  render.reader = reader;
  render.reader_version = version;
  render.wildcard = (flags & 1) != 0;
  render.include_nodeipam = (flags & 2) != 0;
  render.leader_name = leader_name;
  absl::StatusOr<std::string> text = Render(render);
  if (!version.AtLeast(1, 21)) {
    FUZZ_CHECK(!text.ok(), "Render before 1.21 succeeded");
    return;
  }
  FUZZ_CHECK(text.ok(), text.status().message());
  const LintResult lint = Lint(*text, LintOptions{reader, version});
  FUZZ_CHECK(lint.problems.empty(), ProblemsText(lint) + "rendered:\n" + *text);
  FUZZ_CHECK(lint.config.has_value(), *text);
  FUZZ_CHECK(lint.config->leader_name == leader_name, *text);
  FUZZ_CHECK(!ControllersFor(*lint.config, reader).empty(), *text);
}

void FuzzOne(std::string_view input) {
  if (input.empty()) return;
  const uint8_t selector = static_cast<uint8_t>(input.front());
  const std::string_view text = input.substr(1);

  LintOptions options;
  if ((selector & 0x03) == 1) options.component = Component::kKubeControllerManager;
  if ((selector & 0x03) == 2) options.component = Component::kCloudControllerManager;
  if ((selector & 0x04) != 0) {
    options.version = KubeVersion{1, kMinors[(selector >> 4) % std::size(kMinors)], 0};
  }
  const LintResult result = Lint(text, options);
  for (const Problem& problem : result.problems) {
    FUZZ_CHECK(problem.line >= 0, FormatProblem("f", problem));
    FUZZ_CHECK(!problem.message.empty(), FormatProblem("f", problem));
  }
  absl::StatusOr<Config> config = ParseAndValidate(text, options);
  FUZZ_CHECK(config.ok() == (result.problems.empty() && result.config.has_value()),
             "ParseAndValidate disagrees with Lint: " + ProblemsText(result));
  if (result.config) {
    for (Component component :
         {Component::kKubeControllerManager, Component::kCloudControllerManager}) {
      (void)ControllersFor(*result.config, component);
    }
    (void)FindApiVersion(result.config->api_version);
  }

  const Component reader = (selector & 0x08) != 0 ? Component::kCloudControllerManager
                                                   : Component::kKubeControllerManager;
  const KubeVersion version{1, kMinors[(selector >> 4) % std::size(kMinors)], 0};
  // A name read from the file, when it can name a Lease, must survive Render → Lint.
  std::string leader_name(kDefaultLeaderName);
  if (config.ok() && IsValidLeaseName(config->leader_name)) leader_name = config->leader_name;
  CheckRender(reader, version, selector, leader_name);
  if (IsValidLeaseName(text)) CheckRender(reader, version, selector, std::string(text));
  (void)PlainScalarIsString(text);
  (void)DefaultConfig(reader, version);
}

}  // namespace
}  // namespace handoff::leadermigration

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  handoff::leadermigration::FuzzOne(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
