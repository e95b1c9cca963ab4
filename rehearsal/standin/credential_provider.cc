#include "rehearsal/standin/credential_provider.h"

#include <unistd.h>

#include <cerrno>
#include <iostream>

#include "common/base/strings.h"
#include "nlohmann/json.hpp"

namespace handoff::standin {
namespace {

constexpr size_t kMaxRequest = 64 * 1024;

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// <account>.dkr.ecr.<region>.amazonaws.com (or .com.cn): twelve digits, then the region.
bool IsEcrRegistry(std::string_view host) {
  const size_t dot = host.find('.');
  if (dot != 12) return false;
  for (char c : host.substr(0, dot)) {
    if (c < '0' || c > '9') return false;
  }
  const std::string_view rest = host.substr(dot);
  return rest.substr(0, 9) == ".dkr.ecr." &&
         (EndsWith(rest, ".amazonaws.com") || EndsWith(rest, ".amazonaws.com.cn"));
}

}  // namespace

absl::StatusOr<std::string> AnswerCredentialRequest(std::string_view request) {
  const nlohmann::json parsed = nlohmann::json::parse(request, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object() ||
      parsed.value("kind", "") != "CredentialProviderRequest" ||
      !parsed.contains("image") || !parsed["image"].is_string()) {
    return absl::InvalidArgumentError(
        "the request on stdin is not a CredentialProviderRequest with an image");
  }
  const std::string image = parsed["image"].get<std::string>();
  const std::string host = image.substr(0, image.find('/'));
  if (!IsEcrRegistry(host)) {
    return absl::InvalidArgumentError(
        StrCat("error parsing image ", image, ": ", host, " is not an ECR registry"));
  }
  const nlohmann::json response = {
      {"kind", "CredentialProviderResponse"},
      {"apiVersion", parsed.value("apiVersion", "credentialprovider.kubelet.k8s.io/v1")},
      {"cacheKeyType", "Registry"},
      {"cacheDuration", "12h0m0s"},
      {"auth", {{host, {{"username", "AWS"}, {"password", "handoff-sandbox-ecr-token"}}}}}};
  return response.dump() + "\n";
}

int RunCredentialProvider() {
  std::string request;
  char buffer[4096];
  while (request.size() <= kMaxRequest) {
    const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    request.append(buffer, static_cast<size_t>(n));
  }
  if (request.size() > kMaxRequest) {
    std::cerr << kEcrCredentialProviderName << ": the request is over 64 KiB\n";
    return 1;
  }
  absl::StatusOr<std::string> answer = AnswerCredentialRequest(request);
  if (!answer.ok()) {
    std::cerr << kEcrCredentialProviderName << ": " << answer.status().message() << "\n";
    return 1;
  }
  std::cout << *answer << std::flush;
  return 0;
}

}  // namespace handoff::standin
