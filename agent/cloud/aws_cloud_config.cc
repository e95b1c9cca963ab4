#include "agent/cloud/aws_cloud_config.h"

#include "absl/strings/ascii.h"
#include "common/base/strings.h"

namespace handoff {
namespace {

// `line` without a trailing comment (';' or '#' outside double quotes).
std::string_view WithoutComment(std::string_view line) {
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '"') quoted = !quoted;
    if (!quoted && (line[i] == ';' || line[i] == '#')) return line.substr(0, i);
  }
  return line;
}

std::string Unquoted(std::string_view value) {
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
    value = value.substr(1, value.size() - 2);
  }
  return std::string(value);
}

}  // namespace

absl::StatusOr<AwsCloudConfig> ParseAwsCloudConfig(std::string_view text, std::string_view source) {
  AwsCloudConfig config;
  std::string section;  // lower case
  // The ServiceOverride section being read: its Service, URL and SigningRegion.
  std::string service, url, signing_region;
  auto end_section = [&] {
    if (section == "serviceoverride" && absl::AsciiStrToLower(service) == "ec2") {
      config.ec2_url = url;
      config.ec2_signing_region = signing_region;
    }
    service.clear();
    url.clear();
    signing_region.clear();
  };
  int number = 0;
  for (std::string_view line : StrSplit(text, "\n", /*skip_empty=*/false)) {
    ++number;
    line = StripWhitespace(WithoutComment(line));
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (line.back() != ']') {
        return absl::InvalidArgumentError(
            StrCat(source, " line ", number, ": a section header without its ']': ", line));
      }
      end_section();
      std::string_view name = StripWhitespace(line.substr(1, line.size() - 2));
      name = name.substr(0, name.find_first_of(" \t\""));
      section = absl::AsciiStrToLower(std::string(name));
      continue;
    }
    const size_t equals = line.find('=');
    if (equals == std::string_view::npos) {
      return absl::InvalidArgumentError(
          StrCat(source, " line ", number, ": neither a [section] nor key = value: ", line));
    }
    const std::string key =
        absl::AsciiStrToLower(std::string(StripWhitespace(line.substr(0, equals))));
    const std::string value = Unquoted(StripWhitespace(line.substr(equals + 1)));
    if (section == "global") {
      if (key == "kubernetesclusterid" ||
          (key == "kubernetesclustertag" && config.cluster_id.empty())) {
        config.cluster_id = value;
      }
    } else if (section == "serviceoverride") {
      if (key == "service") service = value;
      if (key == "url") url = value;
      if (key == "signingregion") signing_region = value;
    }
  }
  end_section();
  return config;
}

}  // namespace handoff
