// Proof that a worker's kubelet can pull from ECR once it is external: ecr-credential-provider,
// run as the kubelet runs it (a CredentialProviderRequest for an image on stdin, a
// CredentialProviderResponse on stdout; k8s.io/kubelet pkg/apis/credentialprovider), answers
// with credentials for the node's registry. The move asks it before anything is written and again
// once the new kubelet runs.
#ifndef HANDOFF_AGENT_VERIFY_CREDENTIAL_PROBE_H_
#define HANDOFF_AGENT_VERIFY_CREDENTIAL_PROBE_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agent/engine/credential_provider.h"
#include "common/system/command_runner.h"

namespace handoff {

// The image a probe asks for: a repository of `registry` (<account>.dkr.ecr.<region>.amazonaws.com)
// that need not exist; the provider answers for the registry, not the image.
std::string ProbeImage(std::string_view registry);

// The CredentialProviderRequest for `image` in `api_version`, as JSON.
std::string CredentialProviderRequest(std::string_view api_version, std::string_view image);

// OK when `answer` (what `binary` wrote) is a CredentialProviderResponse of `api_version` whose
// auth holds a username and a password under the key `registry` (ecr-credential-provider
// answers with the image's registry host).
// FailedPrecondition saying what is wrong otherwise. Never puts a password in a message.
absl::Status CheckCredentialProviderResponse(std::string_view answer, std::string_view api_version,
                                             std::string_view registry, std::string_view binary);

// Runs `call` with a request for ProbeImage(registry) and checks its answer. FailedPrecondition
// when the binary is missing, not executable, fails, times out or answers without credentials,
// each saying so with the binary's path; the external kubelet would then pull no ECR image.
absl::Status ProbeCredentialProvider(CommandRunner& commands, const CredentialProviderCall& call,
                                     std::string_view registry, absl::Duration timeout);

}  // namespace handoff

#endif  // HANDOFF_AGENT_VERIFY_CREDENTIAL_PROBE_H_
