// The settings key kubelet.healthzUrl: where the agent asks the restarted kubelet for its health.
#include "agent/engine/settings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

using ::testing::HasSubstr;

TEST(KubeletHealthSettingsTest, DefaultIsTheKubeletsOwnDefault) {
  const Settings settings;
  EXPECT_EQ(settings.kubelet.healthz.scheme, "http");
  EXPECT_EQ(settings.kubelet.healthz.host, "127.0.0.1");
  EXPECT_EQ(settings.kubelet.healthz.port, 10248);
  EXPECT_EQ(settings.kubelet.healthz.path, "/healthz");

  absl::StatusOr<Settings> parsed = ParseSettings("paths: {stateDir: /srv/handoff}\n", "s.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->kubelet.healthz.port, 10248);
}

TEST(KubeletHealthSettingsTest, ParsesTheUrl) {
  absl::StatusOr<Settings> settings =
      ParseSettings("kubelet:\n  healthzUrl: http://127.0.1.3:10248/healthz\n", "s.yaml");
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->kubelet.healthz.scheme, "http");
  EXPECT_EQ(settings->kubelet.healthz.host, "127.0.1.3");
  EXPECT_EQ(settings->kubelet.healthz.port, 10248);
  EXPECT_EQ(settings->kubelet.healthz.path, "/healthz");
}

TEST(KubeletHealthSettingsTest, UrlForms) {
  absl::StatusOr<HealthUrl> v6 = ParseHealthUrl("https://[::1]:20248/livez");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->scheme, "https");
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 20248);
  EXPECT_EQ(v6->path, "/livez");

  absl::StatusOr<HealthUrl> bare = ParseHealthUrl("http://node-1");
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ(bare->host, "node-1");
  EXPECT_EQ(bare->port, 80);
  EXPECT_EQ(bare->path, "/");

  absl::StatusOr<HealthUrl> https = ParseHealthUrl("https://node-1/healthz");
  ASSERT_TRUE(https.ok()) << https.status();
  EXPECT_EQ(https->port, 443);
}

TEST(KubeletHealthSettingsTest, BadUrlsAreRefusedWithTheReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"127.0.0.1:10248/healthz", "lacks a scheme"},
      {"ftp://127.0.0.1/healthz", "scheme must be http or https"},
      {"http://:10248/healthz", "host is empty"},
      {"http://127.0.0.1:/healthz", "port is empty"},
      {"http://127.0.0.1:0/healthz", "port must be a number from 1 to 65535"},
      {"http://127.0.0.1:70000/healthz", "port must be a number from 1 to 65535"},
      {"http://127.0.0.1:ten/healthz", "port must be a number from 1 to 65535"},
      {"http://[::1/healthz", "lacks its ']'"},
      {"http://user@127.0.0.1/healthz", "user info"},
      {"http://127.0.0.1/healthz?verbose", "query or fragment"},
  };
  for (const auto& [url, reason] : cases) {
    absl::StatusOr<HealthUrl> parsed = ParseHealthUrl(url);
    ASSERT_FALSE(parsed.ok()) << url;
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(reason)) << url;
  }
}

TEST(KubeletHealthSettingsTest, BadSettingNamesFileAndKey) {
  absl::StatusOr<Settings> settings =
      ParseSettings("kubelet:\n  healthzUrl: 127.0.0.1:10248\n  healthzPort: 1\n", "s.yaml");
  ASSERT_FALSE(settings.ok());
  const std::string message(settings.status().message());
  EXPECT_THAT(message, HasSubstr("s.yaml: kubelet.healthzUrl: \"127.0.0.1:10248\" is not an "
                                 "http(s) URL: it lacks a scheme"));
  EXPECT_THAT(message,
              HasSubstr("s.yaml: kubelet.healthzPort: unknown setting (known here: healthzUrl, "
                        "settle)"));

  settings = ParseSettings("kubelet:\n  healthzUrl: [http://a]\n", "s.yaml");
  ASSERT_FALSE(settings.ok());
  EXPECT_THAT(std::string(settings.status().message()),
              HasSubstr("s.yaml: kubelet.healthzUrl: must be a string"));
}

}  // namespace
}  // namespace handoff
