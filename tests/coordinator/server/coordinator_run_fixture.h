// Test helper: a fixture that runs handoff-coordinator's main in the test's process, in a fresh
// directory, with its stderr captured. It puts back the default logger, which the coordinator
// replaces with its own.
#ifndef HANDOFF_TESTS_COORDINATOR_SERVER_COORDINATOR_RUN_FIXTURE_H_
#define HANDOFF_TESTS_COORDINATOR_SERVER_COORDINATOR_RUN_FIXTURE_H_

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/server/coordinator_main.h"
#include "gtest/gtest.h"
#include "spdlog/spdlog.h"

namespace handoff::server::testing {

class CoordinatorRunTest : public ::testing::Test {
 protected:
  // `name` starts the directory's name.
  explicit CoordinatorRunTest(std::string name) : name_(std::move(name)) {}

  void SetUp() override {
    std::string pattern = std::filesystem::path(::testing::TempDir()) / (name_ + "-XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    previous_logger_ = spdlog::default_logger();
  }
  void TearDown() override {
    spdlog::set_default_logger(previous_logger_);
    std::filesystem::remove_all(dir_);
  }

  // The exit code of `handoff-coordinator <args>`; its stderr in *err.
  int Run(std::vector<std::string> args, std::string* err) {
    args.insert(args.begin(), "handoff-coordinator");
    std::vector<const char*> argv;
    for (const std::string& arg : args) argv.push_back(arg.c_str());
    ::testing::internal::CaptureStderr();
    const int code = RunCoordinator(static_cast<int>(argv.size()), argv.data());
    *err = ::testing::internal::GetCapturedStderr();
    return code;
  }

  std::string dir_;

 private:
  std::string name_;
  std::shared_ptr<spdlog::logger> previous_logger_;
};

}  // namespace handoff::server::testing

#endif  // HANDOFF_TESTS_COORDINATOR_SERVER_COORDINATOR_RUN_FIXTURE_H_
