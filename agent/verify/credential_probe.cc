#include "agent/verify/credential_probe.h"

#include <utility>

#include "common/base/strings.h"
#include "common/kube/resource.h"

namespace handoff {

std::string ProbeImage(std::string_view registry) {
  return StrCat(registry, "/handoff-credential-probe:latest");
}

std::string CredentialProviderRequest(std::string_view api_version, std::string_view image) {
  const kube::Json request = {{"apiVersion", std::string(api_version)},
                                  {"kind", "CredentialProviderRequest"},
                                  {"image", std::string(image)}};
  return request.dump() + "\n";
}

absl::Status CheckCredentialProviderResponse(std::string_view answer, std::string_view api_version,
                                             std::string_view registry, std::string_view binary) {
  auto refuse = [&](std::string_view what) {
    return absl::FailedPreconditionError(
        StrCat(binary, " answered a request for ", registry, " ", what,
               "; the external kubelet would pull no image from ECR"));
  };
  const kube::Json response = kube::Json::parse(answer, nullptr, /*allow_exceptions=*/false);
  if (response.is_discarded() || !response.is_object()) {
    return refuse(StrCat("with something that is not JSON (", answer.size(), " bytes)"));
  }
  const auto text = [&](std::string_view key) { return kube::StringAt(response, {key}); };
  if (text("kind") != "CredentialProviderResponse") {
    return refuse(StrCat("with kind \"", text("kind"), "\", not CredentialProviderResponse"));
  }
  if (text("apiVersion") != api_version) {
    return refuse(StrCat("in apiVersion \"", text("apiVersion"), "\", not the request's ",
                         api_version));
  }
  const auto auth = response.find("auth");
  if (auth == response.end() || !auth->is_object() || auth->empty()) {
    return refuse("with no credentials (auth is empty)");
  }
  for (const auto& [key, entry] : auth->items()) {
    if (key != registry) continue;
    const bool complete = entry.is_object() && entry.contains("username") &&
                          entry["username"].is_string() &&
                          !entry["username"].get<std::string>().empty() &&
                          entry.contains("password") && entry["password"].is_string() &&
                          !entry["password"].get<std::string>().empty();
    if (!complete) return refuse("with an empty username or password");
    return absl::OkStatus();
  }
  std::vector<std::string> keys;
  for (const auto& item : auth->items()) keys.push_back(item.key());
  return refuse(StrCat("with credentials for ", StrJoin(keys, ", "), " only"));
}

absl::Status ProbeCredentialProvider(CommandRunner& commands, const CredentialProviderCall& call,
                                     std::string_view registry, absl::Duration timeout) {
  absl::StatusOr<std::string> answer =
      commands.Output(call.Argv(), CredentialProviderRequest(call.api_version, ProbeImage(registry)),
                      timeout);
  if (!answer.ok()) {
    return absl::FailedPreconditionError(StrCat(
        "the kubelet's credential provider ", call.binary, " did not answer a request for ",
        registry, ": ", answer.status().message(),
        "; install ecr-credential-provider there (it is the operator's to install, from "
        "k8s.io/cloud-provider-aws at the cloud-controller-manager's version) and give the "
        "node's instance profile ecr:GetAuthorizationToken"));
  }
  return CheckCredentialProviderResponse(*answer, call.api_version, registry, call.binary);
}

}  // namespace handoff
