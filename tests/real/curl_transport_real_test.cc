// The Kubernetes client's transport against the real kube-apiserver through a TCP relay that
// misbehaves as a TCP load balancer does when the API server behind it restarts:
// - it goes quiet (a node's kube-apiserver in its 30 s shutdown grace) while the others still
//   answer. libcurl speaks HTTP/2 to the real server, and an HTTP/2 connection outlives a stream
//   that timed out: the next request must not be sent on it;
// - it hangs up in the TLS handshake (the backend reset): nothing was sent, the client retries.
#include <memory>
#include <string>

#include "common/system/clock.h"
#include "common/kube/client.h"
#include "common/kube/http_transport.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/real/real_cluster.h"
#include "tests/support/fake_clock.h"
#include "tests/support/tcp_relay.h"

namespace handoff {
namespace {

kube::HttpRequest Get(absl::Duration timeout) {
  kube::HttpRequest request;
  request.method = "GET";
  request.path = "/version";
  request.timeout = timeout;
  return request;
}

TEST(CurlTransportRealTest, ARequestAfterATimeoutDoesNotWaitOnTheQuietConnection) {
  HANDOFF_REAL_CLUSTER_OR_SKIP(cluster);
  kube::ClusterCredentials credentials = cluster.AdminCredentials();
  std::unique_ptr<test_support::TcpRelay> relay =
      test_support::TcpRelay::InFrontOf(credentials.server);
  ASSERT_NE(relay, nullptr) << credentials.server;
  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
      kube::NewCurlTransport(credentials);
  ASSERT_TRUE(transport.ok()) << transport.status();

  absl::StatusOr<kube::HttpResponse> first = (*transport)->Send(Get(absl::Seconds(10)));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(relay->connections(), 1);

  relay->Quiet();
  absl::StatusOr<kube::HttpResponse> quiet = (*transport)->Send(Get(absl::Seconds(1)));
  EXPECT_EQ(quiet.status().code(), absl::StatusCode::kDeadlineExceeded) << quiet.status();

  // A retry on the quiet connection would time out too; over a new one the server answers.
  absl::StatusOr<kube::HttpResponse> next = (*transport)->Send(Get(absl::Seconds(5)));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->status, 200);
  EXPECT_EQ(relay->connections(), 2);
}

// Seen on the kubeadm sandbox's haproxy right after a `kubeadm join --control-plane`: the
// handshake ended in SSL_ERROR_SYSCALL, which the transport once took for a credentials problem
// and the client never retried.
TEST(CurlTransportRealTest, AHangUpInTheHandshakeIsRetriedNotBlamedOnTheCredentials) {
  HANDOFF_REAL_CLUSTER_OR_SKIP(cluster);
  kube::ClusterCredentials credentials = cluster.AdminCredentials();
  std::unique_ptr<test_support::TcpRelay> relay =
      test_support::TcpRelay::InFrontOf(credentials.server);
  ASSERT_NE(relay, nullptr) << credentials.server;

  relay->HangUp(1);
  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
      kube::NewCurlTransport(credentials);
  ASSERT_TRUE(transport.ok()) << transport.status();
  absl::StatusOr<kube::HttpResponse> hung_up = (*transport)->Send(Get(absl::Seconds(10)));
  EXPECT_EQ(hung_up.status().code(), absl::StatusCode::kUnavailable) << hung_up.status();
  EXPECT_THAT(std::string(hung_up.status().message()),
              ::testing::HasSubstr("closed the connection during the TLS handshake"));

  relay->HangUp(2);
  transport = kube::NewCurlTransport(credentials);
  ASSERT_TRUE(transport.ok()) << transport.status();
  FakeClock clock;  // the backoff between the attempts passes at once
  kube::KubeClient client(*std::move(transport), clock, kube::ClientOptionsFor(credentials));
  absl::StatusOr<kube::Json> role = client.Get(kube::ObjectRef{
      &kube::kRoles, "kube-system", "system::leader-locking-kube-controller-manager"});
  ASSERT_TRUE(role.ok()) << role.status();
  EXPECT_EQ(client.requests_sent(), 3);
  EXPECT_EQ(relay->connections(), 4);
}

}  // namespace
}  // namespace handoff
