// The kubelet's image credential provider on a worker that leaves the in-tree AWS provider, which
// fetched ECR credentials itself: a CredentialProviderConfig (kubelet.config.k8s.io/v1, GA in
// 1.26) naming ecr-credential-provider for ECR's registries (cloud-provider-aws
// cmd/ecr-credential-provider). Pure.
#ifndef HANDOFF_AGENT_ENGINE_CREDENTIAL_PROVIDER_H_
#define HANDOFF_AGENT_ENGINE_CREDENTIAL_PROVIDER_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace handoff {

// The ECR registries' image patterns, as cloud-provider-aws documents them: the commercial,
// China, FIPS and the two isolated partitions.
const std::vector<std::string>& EcrImagePatterns();

// The configuration the move writes: one provider, ecr-credential-provider, matching
// EcrImagePatterns(), credentialprovider.kubelet.k8s.io/v1, a 12h default cache.
std::string EcrCredentialProviderConfig();

// OK when `text` (the file at `source`) is a CredentialProviderConfig of
// kubelet.config.k8s.io/v1 (or v1beta1, which kubelet 1.26 also reads) with a provider named
// ecr-credential-provider whose matchImages include *.dkr.ecr.*.amazonaws.com. Otherwise
// FailedPrecondition naming the file and what is missing.
absl::Status CheckEcrCredentialProviderConfig(std::string_view text, std::string_view source);

// How the kubelet runs a credential provider: <bin-dir>/<name> with the provider's args, and its
// env added to the kubelet's own environment; the request and the answer in `api_version`.
struct CredentialProviderCall {
  std::string binary;  // <bin-dir>/<name>
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string api_version;  // credentialprovider.kubelet.k8s.io/v1 (or v1beta1, v1alpha1)
  // The argv that runs it as the kubelet would: `env NAME=VALUE... binary args...` when it has
  // env, else `binary args...`.
  std::vector<std::string> Argv() const;
};

// The call of ecr-credential-provider that the CredentialProviderConfig `text` (the file at
// `source`) gives, with binaries in `bin_dir`. FailedPrecondition naming the file when it is not
// one CheckEcrCredentialProviderConfig accepts, or its provider's args or env are malformed.
absl::StatusOr<CredentialProviderCall> EcrCredentialProviderCall(std::string_view text,
                                                                 std::string_view source,
                                                                 std::string_view bin_dir);

}  // namespace handoff

#endif  // HANDOFF_AGENT_ENGINE_CREDENTIAL_PROVIDER_H_
