// HTTP/1.1 request reading and response writing for the fake API server, without sockets.
#include "rehearsal/fakeapi/http_wire.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::fakeapi {
namespace {

using Status = HttpRequestReader::Status;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::StartsWith;

constexpr char kGet[] = "GET /api/v1/nodes?labelSelector=a%3Db HTTP/1.1\r\nHost: x\r\n\r\n";

// Feeds `bytes` whole, and again one byte at a time: the reader must end in the same place.
struct Fed {
  Status status;
  size_t consumed;
  ParsedRequest request;
  std::string error;
};

Fed Feed(const std::string& bytes, HttpLimits limits = HttpLimits()) {
  HttpRequestReader whole(limits);
  const size_t consumed = whole.Consume(bytes);
  HttpRequestReader bytewise(limits);
  size_t bytewise_consumed = 0;
  for (char c : bytes) {
    if (bytewise.status() != Status::kIncomplete) break;
    bytewise_consumed += bytewise.Consume(std::string(1, c));
  }
  EXPECT_EQ(bytewise.status(), whole.status()) << bytes.substr(0, 200);
  if (whole.status() == Status::kComplete) {
    EXPECT_EQ(bytewise_consumed, consumed);
    EXPECT_EQ(bytewise.request().body, whole.request().body);
  }
  return Fed{whole.status(), consumed, whole.request(),
             whole.status() == Status::kBad ? whole.ErrorResponse() : ""};
}

TEST(HttpRequestReaderTest, ReadsAGet) {
  const Fed fed = Feed(kGet);
  ASSERT_EQ(fed.status, Status::kComplete);
  EXPECT_EQ(fed.consumed, std::string(kGet).size());
  EXPECT_EQ(fed.request.method, "GET");
  EXPECT_EQ(fed.request.target, "/api/v1/nodes?labelSelector=a%3Db");
  EXPECT_EQ(fed.request.minor_version, 1);
  EXPECT_THAT(fed.request.headers, ElementsAre(Pair("host", "x")));
  EXPECT_TRUE(fed.request.keep_alive);
  EXPECT_EQ(fed.request.body, "");
}

TEST(HttpRequestReaderTest, StopsAtTheEndOfTheRequest) {
  const std::string two = std::string(kGet) + kGet;
  HttpRequestReader reader;
  const size_t consumed = reader.Consume(two);
  EXPECT_EQ(consumed, std::string(kGet).size());
  EXPECT_EQ(reader.status(), Status::kComplete);
  EXPECT_EQ(reader.Consume(two.substr(consumed)), 0u) << "nothing more until Reset()";
  reader.Reset();
  EXPECT_FALSE(reader.started());
  EXPECT_EQ(reader.Consume(two.substr(consumed)), consumed);
  EXPECT_EQ(reader.status(), Status::kComplete);
}

TEST(HttpRequestReaderTest, ContentLengthBody) {
  const std::string request =
      "PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
  const Fed fed = Feed(request + "GET");
  ASSERT_EQ(fed.status, Status::kComplete);
  EXPECT_EQ(fed.request.body, "hello");
  EXPECT_FALSE(fed.request.keep_alive);
  EXPECT_EQ(fed.consumed, request.size());
}

TEST(HttpRequestReaderTest, ChunkedBodyWithExtensionsAndTrailers) {
  const Fed fed = Feed(
      "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;name=value\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n");
  ASSERT_EQ(fed.status, Status::kComplete);
  EXPECT_EQ(fed.request.body, "hello 0123456789");
}

TEST(HttpRequestReaderTest, LeadingEmptyLinesAndBareLineFeeds) {
  const Fed fed = Feed("\r\n\nGET / HTTP/1.0\nConnection: keep-alive\n\n");
  ASSERT_EQ(fed.status, Status::kComplete);
  EXPECT_EQ(fed.request.minor_version, 0);
  EXPECT_TRUE(fed.request.keep_alive);
  EXPECT_FALSE(Feed("GET / HTTP/1.0\r\n\r\n").request.keep_alive);
}

TEST(HttpRequestReaderTest, IncompleteUntilTheEnd) {
  HttpRequestReader reader;
  EXPECT_FALSE(reader.started());
  reader.Consume("GET / HTTP/1.1\r\nHost: x\r\n");
  EXPECT_TRUE(reader.started());
  EXPECT_FALSE(reader.head_complete());
  EXPECT_EQ(reader.status(), Status::kIncomplete);
  reader.Reset();
  reader.Consume("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345");
  EXPECT_TRUE(reader.head_complete());
  EXPECT_EQ(reader.status(), Status::kIncomplete);
}

TEST(HttpRequestReaderTest, MalformedRequestsGetGoStyleErrors) {
  struct Case {
    std::string request;
    std::string response_start;
    std::string body;
  };
  const Case cases[] = {
      {"GET /\r\n\r\n", "HTTP/1.1 400 Bad Request", "400 Bad Request: malformed HTTP request"},
      {"G(T / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400", "invalid method"},
      {"GET / HTTP/1.x\r\nHost: x\r\n\r\n", "HTTP/1.1 400", "malformed HTTP version"},
      {"GET / HTTP/2.0\r\nHost: x\r\n\r\n", "HTTP/1.1 505 HTTP Version Not Supported", ""},
      {"GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 400", "missing required Host header"},
      {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "HTTP/1.1 400", "too many Host headers"},
      {"GET / HTTP/1.1\r\nHost: x\r\nNo colon\r\n\r\n", "HTTP/1.1 400", "malformed MIME header"},
      {"GET / HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n", "HTTP/1.1 400", "invalid header name"},
      {"GET / HTTP/1.1\r\nHost: x\r\nA: b\r\n folded\r\n\r\n", "HTTP/1.1 400", "folding"},
      {"GET / HTTP/1.1\r\nHost: x\r\nA: b\x01\r\n\r\n", "HTTP/1.1 400", "invalid header value"},
      {"GET /\x7f HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400", "invalid request target"},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", "HTTP/1.1 400",
       "bad Content-Length"},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n",
       "HTTP/1.1 400", "bad Content-Length"},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
       "HTTP/1.1 400", "multiple Content-Length"},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
       "HTTP/1.1 501 Not Implemented", "Unsupported transfer encoding"},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
       "HTTP/1.1 400", "both Transfer-Encoding and Content-Length"},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "HTTP/1.1 400",
       "invalid byte in chunk length"},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n11111111111111111\r\n",
       "HTTP/1.1 400", "chunk length too large"},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY\r\n",
       "HTTP/1.1 400", "line too long"},
      {"POST / HTTP/1.1\r\nHost: x\r\nExpect: gift\r\n\r\n", "HTTP/1.1 417 Expectation Failed",
       ""},
  };
  for (const Case& test : cases) {
    const Fed fed = Feed(test.request);
    EXPECT_EQ(fed.status, Status::kBad) << test.request;
    EXPECT_THAT(fed.error, StartsWith(test.response_start)) << test.request;
    EXPECT_THAT(fed.error, HasSubstr("Connection: close\r\n")) << test.request;
    EXPECT_THAT(fed.error, HasSubstr(test.body)) << test.request;
  }
}

TEST(HttpRequestReaderTest, HeadLargerThanTheLimitGets431) {
  HttpLimits limits;
  limits.max_header_bytes = 100;
  std::string head = "GET / HTTP/1.1\r\nHost: x\r\n";
  EXPECT_EQ(Feed(head + "X: " + std::string(100 - head.size() - 5, 'a') + "\r\n", limits).status,
            Status::kIncomplete)
      << "exactly at the limit, without the empty line yet";
  const Fed fed = Feed(head + "X: " + std::string(200, 'a'), limits);
  EXPECT_EQ(fed.status, Status::kBad);
  EXPECT_THAT(fed.error, StartsWith("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
  // Empty lines before the request line count too: they cannot be sent forever.
  EXPECT_EQ(Feed(std::string(101, '\n'), limits).status, Status::kBad);
  // So do trailers after a chunked body.
  EXPECT_EQ(Feed("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" +
                     std::string(200, 'a'),
                 limits)
                .error.substr(0, 12),
            "HTTP/1.1 431");
}

TEST(HttpRequestReaderTest, BodyLargerThanTheLimitIsNotKept) {
  HttpLimits limits;
  limits.max_body_bytes = 10;
  const std::string head = "POST / HTTP/1.1\r\nHost: x\r\n";
  // Content-Length over the limit: complete at once, nothing of the body consumed.
  Fed fed = Feed(head + "Content-Length: 11\r\n\r\n01234567890", limits);
  ASSERT_EQ(fed.status, Status::kComplete);
  EXPECT_TRUE(fed.request.body_too_large);
  EXPECT_EQ(fed.request.body, "");
  EXPECT_EQ(fed.consumed, head.size() + 22);
  // At the limit: kept.
  fed = Feed(head + "Content-Length: 10\r\n\r\n0123456789", limits);
  EXPECT_FALSE(fed.request.body_too_large);
  EXPECT_EQ(fed.request.body, "0123456789");
  // Chunked: stops at the chunk that would go over.
  fed = Feed(head + "Transfer-Encoding: chunked\r\n\r\n5\r\n01234\r\n6\r\n012345\r\n0\r\n\r\n",
             limits);
  ASSERT_EQ(fed.status, Status::kComplete);
  EXPECT_TRUE(fed.request.body_too_large);
  EXPECT_EQ(fed.request.body, "");
}

TEST(HttpRequestReaderTest, TooMuchChunkFramingIsRefused) {
  // One data byte per chunk with a long extension each: Go's chunked reader refuses this much
  // non-data; plain one-byte chunks are fine.
  std::string chunks;
  for (int i = 0; i < 200; ++i) chunks += "1;" + std::string(200, 'e') + "\r\nx\r\n";
  const std::string head = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  const Fed fed = Feed(head + chunks);
  EXPECT_EQ(fed.status, Status::kBad);
  EXPECT_THAT(fed.error, HasSubstr("too much non-data"));
  std::string small;
  for (int i = 0; i < 5000; ++i) small += "1\r\nx\r\n";
  const Fed fine = Feed(head + small + "0\r\n\r\n");
  ASSERT_EQ(fine.status, Status::kComplete);
  EXPECT_EQ(fine.request.body, std::string(5000, 'x'));
}

TEST(HttpRequestReaderTest, ExpectContinue) {
  HttpRequestReader reader;
  reader.Consume("PUT / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
  EXPECT_TRUE(reader.expects_continue());
  reader.Consume("ok");
  EXPECT_FALSE(reader.expects_continue());
  EXPECT_EQ(reader.status(), Status::kComplete);
  // Without a body there is nothing to continue with.
  HttpRequestReader empty;
  empty.Consume("GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(empty.status(), Status::kComplete);
  EXPECT_FALSE(empty.expects_continue());
}

TEST(SerializeResponseTest, WritesHeadersAndBody) {
  EXPECT_EQ(SerializeResponse(201, "application/json", {{"Retry-After", "1"}}, "{}", false),
            "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
            "Retry-After: 1\r\n\r\n{}");
  EXPECT_EQ(SerializeResponse(599, "", {}, "x", true, /*head_only=*/true),
            "HTTP/1.1 599 Status\r\nContent-Length: 1\r\nConnection: close\r\n\r\n");
}

}  // namespace
}  // namespace handoff::fakeapi
