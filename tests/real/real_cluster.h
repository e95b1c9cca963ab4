// Test helper: one real control plane (etcd + kube-apiserver 1.26, rehearsal/sandbox/real) per
// test binary, started on first use and stopped when the binary's tests end. Without the real
// components a test calling HANDOFF_REAL_CLUSTER_OR_SKIP() is skipped with the reason, or fails
// with it when HANDOFF_REQUIRE_REAL=1 (CI). A control plane that is there but does not start is
// always a failure.
#ifndef HANDOFF_TESTS_REAL_REAL_CLUSTER_H_
#define HANDOFF_TESTS_REAL_REAL_CLUSTER_H_

#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/system/clock.h"
#include "gtest/gtest.h"
#include "rehearsal/real/components.h"
#include "rehearsal/real/control_plane.h"

namespace handoff::testing {

class RealCluster : public ::testing::Environment {
 public:
  // The shared control plane, started on the first call; std::nullopt-like errors:
  // FailedPrecondition when the components are missing, anything else when it did not start.
  static absl::StatusOr<sandbox::real::RealControlPlane*> Get() {
    RealCluster& self = Instance();
    if (!self.started_) {
      self.started_ = true;
      self.status_ = self.Start();
    }
    if (!self.status_.ok()) return self.status_;
    return self.plane_.get();
  }

  static bool RequireReal() {
    const char* value = getenv("HANDOFF_REQUIRE_REAL");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }

  void TearDown() override {
    plane_.reset();
    if (!work_dir_.empty() && getenv("HANDOFF_KEEP_REAL_LOGS") == nullptr) {
      std::error_code ignored;
      std::filesystem::remove_all(work_dir_, ignored);
    }
  }

 private:
  static RealCluster& Instance() {
    // gtest owns the environment once added, and tears it down after the last test.
    static RealCluster* instance = [] {
      auto* created = new RealCluster();
      ::testing::AddGlobalTestEnvironment(created);
      return created;
    }();
    return *instance;
  }

  absl::Status Start() {
    absl::StatusOr<sandbox::real::Components> components = sandbox::real::FindComponents(
        sandbox::real::ProcessEnvironment(),
        {sandbox::real::kEtcd, sandbox::real::kKubeApiserver});
    if (!components.ok()) return components.status();
    char pattern[] = "/tmp/handoff-real-XXXXXX";
    if (mkdtemp(pattern) == nullptr) return absl::InternalError("mkdtemp failed");
    work_dir_ = pattern;
    sandbox::real::ControlPlaneOptions options;
    options.dir = work_dir_ + "/control-plane";
    options.components = *components;
    absl::StatusOr<std::unique_ptr<sandbox::real::RealControlPlane>> plane =
        sandbox::real::RealControlPlane::Start(options);
    if (!plane.ok()) {
      // Keep the logs the error names.
      work_dir_.clear();
      return absl::Status(plane.status().code() == absl::StatusCode::kFailedPrecondition
                              ? absl::StatusCode::kInternal
                              : plane.status().code(),
                          plane.status().message());
    }
    plane_ = *std::move(plane);
    return absl::OkStatus();
  }

  bool started_ = false;
  absl::Status status_;
  std::string work_dir_;
  std::unique_ptr<sandbox::real::RealControlPlane> plane_;
};

}  // namespace handoff::testing

// In a test body or fixture SetUp: declares `real_cluster` (RealControlPlane&), or skips/fails.
#define HANDOFF_REAL_CLUSTER_OR_SKIP(real_cluster)                                           \
  absl::StatusOr<::handoff::sandbox::real::RealControlPlane*> real_cluster##_or =            \
      ::handoff::testing::RealCluster::Get();                                                \
  if (!real_cluster##_or.ok()) {                                                             \
    if (real_cluster##_or.status().code() != absl::StatusCode::kFailedPrecondition ||        \
        ::handoff::testing::RealCluster::RequireReal()) {                                    \
      FAIL() << real_cluster##_or.status().message();                                        \
    }                                                                                        \
    GTEST_SKIP() << real_cluster##_or.status().message();                                    \
  }                                                                                          \
  ::handoff::sandbox::real::RealControlPlane& real_cluster = **real_cluster##_or

#endif  // HANDOFF_TESTS_REAL_REAL_CLUSTER_H_
