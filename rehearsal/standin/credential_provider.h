// The stand-in run as ecr-credential-provider (argv[0]), for the model sandbox's workers: the
// kubelet's exec credential provider protocol (k8s.io/kubelet/pkg/apis/credentialprovider): a
// CredentialProviderRequest on stdin, the CredentialProviderResponse on stdout, as
// cloud-provider-aws cmd/ecr-credential-provider answers it — the registry host of an ECR image
// as the auth key, username AWS and a password — without asking any ECR: the model has no AWS.
// An image outside ECR's registries is refused as the real one refuses it (exit 1, the reason on
// stderr).
#ifndef HANDOFF_REHEARSAL_STANDIN_CREDENTIAL_PROVIDER_H_
#define HANDOFF_REHEARSAL_STANDIN_CREDENTIAL_PROVIDER_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace handoff::standin {

inline constexpr std::string_view kEcrCredentialProviderName = "ecr-credential-provider";

// The response to `request`, one line of JSON. InvalidArgument when the request is not a
// CredentialProviderRequest with an image, or its image is not in an ECR registry
// (<account>.dkr.ecr.<region>.amazonaws.com[.cn]). Pure.
absl::StatusOr<std::string> AnswerCredentialRequest(std::string_view request);

// Reads the request from stdin (at most 64 KiB), writes the answer to stdout; the exit code.
int RunCredentialProvider();

}  // namespace handoff::standin

#endif  // HANDOFF_REHEARSAL_STANDIN_CREDENTIAL_PROVIDER_H_
