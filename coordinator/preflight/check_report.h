// The preflight's results as the operator reads them: every check with a name, a verdict, the
// evidence (the objects it looked at, named) and what to do. `handoffctl preflight` prints them
// and the coordinator refuses `start` on a failed one.
#ifndef HANDOFF_COORDINATOR_PREFLIGHT_CHECK_REPORT_H_
#define HANDOFF_COORDINATOR_PREFLIGHT_CHECK_REPORT_H_

#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"

namespace handoff::preflight {

// ok: nothing to do. warn: the check could not see everything it needs, or found something the
// operator should look at that does not stop the move. fail: the move would break something.
enum class Verdict { kOk, kWarn, kFail };

// "ok", "warn", "fail".
std::string_view VerdictName(Verdict verdict);

struct CheckResult {
  std::string name;  // "ebs-csi", "leader-elect", ... (cluster_checks.h lists them)
  Verdict verdict = Verdict::kOk;
  // One line per object looked at or found wrong, each naming it ("PersistentVolume pv-1: ...").
  std::vector<std::string> evidence;
  std::string action;  // what to do; "" for ok
};

// Whether any result is kFail.
bool AnyFailed(const std::vector<CheckResult>& results);

// One block per check:
//   ok    leader-elect      every controller manager elects a leader
//   FAIL  ebs-csi           PersistentVolume pv-1 uses the in-tree EBS plugin (...)
//                           -> install the AWS EBS CSI driver ...
// and a last line counting the verdicts.
std::string FormatText(const std::vector<CheckResult>& results);

// {"checks": [{"name", "verdict", "evidence": [...], "action"}], "failed": n, "warned": n,
//  "ok": n}.
nlohmann::ordered_json ToJson(const std::vector<CheckResult>& results);

}  // namespace handoff::preflight

#endif  // HANDOFF_COORDINATOR_PREFLIGHT_CHECK_REPORT_H_
