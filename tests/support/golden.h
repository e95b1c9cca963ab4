// Golden files for tests: a test's output compared byte for byte with a file checked in under
// tests/testdata/, which HANDOFF_UPDATE_GOLDEN=1 rewrites after a deliberate change (then read the
// diff of the golden files before committing it). Header-only; needs GoogleTest.
#ifndef HANDOFF_TESTS_SUPPORT_GOLDEN_H_
#define HANDOFF_TESTS_SUPPORT_GOLDEN_H_

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

#include "gtest/gtest.h"

namespace handoff::test_support {

// Whether HANDOFF_UPDATE_GOLDEN asks the golden tests to rewrite their files (set, and neither
// empty nor "0").
inline bool UpdatingGoldenFiles() {
  const char* value = std::getenv("HANDOFF_UPDATE_GOLDEN");
  return value != nullptr && value[0] != '\0' && std::string(value) != "0";
}

// The command that rewrites the current test's golden files, for failure messages.
inline std::string RegenerateCommand() {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string filter = "<test>";
  if (test != nullptr) filter = std::string(test->test_suite_name()) + "." + test->name();
  return "HANDOFF_UPDATE_GOLDEN=1 ctest --test-dir <build> -R '" + filter + "'";
}

// Expects the file at `path` to hold exactly `actual`; a missing or different file fails the test,
// naming the file and how to regenerate it. When UpdatingGoldenFiles(), writes `actual` to `path`
// instead (creating its directories) and fails only if it cannot.
inline void ExpectGolden(const std::string& path, const std::string& actual) {
  if (UpdatingGoldenFiles()) {
    std::error_code error;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << actual;
    out.close();
    EXPECT_TRUE(!error && out) << "cannot write golden file " << path
                               << (error ? ": " + error.message() : std::string());
    return;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "golden file " << path << " is missing; write it with `" << RegenerateCommand()
                  << "` and review it before committing it";
    return;
  }
  std::ostringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(expected.str(), actual)
      << "golden file " << path << " differs from the output; if the change is intended, "
      << "rewrite it with `" << RegenerateCommand() << "` and review the diff before committing it";
}

}  // namespace handoff::test_support

#endif  // HANDOFF_TESTS_SUPPORT_GOLDEN_H_
