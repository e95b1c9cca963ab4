// The kubelet's image credential provider on a worker that leaves the in-tree AWS provider, which
// fetched ECR credentials itself: a CredentialProviderConfig (kubelet.config.k8s.io/v1, GA in
// 1.26) naming ecr-credential-provider for ECR's registries (cloud-provider-aws
// cmd/ecr-credential-provider). Pure.
#ifndef HANDOFF_AGENT_ENGINE_CREDENTIAL_PROVIDER_H_
#define HANDOFF_AGENT_ENGINE_CREDENTIAL_PROVIDER_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

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

}  // namespace handoff

#endif  // HANDOFF_AGENT_ENGINE_CREDENTIAL_PROVIDER_H_
