// Test helper: whether this machine can run a sandbox cluster on the real components. When it
// cannot, the test is skipped with the reason, or fails with it under HANDOFF_REQUIRE_REAL=1 (CI).
#ifndef HANDOFF_TESTS_REAL_REQUIRE_COMPONENTS_H_
#define HANDOFF_TESTS_REAL_REQUIRE_COMPONENTS_H_

#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "rehearsal/real/components.h"

namespace handoff::sandbox::testing {

// `required`: the components the cluster runs (tests/real/components.sh builds them); `cluster`
// names it in the reason ("the kubeadm cluster needs root").
inline bool CanRunOnRealComponents(const std::vector<std::string_view>& required,
                                   const std::string& cluster) {
  absl::StatusOr<real::Components> components =
      real::FindComponents(real::ProcessEnvironment(), required);
  std::string missing;
  if (!components.ok()) missing = std::string(components.status().message());
  if (missing.empty() && geteuid() != 0) missing = cluster + " needs root";
  if (missing.empty()) return true;
  const char* require = getenv("HANDOFF_REQUIRE_REAL");
  if (require != nullptr && std::string(require) == "1") {
    ADD_FAILURE() << missing;
  } else {
    GTEST_LOG_(INFO) << "skipped: " << missing;
  }
  return false;
}

}  // namespace handoff::sandbox::testing

#endif  // HANDOFF_TESTS_REAL_REQUIRE_COMPONENTS_H_
