// Test helper: a fresh directory for the coordinator's database, removed with the object (declare
// it before the store and the controller, so that it outlives them).
#ifndef HANDOFF_TESTS_COORDINATOR_SERVER_TEMP_DATABASE_H_
#define HANDOFF_TESTS_COORDINATOR_SERVER_TEMP_DATABASE_H_

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "coordinator/store/store.h"
#include "gtest/gtest.h"

namespace handoff::server::testing {

class TempDatabase {
 public:
  explicit TempDatabase(const std::string& name) {
    std::string pattern = std::filesystem::path(::testing::TempDir()) / (name + "-XXXXXX");
    EXPECT_NE(mkdtemp(pattern.data()), nullptr) << pattern;
    dir_ = pattern;
  }
  ~TempDatabase() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  TempDatabase(const TempDatabase&) = delete;
  TempDatabase& operator=(const TempDatabase&) = delete;

  // The store in it, opened afresh (after the last one was closed: a coordinator restart); null,
  // with a test failure, when it cannot be opened.
  std::unique_ptr<store::Store> Open() const {
    absl::StatusOr<std::unique_ptr<store::Store>> store =
        store::Store::Open(dir_ + "/coordinator.db");
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

 private:
  std::string dir_;
};

}  // namespace handoff::server::testing

#endif  // HANDOFF_TESTS_COORDINATOR_SERVER_TEMP_DATABASE_H_
