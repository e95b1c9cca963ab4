#include "coordinator/preflight/check_report.h"

#include <algorithm>
#include <cstddef>

#include "common/base/strings.h"

namespace handoff::preflight {

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kOk:
      return "ok";
    case Verdict::kWarn:
      return "warn";
    case Verdict::kFail:
      return "fail";
  }
  return "fail";
}

bool AnyFailed(const std::vector<CheckResult>& results) {
  return std::any_of(results.begin(), results.end(),
                     [](const CheckResult& r) { return r.verdict == Verdict::kFail; });
}

namespace {

size_t Count(const std::vector<CheckResult>& results, Verdict verdict) {
  return static_cast<size_t>(std::count_if(
      results.begin(), results.end(), [&](const CheckResult& r) { return r.verdict == verdict; }));
}

}  // namespace

std::string FormatText(const std::vector<CheckResult>& results) {
  size_t width = 0;
  for (const CheckResult& result : results) width = std::max(width, result.name.size());
  const std::string indent(6 + width + 2, ' ');
  std::string text;
  for (const CheckResult& result : results) {
    const std::string_view label = result.verdict == Verdict::kOk     ? "ok    "
                                   : result.verdict == Verdict::kWarn ? "warn  "
                                                                      : "FAIL  ";
    StrAppend(&text, label, result.name, std::string(width - result.name.size() + 2, ' '));
    if (result.evidence.empty()) {
      text += "\n";
    } else {
      for (size_t i = 0; i < result.evidence.size(); ++i) {
        StrAppend(&text, i == 0 ? "" : indent, result.evidence[i], "\n");
      }
    }
    if (!result.action.empty()) StrAppend(&text, indent, "-> ", result.action, "\n");
  }
  StrAppend(&text, Count(results, Verdict::kFail), " failed, ", Count(results, Verdict::kWarn),
            " warned, ", Count(results, Verdict::kOk), " ok\n");
  return text;
}

nlohmann::ordered_json ToJson(const std::vector<CheckResult>& results) {
  nlohmann::ordered_json json;
  json["checks"] = nlohmann::ordered_json::array();
  for (const CheckResult& result : results) {
    nlohmann::ordered_json check;
    check["name"] = result.name;
    check["verdict"] = std::string(VerdictName(result.verdict));
    check["evidence"] = result.evidence;
    check["action"] = result.action;
    json["checks"].push_back(check);
  }
  json["failed"] = Count(results, Verdict::kFail);
  json["warned"] = Count(results, Verdict::kWarn);
  json["ok"] = Count(results, Verdict::kOk);
  return json;
}

}  // namespace handoff::preflight
