#include "rehearsal/real/components.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/base/strings.h"

namespace handoff::sandbox::real {
namespace {

// `text` cut at every `separator` (empty pieces kept).
std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  while (true) {
    const size_t at = text.find(separator);
    pieces.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return pieces;
    text.remove_prefix(at + 1);
  }
}

}  // namespace

std::string Components::Binary(std::string_view name) const {
  return StrCat(dir, "/bin/", name);
}

std::string Components::File(std::string_view relative) const { return StrCat(dir, "/", relative); }

std::vector<std::string> Components::VersionsOf(std::string_view name) const {
  std::vector<std::string> found;
  for (const ComponentVersion& version : versions) {
    if (version.name == name) found.push_back(version.version);
  }
  return found;
}

std::string Components::VersionOf(std::string_view name) const {
  for (const ComponentVersion& version : versions) {
    if (version.name == name) return version.version;
  }
  return "";
}

absl::StatusOr<std::string> ComponentsDir(const EnvironmentReader& get_env) {
  auto non_empty = [&](const std::string& name) -> std::optional<std::string> {
    std::optional<std::string> value = get_env(name);
    if (value && !value->empty()) return value;
    return std::nullopt;
  };
  if (std::optional<std::string> dir = non_empty("HANDOFF_COMPONENTS_DIR")) return *dir;
  if (std::optional<std::string> cache = non_empty("XDG_CACHE_HOME")) {
    return StrCat(*cache, "/handoff/components");
  }
  if (std::optional<std::string> home = non_empty("HOME")) {
    return StrCat(*home, "/.cache/handoff/components");
  }
  return absl::FailedPreconditionError(
      "cannot find the real components: none of HANDOFF_COMPONENTS_DIR, XDG_CACHE_HOME and HOME "
      "is set; set HANDOFF_COMPONENTS_DIR to the directory `bash tests/real/components.sh` "
      "builds");
}

absl::StatusOr<std::vector<ComponentVersion>> ParseVersions(std::string_view text,
                                                            const std::string& path) {
  std::vector<ComponentVersion> versions;
  int line_number = 0;
  for (std::string_view line : Split(text, '\n')) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    const std::vector<std::string_view> fields = Split(line, '\t');
    if (fields.size() != 3 || fields[0].empty() || fields[1].empty() || fields[2].empty()) {
      return absl::InvalidArgumentError(
          StrCat(path, " line ", line_number, ": \"", line,
                 "\" is not name<TAB>version<TAB>source; run `", kBuildCommand,
                 "` to write it again"));
    }
    versions.push_back(ComponentVersion{std::string(fields[0]), std::string(fields[1]),
                                        std::string(fields[2])});
  }
  return versions;
}

absl::StatusOr<Components> LoadComponents(const std::string& dir,
                                          const std::vector<std::string_view>& required) {
  Components components;
  components.dir = dir;
  for (std::string_view name : required) {
    const bool path = name.find('/') != std::string_view::npos;
    const std::string binary = path ? components.File(name) : components.Binary(name);
    const bool executable = !StartsWith(name, "images/");
    struct stat info {};
    if (stat(binary.c_str(), &info) != 0) {
      return absl::FailedPreconditionError(
          StrCat("the real ", name, " is missing: ", binary, " (", std::strerror(errno),
                 "); run `", kBuildCommand, "` to build the real components"));
    }
    if (!S_ISREG(info.st_mode) || (executable && access(binary.c_str(), X_OK) != 0)) {
      return absl::FailedPreconditionError(
          StrCat("the real ", name, " is not an executable file: ", binary, "; run `",
                 kBuildCommand, "` to build the real components again"));
    }
  }
  const std::string versions_path = StrCat(dir, "/versions.txt");
  std::ifstream in(versions_path, std::ios::binary);
  if (!in) {
    return absl::FailedPreconditionError(
        StrCat("the real components' versions are missing: ", versions_path, " (",
               std::strerror(errno), "); run `", kBuildCommand, "` to build the real components"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::vector<ComponentVersion>> versions = ParseVersions(text.str(), versions_path);
  if (!versions.ok()) return versions.status();
  components.versions = *std::move(versions);
  return components;
}

absl::StatusOr<Components> FindComponents(const EnvironmentReader& get_env,
                                          const std::vector<std::string_view>& required) {
  absl::StatusOr<std::string> dir = ComponentsDir(get_env);
  if (!dir.ok()) return dir.status();
  return LoadComponents(*dir, required);
}

EnvironmentReader ProcessEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

}  // namespace handoff::sandbox::real
