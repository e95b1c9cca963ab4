#include "rehearsal/kubelet/pod_state.h"

#include <nlohmann/json.hpp>

#include "common/base/strings.h"
#include "common/fs/atomic_file.h"
#include "common/fs/host_path.h"

namespace handoff::sandbox {

std::string EmitPodState(const PodProcesses& pods) {
  nlohmann::json json;
  json["pods"] = nlohmann::json::object();
  for (const auto& [name, pod] : pods) {
    json["pods"][name] = {{"pid", pod.pid},
                          {"startTime", pod.start_time},
                          {"manifestHash", pod.hash},
                          {"component", pod.component}};
  }
  return json.dump(2) + "\n";
}

absl::StatusOr<PodProcesses> ParsePodState(std::string_view text, std::string_view source) {
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return absl::InvalidArgumentError(StrCat(source, ": not JSON"));
  if (!json.is_object() || !json.contains("pods") || !json["pods"].is_object()) {
    return absl::InvalidArgumentError(StrCat(source, ": expected {\"pods\": {...}}"));
  }
  PodProcesses pods;
  for (const auto& [name, entry] : json["pods"].items()) {
    const std::string field = StrCat(source, ": pods.", name);
    if (!entry.is_object() || !entry.contains("pid") || !entry["pid"].is_number_integer() ||
        !entry.contains("startTime") || !entry["startTime"].is_number_unsigned() ||
        !entry.contains("manifestHash") || !entry["manifestHash"].is_string()) {
      return absl::InvalidArgumentError(
          StrCat(field, ": needs pid, startTime (numbers) and manifestHash (a string)"));
    }
    PodProcess pod;
    pod.pid = entry["pid"].get<int>();
    pod.start_time = entry["startTime"].get<std::uint64_t>();
    pod.hash = entry["manifestHash"].get<std::string>();
    if (entry.contains("component") && entry["component"].is_string()) {
      pod.component = entry["component"].get<std::string>();
    }
    if (pod.pid <= 0) return absl::InvalidArgumentError(StrCat(field, ".pid: must be positive"));
    pods[name] = pod;
  }
  return pods;
}

absl::StatusOr<PodProcesses> LoadPodState(const FileSystem& fs) {
  absl::StatusOr<std::string> text = fs.ReadFile(kPodStatePath);
  if (absl::IsNotFound(text.status())) return PodProcesses();
  if (!text.ok()) return text.status();
  return ParsePodState(*text, kPodStatePath);
}

absl::Status SavePodState(FileSystem& fs, const PodProcesses& pods) {
  if (absl::Status dir = EnsureDirectory(fs, ParentPath(kPodStatePath), 0755); !dir.ok()) {
    return dir;
  }
  return AtomicReplace(fs, kPodStatePath, EmitPodState(pods), FileInfo{false, 0600, 0, 0});
}

}  // namespace handoff::sandbox
