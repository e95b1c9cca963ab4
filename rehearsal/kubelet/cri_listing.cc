#include "rehearsal/kubelet/cri_listing.h"

#include <time.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "common/base/strings.h"
#include "rehearsal/kubelet/process_control.h"

namespace handoff::sandbox {
namespace {

// 64 hex digits, as container runtimes name containers and sandboxes: FNV-1a of `key`, spread
// over four words.
std::string RuntimeId(std::string_view key) {
  std::string id;
  for (std::uint64_t round = 0; round < 4; ++round) {
    std::uint64_t hash = 1469598103934665603ULL ^ round;
    for (char c : key) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 1099511628211ULL;
    }
    id += absl::StrFormat("%016x", hash);
  }
  return id;
}

}  // namespace

std::string CriListing(const PodProcesses& pods, std::string_view node_name,
                       const std::function<std::optional<std::int64_t>(const PodProcess&)>&
                           started_at) {
  nlohmann::json containers = nlohmann::json::array();
  for (const auto& [name, pod] : pods) {
    const std::optional<std::int64_t> since = started_at(pod);
    if (!since) continue;
    const std::string container = pod.component.empty() ? name : pod.component;
    const std::string mirror = StrCat(name, "-", node_name);
    containers.push_back(
        {{"id", RuntimeId(StrCat("container/", name, "/", pod.pid, "/", pod.start_time))},
         {"podSandboxId", RuntimeId(StrCat("sandbox/", name))},
         {"metadata", {{"name", container}, {"attempt", 0}}},
         {"state", "CONTAINER_RUNNING"},
         {"createdAt", StrCat(*since)},
         {"labels",
          {{"io.kubernetes.container.name", container}, {"io.kubernetes.pod.name", mirror}}}});
  }
  return nlohmann::json{{"containers", containers}}.dump(2) + "\n";
}

std::optional<std::int64_t> RunningSince(const PodProcess& pod) {
  const std::optional<ProcStat> stat = ReadProcStat(pod.pid);
  if (!stat || stat->start_time != pod.start_time || stat->state == 'Z') return std::nullopt;
  timespec boot{};
  timespec real{};
  if (::clock_gettime(CLOCK_BOOTTIME, &boot) != 0 || ::clock_gettime(CLOCK_REALTIME, &real) != 0) {
    return std::nullopt;
  }
  const std::int64_t ticks = ::sysconf(_SC_CLK_TCK);
  const std::int64_t boot_ns = (static_cast<std::int64_t>(real.tv_sec) - boot.tv_sec) *
                                   1000000000LL +
                               (static_cast<std::int64_t>(real.tv_nsec) - boot.tv_nsec);
  return boot_ns + static_cast<std::int64_t>(pod.start_time) * (1000000000LL / ticks);
}

}  // namespace handoff::sandbox
