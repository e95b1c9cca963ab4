// The fake API server's limits on what one request may carry: body size (413) and JSON depth
// (400), as ApiStore and the HTTP path (HandleRequestForTest) answer them.
#include <pthread.h>

#include <functional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/fakeapi/api_http.h"
#include "rehearsal/fakeapi/api_store.h"

namespace handoff::fakeapi {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kLeases[] = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
constexpr char kConfigMaps[] = "/api/v1/namespaces/kube-system/configmaps";

const UserInfo kAdmin{"admin", {"system:masters"}};

ApiResponse Do(ApiStore& store, const std::string& method, const std::string& path,
               const std::string& body = "", std::optional<UserInfo> user = kAdmin) {
  ApiRequest request;
  request.method = method;
  request.path = path;
  request.body = body;
  request.user = std::move(user);
  return store.Handle(request);
}

// A Lease whose spec.data nests `arrays` arrays: the issue's 200 KB body at 100,000.
std::string DeepLease(const std::string& name, int arrays) {
  return R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":")" + name +
         R"(","namespace":"kube-system"},"spec":{"data":)" + std::string(arrays, '[') +
         std::string(arrays, ']') + "}}";
}

std::string ConfigMapOfSize(size_t size) {
  const std::string head =
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"k":")";
  const std::string tail = R"("}})";
  return head + std::string(size - head.size() - tail.size(), 'x') + tail;
}

TEST(RequestLimitsTest, TheIssuesDeepLeaseGets400) {
  ApiStore store;
  const std::string body = DeepLease("deep", 100'000);
  EXPECT_GT(body.size(), 200'000u);
  const ApiResponse response = Do(store, "POST", kLeases, body);
  EXPECT_EQ(response.status, 400);
  // Shaped as kube-apiserver's decoder error for JSON beyond its depth.
  EXPECT_EQ(Json::parse(response.body), Json::parse(R"json({
    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
    "message": "the object provided is unrecognized (must be of type Lease): couldn't get version/kind; json parse error: invalid character '[' exceeded max depth ({\"apiVersion\":\"coordination.k8 ...)",
    "reason": "BadRequest", "code": 400})json"));
  EXPECT_FALSE(store.Get(kube::kLeases, "kube-system", "deep"));
  // The store still serves.
  EXPECT_EQ(Do(store, "GET", std::string(kLeases)).status, 200);
}

TEST(RequestLimitsTest, DepthIsCountedOutsideStringsOnly) {
  ApiStore store;
  // Brackets inside strings (escaped quotes included) do not nest.
  const std::string brackets = std::string(kMaxJsonDepth * 2, '[');
  const std::string body =
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s"},"data":{"a":"\")" +
      brackets + R"("}})";
  EXPECT_EQ(Do(store, "POST", kConfigMaps, body).status, 201);
  // Objects count as arrays do; PUT is checked as POST is.
  std::string deep_objects;
  for (int i = 0; i < kMaxJsonDepth; ++i) deep_objects += R"({"a":)";
  deep_objects += "1" + std::string(kMaxJsonDepth, '}');
  const ApiResponse response =
      Do(store, "PUT", std::string(kConfigMaps) + "/s",
         R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s"},"data":)" +
             deep_objects + "}");
  EXPECT_EQ(response.status, 400);
  EXPECT_THAT(response.body, HasSubstr("invalid character '{' exceeded max depth"));
}

// Runs `body` on a thread with a stack of `bytes`.
void RunOnStack(size_t bytes, std::function<void()> body) {
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  ASSERT_EQ(pthread_attr_setstacksize(&attributes, bytes), 0);
  pthread_t thread;
  ASSERT_EQ(pthread_create(
                &thread, &attributes,
                [](void* run) -> void* {
                  (*static_cast<std::function<void()>*>(run))();
                  return nullptr;
                },
                &body),
            0);
  pthread_attr_destroy(&attributes);
  pthread_join(thread, nullptr);
}

// The stack the deepest object must fit in: half the 8 MiB main thread, so that an optimised
// build has room to spare. Unoptimised code under ASan (CI's sanitizer and fuzz build: clang at
// -O0 puts a red zone around every local) needs over 8 KiB per level of nlohmann's dump, a
// little over 4 MiB for all: there the whole 8 MiB its fuzzers run on is what must suffice.
#if defined(__OPTIMIZE__)
constexpr size_t kDeepestObjectStack = size_t{4} << 20;
#else
constexpr size_t kDeepestObjectStack = size_t{8} << 20;
#endif

TEST(RequestLimitsTest, TheDeepestAcceptedObjectIsServedWithinItsStackBudget) {
  // kMaxJsonDepth levels in all (the Lease and its spec are two), stored, read and listed (two
  // levels more) on kDeepestObjectStack. A build whose frames outgrow this fails here instead of
  // crashing in the field or in a fuzzer.
  ApiStore store;
  int created = 0;
  int got = 0;
  int listed = 0;
  std::string one_deeper;
  RunOnStack(kDeepestObjectStack, [&] {
    created = Do(store, "POST", kLeases, DeepLease("deepest", kMaxJsonDepth - 2)).status;
    got = Do(store, "GET", std::string(kLeases) + "/deepest").status;
    listed = Do(store, "GET", kLeases).status;
    one_deeper = Do(store, "POST", kLeases, DeepLease("deeper", kMaxJsonDepth - 1)).body;
  });
  EXPECT_EQ(created, 201);
  EXPECT_EQ(got, 200);
  EXPECT_EQ(listed, 200);
  EXPECT_THAT(one_deeper, HasSubstr("exceeded max depth"));
}

TEST(RequestLimitsTest, BodyOverTheLimitGets413AfterAuthorization) {
  ApiStore store;
  // kube-apiserver's body for limitedReadBody's error.
  const Json too_large = Json::parse(
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":)"
      R"("Request entity too large: limit is 3145728","reason":"RequestEntityTooLarge",)"
      R"("code":413})");
  ApiResponse response =
      Do(store, "POST", kConfigMaps, ConfigMapOfSize(kMaxRequestBodyBytes + 1));
  EXPECT_EQ(response.status, 413);
  EXPECT_EQ(Json::parse(response.body), too_large);
  // What the HTTP layer reports when it stopped reading.
  ApiRequest request;
  request.method = "PUT";
  request.path = std::string(kConfigMaps) + "/big";
  request.body_too_large = true;
  request.user = kAdmin;
  EXPECT_EQ(store.Handle(request).status, 413);
  // Authentication and authorization come first, as in kube-apiserver's filter chain.
  request.user = std::nullopt;
  EXPECT_EQ(store.Handle(request).status, 401);
  request.user = UserInfo{std::string(kAnonymousUser), {}};
  EXPECT_EQ(store.Handle(request).status, 403);
  // At the limit: served (kube-apiserver would pass it on to etcd, which refuses objects over
  // 1.5 MiB; README.md).
  response = Do(store, "POST", kConfigMaps, ConfigMapOfSize(kMaxRequestBodyBytes));
  EXPECT_EQ(response.status, 201) << response.body.substr(0, 300);
}

TEST(RequestLimitsTest, MessagesWithInvalidUtf8AreServed) {
  ApiStore store;
  const ApiResponse response = Do(store, "GET", std::string(kConfigMaps) + "/\xff\xfe");
  EXPECT_EQ(response.status, 404);
  // Written as U+FFFD, as Go's encoder writes invalid UTF-8.
  EXPECT_THAT(response.body, HasSubstr("\xef\xbf\xbd"));
}

TEST(HandleRequestForTestTest, ServesRawRequests) {
  ApiStore store;
  const std::string body = ConfigMapOfSize(200);
  std::string response = HandleRequestForTest(
      store, "POST /api/v1/namespaces/kube-system/configmaps HTTP/1.1\r\nHost: x\r\n"
             "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body,
      kAdmin);
  EXPECT_THAT(response, StartsWith("HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"));
  // Tokens, anonymous, query decoding.
  const std::map<std::string, UserInfo> tokens{{"t", kAdmin}};
  response = HandleRequestForTest(
      store,
      "GET /api/v1/namespaces/kube-system/configmaps?labelSelector=a+in+%28b%29 HTTP/1.1\r\nHost: x\r\n"
      "Authorization: Bearer t\r\n\r\n",
      std::nullopt, tokens);
  EXPECT_THAT(response, StartsWith("HTTP/1.1 400 Bad Request\r\n"));
  EXPECT_THAT(response, HasSubstr(R"(not \"a in (b)\")"));
  response = HandleRequestForTest(store, "GET /api/v1/nodes HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(response, StartsWith("HTTP/1.1 403 Forbidden\r\n"));
  response = HandleRequestForTest(
      store, "GET /api/v1/nodes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\n\r\n");
  EXPECT_THAT(response, StartsWith("HTTP/1.1 401 Unauthorized\r\n"));
  // The wire's own errors, and a request still waiting for bytes.
  EXPECT_THAT(HandleRequestForTest(store, "GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n", kAdmin),
              StartsWith("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain"));
  EXPECT_THAT(HandleRequestForTest(store, "nonsense\r\n\r\n"), StartsWith("HTTP/1.1 400"));
  EXPECT_EQ(HandleRequestForTest(store, "GET / HTTP/1.1\r\nHost: x\r\n"), "");
  // HEAD keeps the length, not the body.
  response = HandleRequestForTest(store, "HEAD /api/v1/nodes HTTP/1.1\r\nHost: x\r\n\r\n", kAdmin);
  EXPECT_THAT(response, HasSubstr("Content-Length: "));
  EXPECT_EQ(response.substr(response.size() - 4), "\r\n\r\n");
}

TEST(HandleRequestForTestTest, OversizedBodyClosesTheConnection) {
  ApiStore store;
  const std::string response = HandleRequestForTest(
      store, "POST /api/v1/namespaces/kube-system/configmaps HTTP/1.1\r\nHost: x\r\n"
             "Content-Length: 4194304\r\n\r\n{",
      kAdmin);
  EXPECT_THAT(response, StartsWith("HTTP/1.1 413 Request Entity Too Large\r\n"));
  EXPECT_THAT(response, HasSubstr("Connection: close\r\n"));
  EXPECT_THAT(response, HasSubstr(R"("reason":"RequestEntityTooLarge")"));
}

}  // namespace
}  // namespace handoff::fakeapi
