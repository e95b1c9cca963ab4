// handoff-coordinator's --state-dir lock: held by another coordinator, or impossible to take.
// Only refusals run here: they all come before the coordinator serves.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/fs/file_system.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/server/coordinator_run_fixture.h"

namespace handoff::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class CoordinatorStateDirTest : public testing::CoordinatorRunTest {
 protected:
  CoordinatorStateDirTest() : CoordinatorRunTest("coordinator-state-dir") {}

  int Run(std::string* err) {
    const std::string tls = std::string(HANDOFF_TESTDATA_DIR) + "/handoff-tls/";
    return CoordinatorRunTest::Run(
        {"--nodes", "cp-1", "--no-cluster-checks", "--listen", "127.0.0.1:0", "--state-dir",
         dir_ + "/state", "--ca", tls + "ca.crt", "--cert", tls + "coordinator.crt", "--key",
         tls + "coordinator.key"},
        err);
  }
};

TEST_F(CoordinatorStateDirTest, ALockHeldByAnotherProcessNamesAnotherCoordinator) {
  ASSERT_TRUE(std::filesystem::create_directory(dir_ + "/state"));
  std::unique_ptr<FileSystem> fs = NewPosixFileSystem("/");
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> held = fs->TryLock(dir_ + "/state/lock");
  ASSERT_TRUE(held.ok()) << held.status();
  std::string err;
  EXPECT_EQ(Run(&err), 2);
  EXPECT_THAT(err, HasSubstr("another coordinator uses " + dir_ + "/state: " + dir_ +
                             "/state/lock is locked by another process"));
  EXPECT_THAT(err, Not(HasSubstr("handoff-agent")));
}

// The lock file cannot be opened (here a directory is in its place; a read-only state dir fails
// the same way): that is not another coordinator, and the message must not say so.
TEST_F(CoordinatorStateDirTest, ALockFileThatCannotBeOpenedIsNotAnotherCoordinator) {
  ASSERT_TRUE(std::filesystem::create_directories(dir_ + "/state/lock"));
  std::string err;
  EXPECT_EQ(Run(&err), 2);
  EXPECT_THAT(err, HasSubstr("--state-dir " + dir_ + "/state: cannot take its lock file: "));
  EXPECT_THAT(err, HasSubstr(dir_ + "/state/lock"));
  EXPECT_THAT(err, Not(HasSubstr("another coordinator")));
}

}  // namespace
}  // namespace handoff::server
