// etcd's member list (coordinator/kube/etcd_members.h): the gateway's answer as etcd 3.5 sends it
// (tests/real/ctl_real_test.cc reads a real etcd's), over a scripted transport.
#include "coordinator/kube/etcd_members.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/memory_file_system.h"

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

TEST(EtcdMembersTest, TheEndpointsAreCommaSeparatedUrls) {
  absl::StatusOr<std::vector<std::string>> endpoints =
      ParseEtcdEndpoints("https://10.0.1.10:2379/, https://10.0.1.11:2379");
  ASSERT_TRUE(endpoints.ok()) << endpoints.status();
  EXPECT_THAT(*endpoints, ElementsAre("https://10.0.1.10:2379", "https://10.0.1.11:2379"));
  EXPECT_THAT(std::string(ParseEtcdEndpoints("https://a:2379,10.0.1.11:2379").status().message()),
              HasSubstr("--etcd-endpoint 10.0.1.11:2379 is not an http(s) URL"));
  EXPECT_EQ(ParseEtcdEndpoints(" , ").status().code(), absl::StatusCode::kInvalidArgument);
}

// Each endpoint a scripted etcd: it answers `body`, or (down) fails to connect, as curl does.
struct ScriptedEtcd {
  bool down = false;
  std::string body = kAnswer;
  int asked = 0;
};

class ScriptedEtcdTransport : public HttpTransport {
 public:
  explicit ScriptedEtcdTransport(ScriptedEtcd& etcd) : etcd_(etcd) {}
  absl::StatusOr<HttpResponse> Send(const HttpRequest& /*request*/) override {
    ++etcd_.asked;
    if (etcd_.down) return absl::UnavailableError("Connection refused");
    HttpResponse response;
    response.status = 200;
    response.body = etcd_.body;
    return response;
  }

 private:
  ScriptedEtcd& etcd_;
};

// The gateway's answer naming `names`, each member's client URL https://<name>:2379.
std::string MemberList(const std::vector<std::string>& names) {
  std::string members;
  for (const std::string& name : names) {
    StrAppend(&members, members.empty() ? "" : ",", R"({"ID":"1","name":")", name,
              R"(","clientURLs":["https://)", name, R"(:2379"]})");
  }
  return StrCat(R"({"members":[)", members, "]}");
}

// A control plane replaced node by node: the lister follows the members etcd names, so the list
// is still read once every endpoint it was given is gone.
TEST(EtcdMembersTest, TheListerFollowsTheMembersOnceTheGivenEndpointsAreGone) {
  std::map<std::string, ScriptedEtcd> etcds;
  std::vector<std::string> made;
  EtcdMemberLister lister(
      {"https://old-1:2379", "https://old-2:2379"},
      [&](const std::string& endpoint) -> absl::StatusOr<std::unique_ptr<HttpTransport>> {
        made.push_back(endpoint);
        return std::make_unique<ScriptedEtcdTransport>(etcds[endpoint]);
      });
  for (const char* name : {"old-1", "old-2", "new-1"}) {
    etcds[StrCat("https://", name, ":2379")].body = MemberList({"old-1", "old-2", "new-1"});
  }
  absl::StatusOr<std::vector<EtcdMember>> members = lister.List();
  ASSERT_TRUE(members.ok()) << members.status();
  EXPECT_THAT((*members)[2].client_urls, ElementsAre("https://new-1:2379"));
  EXPECT_THAT(lister.Endpoints(),
              ElementsAre("https://old-1:2379", "https://old-2:2379", "https://new-1:2379"));

  // old-1 is removed: old-2 answers, and is asked first from then on.
  etcds["https://old-1:2379"].down = true;
  for (const char* name : {"old-2", "new-1", "new-2"}) {
    etcds[StrCat("https://", name, ":2379")].body = MemberList({"old-2", "new-1", "new-2"});
  }
  members = lister.List();
  ASSERT_TRUE(members.ok()) << members.status();
  EXPECT_EQ(lister.Endpoints().front(), "https://old-2:2379");
  EXPECT_THAT(lister.Endpoints(), ElementsAre("https://old-2:2379", "https://new-1:2379",
                                              "https://new-2:2379", "https://old-1:2379"));

  // Both given endpoints gone: the members learned answer.
  etcds["https://old-2:2379"].down = true;
  for (const char* name : {"new-1", "new-2"}) {
    etcds[StrCat("https://", name, ":2379")].body = MemberList({"new-1", "new-2"});
  }
  members = lister.List();
  ASSERT_TRUE(members.ok()) << members.status();
  ASSERT_EQ(members->size(), 2u);
  EXPECT_EQ((*members)[0].name, "new-1");
  EXPECT_EQ(lister.Endpoints().front(), "https://new-1:2379");
  // One transport per endpoint, made when first asked.
  EXPECT_THAT(made, ElementsAre("https://old-1:2379", "https://old-2:2379", "https://new-1:2379"));

  // Nobody answers: the error names every endpoint tried.
  for (auto& [endpoint, etcd] : etcds) etcd.down = true;
  members = lister.List();
  EXPECT_EQ(members.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(members.status().message()),
              HasSubstr("no etcd endpoint answered (https://new-1:2379, https://new-2:2379, "
                        "https://old-1:2379, https://old-2:2379)"));
}

// A node being removed: its own etcd, until it stops, answers from its own view of the cluster
// (it may still name itself), so the member list is asked of the others first, and of it only
// when no other answers.
TEST(EtcdMembersTest, TheLeavingMembersOwnEtcdIsAskedLast) {
  std::map<std::string, ScriptedEtcd> etcds;
  EtcdMemberLister lister(
      {"https://a:2379"},
      [&](const std::string& endpoint) -> absl::StatusOr<std::unique_ptr<HttpTransport>> {
        return std::make_unique<ScriptedEtcdTransport>(etcds[endpoint]);
      });
  for (const char* name : {"a", "b", "c"}) {
    etcds[StrCat("https://", name, ":2379")].body = MemberList({"a", "b", "c"});
  }
  ASSERT_TRUE(lister.List().ok());
  EXPECT_EQ(lister.LastAnswered(), "https://a:2379");
  // a leaves: its etcd still names it, the others no longer do.
  etcds["https://b:2379"].body = MemberList({"b", "c"});
  etcds["https://c:2379"].body = MemberList({"b", "c"});
  EXPECT_THAT(lister.Endpoints("a"),
              ElementsAre("https://b:2379", "https://c:2379", "https://a:2379"));
  absl::StatusOr<std::vector<EtcdMember>> members = lister.List("a");
  ASSERT_TRUE(members.ok()) << members.status();
  ASSERT_EQ(members->size(), 2u);
  EXPECT_EQ((*members)[0].name, "b");
  EXPECT_EQ(lister.LastAnswered(), "https://b:2379");
  EXPECT_EQ(etcds["https://a:2379"].asked, 1);
  // Only a answers: its own view is all there is.
  ASSERT_TRUE(lister.List().ok());  // learns b and c's answer again
  etcds["https://b:2379"].down = true;
  etcds["https://c:2379"].down = true;
  members = lister.List("b");
  EXPECT_EQ(members.status().code(), absl::StatusCode::kOk) << members.status();
  EXPECT_EQ(lister.LastAnswered(), "https://a:2379");
}

}  // namespace
}  // namespace handoff::kube
