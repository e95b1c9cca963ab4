// CheckForKubelet asks the health endpoint it is given (the settings' kubelet.healthzUrl).
#include "agent/verify/verifier.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

TEST(KubeletHealthCheckTest, DefaultEndpointIsTheKubeletsDefault) {
  EXPECT_EQ(DefaultKubeletHealth().Url(), "http://127.0.0.1:10248/healthz");
  EXPECT_EQ(CheckForKubelet({}).health->Url(), "http://127.0.0.1:10248/healthz");
}

TEST(KubeletHealthCheckTest, GivenEndpointIsChecked) {
  HealthEndpoint endpoint;
  endpoint.scheme = "http";
  endpoint.host = "127.0.1.2";
  endpoint.port = 10248;
  endpoint.path = "/healthz";
  const ComponentCheck check = CheckForKubelet({"--cloud-provider=external"}, endpoint);
  ASSERT_TRUE(check.health.has_value());
  EXPECT_EQ(check.health->Url(), "http://127.0.1.2:10248/healthz");
  EXPECT_TRUE(check.args_subset);
}

}  // namespace
}  // namespace handoff
