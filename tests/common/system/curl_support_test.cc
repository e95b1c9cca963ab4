#include "common/system/curl_support.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <system_error>

#include "gtest/gtest.h"

namespace handoff {
namespace {

// The sink is fed by a real libcurl transfer of a local file (file://), so that libcurl's own
// chunking and its reaction to the callback's return value are what is tested.
class CurlBodySinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "handoff-curl-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr) << "mkdtemp " << pattern << " failed";
    dir_ = pattern;
  }

  void TearDown() override {
    if (dir_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    EXPECT_FALSE(ec) << "cannot remove " << dir_ << ": " << ec.message();
  }

  // Transfers a file holding `content` into `sink`; libcurl's result.
  CURLcode Transfer(const std::string& content, CurlBodySink& sink) {
    const std::string path = dir_ + "/body";
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
    absl::StatusOr<CurlHandle> curl = NewCurlHandle();
    EXPECT_TRUE(curl.ok()) << curl.status();
    if (!curl.ok()) return CURLE_FAILED_INIT;
    const std::string url = "file://" + path;
    EXPECT_EQ(curl_easy_setopt(curl->get(), CURLOPT_URL, url.c_str()), CURLE_OK);
    EXPECT_EQ(sink.Attach(curl->get()), CURLE_OK);
    return curl_easy_perform(curl->get());
  }

  std::string dir_;
};

// Bigger than libcurl's largest write (CURL_MAX_WRITE_SIZE, 16 KiB), so it comes in chunks.
std::string LongBody() {
  std::string body;
  for (int i = 0; body.size() < 40'000; ++i) body += std::to_string(i) + ",";
  return body;
}

TEST_F(CurlBodySinkTest, KeepsABodyUpToTheLimitWhole) {
  const std::string body = LongBody();
  for (CurlBodySink::Overflow overflow :
       {CurlBodySink::Overflow::kAbort, CurlBodySink::Overflow::kKeepStart}) {
    CurlBodySink sink(body.size(), overflow);
    EXPECT_EQ(Transfer(body, sink), CURLE_OK);
    EXPECT_EQ(sink.body(), body);
    EXPECT_FALSE(sink.over_limit());
  }
}

TEST_F(CurlBodySinkTest, AbortsTheTransferOfALongerBody) {
  const std::string body = LongBody();
  CurlBodySink sink(body.size() - 1, CurlBodySink::Overflow::kAbort);
  EXPECT_EQ(Transfer(body, sink), CURLE_WRITE_ERROR);
  EXPECT_TRUE(sink.over_limit());
  EXPECT_LT(sink.body().size(), body.size());
}

TEST_F(CurlBodySinkTest, KeepsTheStartOfALongerBodyAndFinishesTheTransfer) {
  const std::string body = LongBody();
  for (size_t limit : {size_t{0}, size_t{10}, size_t{20'000}}) {
    CurlBodySink sink(limit, CurlBodySink::Overflow::kKeepStart);
    EXPECT_EQ(Transfer(body, sink), CURLE_OK) << limit;
    EXPECT_EQ(sink.body(), body.substr(0, limit));
    EXPECT_TRUE(sink.over_limit()) << limit;
    EXPECT_EQ(sink.TakeBody(), body.substr(0, limit));
  }
}

TEST(CurlSupportTest, TimeoutIsAtLeastOneMillisecond) {
  EXPECT_EQ(CurlTimeoutMs(absl::Milliseconds(1500)), 1500);
  EXPECT_EQ(CurlTimeoutMs(absl::ZeroDuration()), 1);
  EXPECT_EQ(CurlTimeoutMs(absl::Milliseconds(-5)), 1);
  EXPECT_EQ(CurlTimeoutMs(absl::InfiniteDuration()), std::numeric_limits<long>::max());
}

TEST(CurlSupportTest, AppendsHeadersInOrder) {
  CurlList headers;
  AppendCurlHeader(&headers, "Accept: application/json");
  AppendCurlHeader(&headers, "Expect:");
  ASSERT_NE(headers, nullptr);
  EXPECT_STREQ(headers->data, "Accept: application/json");
  ASSERT_NE(headers->next, nullptr);
  EXPECT_STREQ(headers->next->data, "Expect:");
  EXPECT_EQ(headers->next->next, nullptr);
}

}  // namespace
}  // namespace handoff
