// The fake API server over the network: TLS, identities, and its command line.
#include "rehearsal/fakeapi/fake_api_server.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/kube/http_transport.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/fakeapi/fake_apiserver_cli.h"
#include "tests/coordinator/fake_cluster.h"

namespace handoff::fakeapi {
namespace {

using ::handoff::testing::FakeCluster;
using ::handoff::testing::ReadTestdata;
using ::handoff::testing::TempDir;
using ::handoff::testing::Testdata;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kNodes[] = "/api/v1/nodes";

absl::StatusOr<kube::HttpResponse> Get(const kube::ClusterCredentials& credentials,
                                       const std::string& path) {
  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
      kube::NewCurlTransport(credentials);
  if (!transport.ok()) return transport.status();
  kube::HttpRequest request;
  request.path = path;
  request.timeout = absl::Seconds(10);
  return (*transport)->Send(request);
}

TEST(FakeApiServerTest, ClientCertificateIsTheUser) {
  FakeCluster cluster;
  cluster.store().Forbid("handoff-operator", "list", "nodes");
  absl::StatusOr<kube::HttpResponse> response = Get(cluster.Credentials(), kNodes);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 403);
  EXPECT_THAT(response->body, HasSubstr("User \\\"handoff-operator\\\" cannot list"));
  // The certificate's O is a group.
  UserInfo seen;
  cluster.store().SetAuthorizer([&seen](const Access& access) {
    seen = access.user;
    return true;
  });
  ASSERT_TRUE(Get(cluster.Credentials(), "/api/v1/pods").ok());
  EXPECT_EQ(seen.name, "handoff-operator");
  EXPECT_THAT(seen.groups, ::testing::Contains("system:masters"));
}

// The cluster's credentials with a bearer token instead of the client certificate.
kube::ClusterCredentials WithToken(const FakeCluster& cluster, const std::string& token) {
  kube::ClusterCredentials credentials = cluster.Credentials();
  credentials.client_cert_pem.clear();
  credentials.client_key_pem.clear();
  credentials.bearer_token = token;
  return credentials;
}

TEST(FakeApiServerTest, TokensAndAnonymous) {
  FakeCluster cluster;
  kube::ClusterCredentials credentials = WithToken(cluster, "operator-token");
  absl::StatusOr<kube::HttpResponse> response = Get(credentials, kNodes);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(cluster.store().requests().back().user, "token-operator");

  credentials.bearer_token = "wrong";
  EXPECT_EQ(Get(credentials, kNodes)->status, 401);
  credentials.bearer_token.clear();
  response = Get(credentials, kNodes);
  EXPECT_EQ(response->status, 403);
  EXPECT_THAT(response->body, HasSubstr("User \\\"system:anonymous\\\""));
}

// Credentials not read from a kubeconfig are checked too: a token with CR LF never reaches the
// server as an injected header.
TEST(FakeApiServerTest, ATokenThatWouldInjectAHeaderIsNeverSent) {
  FakeCluster cluster;
  absl::StatusOr<kube::HttpResponse> response =
      Get(WithToken(cluster, "t\r\nImpersonate-User: admin"), kNodes);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(response.status().message(),
              HasSubstr("the bearer token contains a carriage return (CR) at byte 2"));
  EXPECT_TRUE(cluster.store().requests().empty());
}

TEST(FakeApiServerTest, ClientCertificateFromAnotherCaIsRejected) {
  FakeCluster cluster;
  kube::ClusterCredentials credentials = cluster.Credentials();
  // Self-signed, not from the test CA.
  credentials.client_cert_pem = ReadTestdata("tls/server.crt");
  credentials.client_key_pem = ReadTestdata("tls/server.key");
  // Refused in the handshake; with TLS 1.3 the client sees it as a broken exchange.
  absl::StatusOr<kube::HttpResponse> response = Get(credentials, kNodes);
  EXPECT_FALSE(response.ok()) << response->status;
  EXPECT_TRUE(cluster.store().requests().empty());
}

TEST(FakeApiServerTest, PlainHttp) {
  ApiStore store;
  absl::StatusOr<std::unique_ptr<FakeApiServer>> server =
      FakeApiServer::Start(store, FakeApiServerOptions());
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_THAT((*server)->url(), StartsWith("http://127.0.0.1:"));
  kube::ClusterCredentials credentials;
  credentials.server = (*server)->url();
  credentials.bearer_token = "t";
  absl::StatusOr<kube::HttpResponse> response = Get(credentials, kNodes);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 401);  // no tokens configured
}

TEST(FakeApiServerTest, BadTlsFilesAreAnError) {
  ApiStore store;
  FakeApiServerOptions options;
  options.cert_file = Testdata("kube-tls/server.crt");
  options.key_file = Testdata("kube-tls/client.key");  // not the certificate's key
  absl::StatusOr<std::unique_ptr<FakeApiServer>> server = FakeApiServer::Start(store, options);
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("does not match"));
}

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

CliResult RunCli(std::vector<std::string> args,
                 const std::function<void(const std::string&)>& while_serving) {
  args.insert(args.begin(), "handoff-fake-apiserver");
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  std::ostringstream out;
  std::ostringstream err;
  std::unique_ptr<FileSystem> fs = NewPosixFileSystem("");
  const int code =
      RunFakeApiServerCli(static_cast<int>(argv.size()), argv.data(), out, err, *fs, while_serving);
  return CliResult{code, out.str(), err.str()};
}

TEST(FakeApiServerCliTest, ServesTheSeedUntilStopped) {
  TempDir dir;
  const std::string port_file = dir.path() + "/port";
  int status = 0;
  CliResult result = RunCli(
      {"--tls-cert", Testdata("kube-tls/server.crt"), "--tls-key", Testdata("kube-tls/server.key"),
       "--client-ca", Testdata("kube-tls/ca.crt"), "--seed", Testdata("cluster/kubeadm.yaml"),
       "--token", "t1=alice,system:masters", "--port-file", port_file},
      [&](const std::string& url) {
        kube::ClusterCredentials credentials;
        credentials.server = url;
        credentials.ca_pem = ReadTestdata("kube-tls/ca.crt");
        credentials.bearer_token = "t1";
        absl::StatusOr<kube::HttpResponse> response = Get(credentials, kNodes);
        ASSERT_TRUE(response.ok()) << response.status();
        status = response->status;
      });
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_EQ(status, 200);
  EXPECT_THAT(result.out, HasSubstr("serving https://127.0.0.1:"));
  EXPECT_THAT(result.out, HasSubstr("(12 objects)"));
  std::ifstream in(port_file);
  int port = 0;
  in >> port;
  EXPECT_GT(port, 0);
  EXPECT_THAT(result.out, HasSubstr(":" + std::to_string(port) + " "));
}

// --port-file naming a device or a FIFO (directly or through a symlink) is refused before the
// server serves, and left as it was; through a symlink to a file, that file gets the port.
TEST(FakeApiServerCliTest, APortFileThatIsNotARegularFileIsRefusedAndLeftAsItWas) {
  TempDir dir;
  const std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string device_link = dir.path() + "/null";
  std::filesystem::create_symlink("/dev/null", device_link);
  auto never = [](const std::string&) { ADD_FAILURE() << "must not serve"; };
  for (const std::string& port_file : {fifo, device_link}) {
    CliResult result = RunCli({"--plain-http", "--port-file", port_file}, never);
    EXPECT_EQ(result.code, 2) << port_file;
    EXPECT_THAT(result.err,
                AllOf(HasSubstr("--port-file: " + port_file), HasSubstr("not a regular file")));
  }
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
  EXPECT_TRUE(std::filesystem::is_symlink(device_link));
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));

  const std::string target = dir.path() + "/port";
  std::filesystem::create_symlink(target, dir.path() + "/port-link");
  CliResult served =
      RunCli({"--plain-http", "--port-file", dir.path() + "/port-link"}, [](const std::string&) {});
  EXPECT_EQ(served.code, 0) << served.err;
  EXPECT_TRUE(std::filesystem::is_symlink(dir.path() + "/port-link"));
  std::ifstream in(target);
  int port = 0;
  in >> port;
  EXPECT_GT(port, 0);
}

TEST(FakeApiServerCliTest, UsageErrors) {
  auto never = [](const std::string&) { ADD_FAILURE() << "must not serve"; };
  CliResult result = RunCli({}, never);
  EXPECT_EQ(result.code, 2);
  EXPECT_EQ(result.err,
            "handoff-fake-apiserver: give --tls-cert and --tls-key (or --plain-http)\n");
  result = RunCli({"--plain-http", "--token", "nouser"}, never);
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.err, HasSubstr("--token nouser: expected TOKEN=USER[,GROUP...]"));
  result = RunCli({"--plain-http", "--seed", "/nonexistent.yaml"}, never);
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.err, HasSubstr("--seed /nonexistent.yaml"));
  result = RunCli({"--help"}, never);
  EXPECT_EQ(result.code, 0);
  EXPECT_THAT(result.out, HasSubstr("Not modelled: watch, PATCH"));
}

}  // namespace
}  // namespace handoff::fakeapi
