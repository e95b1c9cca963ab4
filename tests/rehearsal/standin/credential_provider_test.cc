#include "rehearsal/standin/credential_provider.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "agent/engine/credential_provider.h"
#include "agent/verify/credential_probe.h"
#include "common/system/command_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace handoff::standin {
namespace {

using ::testing::HasSubstr;

constexpr char kRegistry[] = "123456789012.dkr.ecr.us-east-1.amazonaws.com";

TEST(CredentialProviderTest, AnswersForTheImagesEcrRegistry) {
  absl::StatusOr<std::string> answer = AnswerCredentialRequest(
      R"({"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderRequest",)"
      R"("image":"123456789012.dkr.ecr.us-east-1.amazonaws.com/app:1"})");
  ASSERT_TRUE(answer.ok()) << answer.status();
  const nlohmann::json json = nlohmann::json::parse(*answer);
  EXPECT_EQ(json["kind"], "CredentialProviderResponse");
  EXPECT_EQ(json["apiVersion"], "credentialprovider.kubelet.k8s.io/v1");
  EXPECT_EQ(json["cacheKeyType"], "Registry");
  EXPECT_EQ(json["auth"][kRegistry]["username"], "AWS");
  EXPECT_FALSE(json["auth"][kRegistry]["password"].get<std::string>().empty());
  // China's partition too; the request's apiVersion is answered in kind.
  answer = AnswerCredentialRequest(
      R"({"apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1","kind":"CredentialProviderRequest",)"
      R"("image":"123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn/app"})");
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(nlohmann::json::parse(*answer)["apiVersion"], "credentialprovider.kubelet.k8s.io/v1beta1");
}

TEST(CredentialProviderTest, RefusesWhatIsNotARequestOrNotEcr) {
  for (const char* request :
       {"", "not json", R"({"kind":"CredentialProviderRequest"})",
        R"({"kind":"Other","image":"123456789012.dkr.ecr.us-east-1.amazonaws.com/a"})"}) {
    EXPECT_THAT(std::string(AnswerCredentialRequest(request).status().message()),
                HasSubstr("not a CredentialProviderRequest"))
        << request;
  }
  for (const char* image : {"registry.k8s.io/pause:3.9", "1234.dkr.ecr.us-east-1.amazonaws.com/a",
                            "123456789012.dkr.ecr.us-east-1.example.com/a"}) {
    const std::string request =
        std::string(R"({"kind":"CredentialProviderRequest","image":")") + image + "\"}";
    EXPECT_THAT(std::string(AnswerCredentialRequest(request).status().message()),
                HasSubstr("is not an ECR registry"))
        << image;
  }
}

// The binary under the name the kubelet runs it by, asked by the agent's own probe as the
// kubelet would ask it (the configuration the agent writes, the request on stdin).
TEST(CredentialProviderTest, TheAgentsProbeAcceptsTheStandinAsEcrCredentialProvider) {
  char pattern[] = "/tmp/handoff-ecr-standin-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  {
    std::ofstream script(dir + "/ecr-credential-provider");
    script << "#!/bin/bash\nexec -a ecr-credential-provider '" << HANDOFF_STANDIN_BIN
           << "' \"$@\"\n";
  }
  ASSERT_EQ(::chmod((dir + "/ecr-credential-provider").c_str(), 0755), 0);
  absl::StatusOr<CredentialProviderCall> call =
      EcrCredentialProviderCall(EcrCredentialProviderConfig(), "config.yaml", dir);
  ASSERT_TRUE(call.ok()) << call.status();
  std::unique_ptr<CommandRunner> commands = NewProcessCommandRunner();
  EXPECT_TRUE(ProbeCredentialProvider(*commands, *call, kRegistry, absl::Seconds(30)).ok());
  // A registry it would not answer for: the probe names the binary and the registry.
  absl::Status refused =
      ProbeCredentialProvider(*commands, *call, "registry.example.com", absl::Seconds(30));
  EXPECT_THAT(std::string(refused.message()), HasSubstr("did not answer a request for "
                                                        "registry.example.com"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace handoff::standin
