// etcd's member list (coordinator/kube/etcd_members.h): the gateway's answer as etcd 3.5 sends it
// (tests/real/ctl_real_test.cc reads a real etcd's), over a scripted transport.
#include "coordinator/kube/etcd_members.h"

#include <memory>
#include <string>
#include <vector>

#include "agent/fs/memory_file_system.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// An answer in the gateway's form (etcdserverpb.MemberListResponse as proto3 JSON: uint64 IDs as
// strings, empty fields left out): two members, one a learner added but not started.
constexpr char kAnswer[] =
    R"({"header":{"cluster_id":"14841639068965178418","member_id":"10276657743932975437",)"
    R"("raft_term":"2"},"members":[{"ID":"10276657743932975437",)"
    R"("name":"ip-172-31-250-10.ec2.internal","peerURLs":["https://172.31.250.10:2380"],)"
    R"("clientURLs":["https://172.31.250.10:2379"]},{"ID":"1520213423617592931",)"
    R"("peerURLs":["https://172.31.250.74:2380"],"isLearner":true}]})";

class ScriptedTransport : public HttpTransport {
 public:
  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override {
    requests.push_back(request);
    return response;
  }
  HttpResponse response;
  std::vector<HttpRequest> requests;
};

TEST(EtcdMembersTest, ParsesEachMemberAsEtcdSendsIt) {
  absl::StatusOr<std::vector<EtcdMember>> members = ParseEtcdMembers(kAnswer);
  ASSERT_TRUE(members.ok()) << members.status();
  ASSERT_EQ(members->size(), 2u);
  EXPECT_EQ((*members)[0].id, "10276657743932975437");
  EXPECT_EQ((*members)[0].name, "ip-172-31-250-10.ec2.internal");
  EXPECT_THAT((*members)[0].peer_urls, ElementsAre("https://172.31.250.10:2380"));
  EXPECT_FALSE((*members)[0].learner);
  // A member added but not started has no name yet.
  EXPECT_EQ((*members)[1].name, "");
  EXPECT_TRUE((*members)[1].learner);
  EXPECT_TRUE(ParseEtcdMembers(R"({"header":{}})")->empty());
  EXPECT_EQ(ParseEtcdMembers("[]").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseEtcdMembers(R"({"members":[{"name":"a"}]})").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseEtcdMembers("{").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EtcdMembersTest, AsksTheGatewayAndRefusesAnErrorAnswer) {
  ScriptedTransport transport;
  transport.response.status = 200;
  transport.response.body = kAnswer;
  absl::StatusOr<std::vector<EtcdMember>> members = ListEtcdMembers(transport);
  ASSERT_TRUE(members.ok()) << members.status();
  EXPECT_EQ(members->size(), 2u);
  ASSERT_EQ(transport.requests.size(), 1u);
  EXPECT_EQ(transport.requests[0].method, "POST");
  EXPECT_EQ(transport.requests[0].path, "/v3/cluster/member/list");
  EXPECT_EQ(transport.requests[0].body, "{}");
  transport.response.status = 401;
  transport.response.body = R"({"error":"etcdserver: user name is empty"})";
  members = ListEtcdMembers(transport);
  EXPECT_EQ(members.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(members.status().message()), HasSubstr("HTTP 401"));
}

TEST(EtcdMembersTest, TheCredentialsNameTheFlagOfAMissingFile) {
  MemoryFileSystem fs;
  fs.SetFile("/pki/ca.crt", "CA");
  fs.SetFile("/pki/client.crt", "CERT");
  fs.SetFile("/pki/client.key", "");
  absl::StatusOr<ClusterCredentials> credentials =
      EtcdCredentials(fs, "https://127.0.0.1:2379/", "/pki/ca.crt", "/pki/client.crt", "");
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(credentials->server, "https://127.0.0.1:2379");
  EXPECT_EQ(credentials->ca_pem, "CA");
  EXPECT_EQ(credentials->client_cert_pem, "CERT");
  credentials = EtcdCredentials(fs, "https://h:2379", "/pki/ca.crt", "/pki/x.crt", "");
  EXPECT_THAT(std::string(credentials.status().message()), HasSubstr("--etcd-cert /pki/x.crt"));
  credentials = EtcdCredentials(fs, "https://h:2379", "", "", "/pki/client.key");
  EXPECT_THAT(std::string(credentials.status().message()),
              HasSubstr("--etcd-key /pki/client.key is empty"));
  credentials = EtcdCredentials(fs, "127.0.0.1:2379", "", "", "");
  EXPECT_THAT(std::string(credentials.status().message()), HasSubstr("not an http(s) URL"));
}

}  // namespace
}  // namespace handoff::kube
