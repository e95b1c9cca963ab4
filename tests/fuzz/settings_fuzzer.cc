// Settings files (--settings): any text gives settings or an error, and settings that parse hold
// only values the rest of the agent can use (a health URL it can dial, absolute paths).
//
// Also fuzzes ParseHealthUrl on the whole input, which the settings reader calls on one key.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/engine/settings.h"
#include "tests/fuzz/fuzz_check.h"

namespace handoff {
namespace {

void CheckHealthUrl(const HealthUrl& url, std::string_view text) {
  const std::string context = "from \"" + std::string(text.substr(0, 200)) + "\"";
  FUZZ_CHECK(url.scheme == "http" || url.scheme == "https", context);
  FUZZ_CHECK(url.port >= 1 && url.port <= 65535, context);
  FUZZ_CHECK(!url.host.empty(), context);
  FUZZ_CHECK(!url.path.empty() && url.path.front() == '/', context);
}

void FuzzOne(std::string_view text) {
  absl::StatusOr<Settings> settings = ParseSettings(text, "/etc/handoff/settings.yaml");
  if (settings.ok()) {
    CheckHealthUrl(settings->kubelet.healthz, "settings");
    if (settings->k8s_version) (void)settings->k8s_version->ToString();
  } else {
    FUZZ_CHECK(settings.status().message().find("/etc/handoff/settings.yaml") !=
                   std::string_view::npos,
               "the error does not name the file: " + std::string(settings.status().message()));
  }
  if (text.size() <= 512) {
    absl::StatusOr<HealthUrl> url = ParseHealthUrl(text);
    if (url.ok()) CheckHealthUrl(*url, text);
  }
}

}  // namespace
}  // namespace handoff

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  handoff::FuzzOne(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
