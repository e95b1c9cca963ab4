#include "common/kube/kubeconfig.h"

#include <map>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"

namespace handoff::kube {
namespace {

using ::handoff::testing::Message;
using ::handoff::testing::ReadTestdata;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string Base64(const std::string& data) { return absl::Base64Escape(data); }

// Files a kubeconfig may name, served from memory.
class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    files_["/etc/kubernetes/pki/ca.crt"] = ReadTestdata("kube-tls/ca.crt");
    files_["/etc/kubernetes/pki/client.crt"] = ReadTestdata("kube-tls/client.crt");
    files_["/etc/kubernetes/pki/client.key"] = ReadTestdata("kube-tls/client.key");
    files_["/home/op/.kube/token"] = "  secret-from-file\n";
  }

  absl::StatusOr<ClusterCredentials> Parse(const std::string& text,
                                           const std::string& context = "") {
    return ParseKubeconfig(text, "/home/op/.kube/config", context,
                           [this](const std::string& path) -> absl::StatusOr<std::string> {
                             read_.push_back(path);
                             auto it = files_.find(path);
                             if (it == files_.end()) {
                               return absl::NotFoundError(StrCat(path, ": no such file"));
                             }
                             return it->second;
                           });
  }

  std::map<std::string, std::string> files_;
  std::vector<std::string> read_;
};

// The shape of kubeadm's /etc/kubernetes/admin.conf: everything inline as base64.
TEST_F(KubeconfigTest, AdminConfWithInlineData) {
  const std::string text = StrCat(
      "apiVersion: v1\n"
      "clusters:\n"
      "- cluster:\n"
      "    certificate-authority-data: ",
      Base64(files_["/etc/kubernetes/pki/ca.crt"]),
      "\n"
      "    server: https://10.0.1.10:6443/\n"
      "  name: kubernetes\n"
      "contexts:\n"
      "- context:\n"
      "    cluster: kubernetes\n"
      "    user: kubernetes-admin\n"
      "  name: kubernetes-admin@kubernetes\n"
      "current-context: kubernetes-admin@kubernetes\n"
      "kind: Config\n"
      "preferences: {}\n"
      "users:\n"
      "- name: kubernetes-admin\n"
      "  user:\n"
      "    client-certificate-data: ",
      Base64(files_["/etc/kubernetes/pki/client.crt"]),
      "\n"
      "    client-key-data: ",
      Base64(files_["/etc/kubernetes/pki/client.key"]), "\n");
  absl::StatusOr<ClusterCredentials> credentials = Parse(text);
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(credentials->server, "https://10.0.1.10:6443");  // trailing slash dropped
  EXPECT_EQ(credentials->context, "kubernetes-admin@kubernetes");
  EXPECT_EQ(credentials->cluster_name, "kubernetes");
  EXPECT_EQ(credentials->user_name, "kubernetes-admin");
  EXPECT_EQ(credentials->ca_pem, files_["/etc/kubernetes/pki/ca.crt"]);
  EXPECT_EQ(credentials->client_cert_pem, files_["/etc/kubernetes/pki/client.crt"]);
  EXPECT_EQ(credentials->client_key_pem, files_["/etc/kubernetes/pki/client.key"]);
  EXPECT_EQ(credentials->identity, "handoff-operator");  // the certificate's CN
  EXPECT_FALSE(credentials->insecure_skip_tls_verify);
  EXPECT_THAT(credentials->warnings, IsEmpty());
  EXPECT_THAT(read_, IsEmpty());
}

TEST_F(KubeconfigTest, FilesByAbsoluteAndRelativePath) {
  files_["/home/op/.kube/certs/ca.pem"] = files_["/etc/kubernetes/pki/ca.crt"];
  absl::StatusOr<ClusterCredentials> credentials = Parse(
      "clusters:\n"
      "- name: c\n"
      "  cluster:\n"
      "    server: https://api.example:6443\n"
      "    certificate-authority: certs/ca.pem\n"
      "users:\n"
      "- name: u\n"
      "  user:\n"
      "    client-certificate: /etc/kubernetes/pki/client.crt\n"
      "    client-key: /etc/kubernetes/pki/client.key\n"
      "contexts:\n"
      "- name: x\n"
      "  context: {cluster: c, user: u, namespace: kube-system}\n"
      "current-context: x\n");
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  // Relative to the kubeconfig's directory, as kubectl resolves them.
  EXPECT_THAT(read_, ElementsAre("/home/op/.kube/certs/ca.pem", "/etc/kubernetes/pki/client.crt",
                                 "/etc/kubernetes/pki/client.key"));
  EXPECT_EQ(credentials->ca_pem, files_["/etc/kubernetes/pki/ca.crt"]);
  EXPECT_EQ(credentials->namespace_name, "kube-system");
  EXPECT_EQ(credentials->identity, "handoff-operator");
}

constexpr char kTwoContexts[] =
    "clusters:\n"
    "- name: prod\n"
    "  cluster: {server: 'https://prod:6443'}\n"
    "- name: lab\n"
    "  cluster: {server: 'https://lab:6443'}\n"
    "users:\n"
    "- name: token-user\n"
    "  user: {token: abc123}\n"
    "- name: file-token-user\n"
    "  user: {tokenFile: token}\n"
    "contexts:\n"
    "- name: prod\n"
    "  context: {cluster: prod, user: token-user}\n"
    "- name: lab\n"
    "  context: {cluster: lab, user: file-token-user}\n"
    "current-context: prod\n";

TEST_F(KubeconfigTest, TokenFromCurrentContext) {
  absl::StatusOr<ClusterCredentials> credentials = Parse(kTwoContexts);
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(credentials->server, "https://prod:6443");
  EXPECT_EQ(credentials->bearer_token, "abc123");
  EXPECT_EQ(credentials->ca_pem, "");  // system CAs
  EXPECT_EQ(credentials->identity, "token-user");
}

TEST_F(KubeconfigTest, ContextOverrideAndTokenFile) {
  absl::StatusOr<ClusterCredentials> credentials = Parse(kTwoContexts, "lab");
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(credentials->context, "lab");
  EXPECT_EQ(credentials->server, "https://lab:6443");
  EXPECT_EQ(credentials->bearer_token, "secret-from-file");
  EXPECT_THAT(read_, ElementsAre("/home/op/.kube/token"));
}

// A token with CR LF would end the Authorization header and inject another one of its choosing
// ("abc\r\nImpersonate-User: admin"): refused, from the file and from tokenFile, naming the
// field and never the token.
TEST_F(KubeconfigTest, ATokenThatWouldInjectAHeaderIsRefused) {
  const std::string inline_token =
      "clusters:\n- name: c\n  cluster: {server: 'https://c:6443'}\n"
      "users:\n- name: u\n  user: {token: \"abc\\r\\nImpersonate-User: admin\"}\n"
      "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n";
  absl::StatusOr<ClusterCredentials> credentials = Parse(inline_token);
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(credentials.status()),
              AllOf(HasSubstr("/home/op/.kube/config: users[\"u\"].user.token: contains a carriage "
                              "return (CR) at byte 4"),
                    ::testing::Not(HasSubstr("Impersonate"))));

  files_["/home/op/.kube/token"] = "abc\nImpersonate-User: admin\n";
  credentials = Parse(kTwoContexts, "lab");
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      Message(credentials.status()),
      HasSubstr("users[\"file-token-user\"].user.tokenFile: /home/op/.kube/token: contains a "
                "line feed (LF) at byte 4"));

  // A tab is a legal header character; surrounding whitespace of a token file is trimmed.
  EXPECT_TRUE(CheckHeaderValue("a\tb").ok());
  EXPECT_FALSE(CheckHeaderValue(std::string("a\0b", 3)).ok());
  EXPECT_FALSE(CheckHeaderValue("a\x7f").ok());
}

TEST_F(KubeconfigTest, UnknownContextListsTheOthers) {
  absl::StatusOr<ClusterCredentials> credentials = Parse(kTwoContexts, "staging");
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Message(credentials.status()),
            "/home/op/.kube/config: contexts: no entry named \"staging\" (entries: prod, lab); "
            "the context \"staging\" comes from --context");
}

TEST_F(KubeconfigTest, NoCurrentContext) {
  absl::StatusOr<ClusterCredentials> credentials = Parse("clusters: []\ncontexts: []\nusers: []\n");
  EXPECT_EQ(Message(credentials.status()),
            "/home/op/.kube/config: current-context: not set; pass --context NAME or run "
            "`kubectl config use-context NAME`");
}

TEST_F(KubeconfigTest, ContextNamesAMissingCluster) {
  absl::StatusOr<ClusterCredentials> credentials = Parse(
      "clusters:\n- name: a\n  cluster: {server: 'https://a'}\n"
      "contexts:\n- name: x\n  context: {cluster: b, user: u}\n"
      "current-context: x\n");
  EXPECT_EQ(Message(credentials.status()),
            "/home/op/.kube/config: clusters: no entry named \"b\" (entries: a)");
}

TEST_F(KubeconfigTest, MissingServer) {
  absl::StatusOr<ClusterCredentials> credentials = Parse(
      "clusters:\n- name: a\n  cluster: {insecure-skip-tls-verify: false}\n"
      "contexts:\n- name: x\n  context: {cluster: a}\ncurrent-context: x\n");
  EXPECT_EQ(Message(credentials.status()),
            "/home/op/.kube/config: clusters[\"a\"].cluster.server: missing; set the API "
            "server's URL, e.g. https://10.0.0.10:6443");
}

TEST_F(KubeconfigTest, BadBase64NamesTheField) {
  absl::StatusOr<ClusterCredentials> credentials = Parse(
      "clusters:\n- name: a\n  cluster: {server: 'https://a', "
      "certificate-authority-data: 'not*base64'}\n"
      "contexts:\n- name: x\n  context: {cluster: a}\ncurrent-context: x\n");
  EXPECT_EQ(Message(credentials.status()),
            "/home/op/.kube/config: clusters[\"a\"].cluster.certificate-authority-data: not valid "
            "base64; paste the output of `base64 -w0 FILE`");
}

TEST_F(KubeconfigTest, UnreadableFileNamesFieldAndPath) {
  absl::StatusOr<ClusterCredentials> credentials = Parse(
      "clusters:\n- name: a\n  cluster: {server: 'https://a', "
      "certificate-authority: /nowhere/ca.crt}\n"
      "contexts:\n- name: x\n  context: {cluster: a}\ncurrent-context: x\n");
  EXPECT_EQ(Message(credentials.status()),
            "/home/op/.kube/config: clusters[\"a\"].cluster.certificate-authority: cannot read "
            "/nowhere/ca.crt: /nowhere/ca.crt: no such file");
}

TEST_F(KubeconfigTest, CertificateWithoutKey) {
  absl::StatusOr<ClusterCredentials> credentials = Parse(
      "clusters:\n- name: a\n  cluster: {server: 'https://a'}\n"
      "users:\n- name: u\n  user: {client-certificate: /etc/kubernetes/pki/client.crt}\n"
      "contexts:\n- name: x\n  context: {cluster: a, user: u}\ncurrent-context: x\n");
  EXPECT_EQ(Message(credentials.status()),
            "/home/op/.kube/config: users[\"u\"].user: has a client certificate but no client "
            "key; set client-key or client-key-data");
}

TEST_F(KubeconfigTest, ExecPluginsAreRefusedNotIgnored) {
  absl::StatusOr<ClusterCredentials> credentials = Parse(
      "clusters:\n- name: a\n  cluster: {server: 'https://a'}\n"
      "users:\n- name: u\n  user:\n    exec: {command: aws, args: [eks, get-token]}\n"
      "contexts:\n- name: x\n  context: {cluster: a, user: u}\ncurrent-context: x\n");
  EXPECT_THAT(Message(credentials.status()),
              AllOf(HasSubstr("users[\"u\"].user.exec: not supported by handoff"),
                    HasSubstr("/etc/kubernetes/admin.conf")));
}

TEST_F(KubeconfigTest, InsecureSkipTlsVerifyIsHonouredLoudly) {
  absl::StatusOr<ClusterCredentials> credentials = Parse(
      "clusters:\n- name: a\n  cluster: {server: 'https://a:6443', "
      "insecure-skip-tls-verify: true}\n"
      "contexts:\n- name: x\n  context: {cluster: a}\ncurrent-context: x\n");
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_TRUE(credentials->insecure_skip_tls_verify);
  ASSERT_EQ(credentials->warnings.size(), 1u);
  EXPECT_THAT(credentials->warnings[0],
              AllOf(HasSubstr("insecure-skip-tls-verify is true"),
                    HasSubstr("certificate is NOT verified"), HasSubstr("https://a:6443")));
  EXPECT_EQ(credentials->identity, "(anonymous)");
}

TEST_F(KubeconfigTest, InsecureTogetherWithACaIsAnError) {
  absl::StatusOr<ClusterCredentials> credentials = Parse(
      "clusters:\n- name: a\n  cluster: {server: 'https://a', insecure-skip-tls-verify: "
      "true, certificate-authority: /etc/kubernetes/pki/ca.crt}\n"
      "contexts:\n- name: x\n  context: {cluster: a}\ncurrent-context: x\n");
  EXPECT_EQ(Message(credentials.status()),
            "/home/op/.kube/config: clusters[\"a\"].cluster.insecure-skip-tls-verify: set together "
            "with a certificate authority; remove one of them");
}

TEST_F(KubeconfigTest, FieldsAreTypedAsClientGoTypesThem) {
  // A quoted "true" is a string, which client-go's bool field refuses; a YAML 1.1 yes is true.
  EXPECT_EQ(Message(Parse("clusters:\n- name: a\n  cluster: {server: 'https://a', "
                          "insecure-skip-tls-verify: \"true\"}\n"
                          "contexts:\n- name: x\n  context: {cluster: a}\ncurrent-context: x\n")
                        .status()),
            "/home/op/.kube/config: clusters[\"a\"].cluster.insecure-skip-tls-verify: must be "
            "true or false, found a string");
  absl::StatusOr<ClusterCredentials> yes =
      Parse("clusters:\n- name: a\n  cluster: {server: 'https://a', insecure-skip-tls-verify: "
            "yes}\ncontexts:\n- name: x\n  context: {cluster: a}\ncurrent-context: x\n");
  ASSERT_TRUE(yes.ok()) << yes.status();
  EXPECT_TRUE(yes->insecure_skip_tls_verify);
  EXPECT_EQ(Message(Parse("clusters:\n- name: a\n  cluster: {server: 'https://a'}\n"
                          "users:\n- name: u\n  user: {token: 12345}\n"
                          "contexts:\n- name: x\n  context: {cluster: a, user: u}\n"
                          "current-context: x\n")
                        .status()),
            "/home/op/.kube/config: users[\"u\"].user.token: must be a string, found a number; "
            "quote it: \"12345\"");
}

TEST_F(KubeconfigTest, AliasesAreExpandedWithinBounds) {
  // client-go accepts aliases; a hand-written kubeconfig may share an entry that way.
  absl::StatusOr<ClusterCredentials> credentials =
      Parse("clusters:\n- name: a\n  cluster: &c {server: 'https://a:6443', "
            "insecure-skip-tls-verify: true}\n- name: b\n  cluster: *c\n"
            "contexts:\n- name: x\n  context: {cluster: b}\ncurrent-context: x\n");
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(credentials->server, "https://a:6443");

  std::string bomb = "current-context: x\nbomb:\n  l0: &l0 [a, a, a, a, a, a, a, a, a, a]\n";
  for (int level = 1; level < 9; ++level) {
    const std::string previous = "*l" + std::to_string(level - 1);
    bomb += "  l" + std::to_string(level) + ": &l" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) bomb += (i == 0 ? "" : ", ") + previous;
    bomb += "]\n";
  }
  EXPECT_THAT(Message(Parse(bomb).status()),
              HasSubstr(": aliases expand the document past 100000 nodes"));
}

TEST_F(KubeconfigTest, SyntaxErrorNamesTheLine) {
  absl::StatusOr<ClusterCredentials> credentials = Parse("clusters:\n  - name: [\n");
  EXPECT_THAT(Message(credentials.status()), HasSubstr("/home/op/.kube/config:3:"));
}

TEST_F(KubeconfigTest, LoadReadsThroughTheFileSystem) {
  ::handoff::testing::TempDir dir;
  const std::string path = dir.Write(
      "config", StrCat("clusters:\n- name: a\n  cluster:\n    server: https://a\n"
                       "    certificate-authority: ca.crt\n"
                       "contexts:\n- name: x\n  context: {cluster: a}\ncurrent-context: x\n"));
  dir.Write("ca.crt", "CA");
  std::unique_ptr<FileSystem> fs = NewPosixFileSystem("");
  absl::StatusOr<ClusterCredentials> credentials = LoadKubeconfig(*fs, path, "");
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(credentials->ca_pem, "CA");
  absl::StatusOr<ClusterCredentials> missing = LoadKubeconfig(*fs, dir.path() + "/nope", "");
  EXPECT_THAT(Message(missing.status()),
              AllOf(HasSubstr("cannot read the kubeconfig " + dir.path() + "/nope"),
                    HasSubstr("pass --kubeconfig FILE")));
}

TEST(CertificateSubjectTest, CommonNameAndOrganizations) {
  absl::StatusOr<CertificateSubject> subject =
      ParseCertificateSubject(ReadTestdata("kube-tls/client.crt"));
  ASSERT_TRUE(subject.ok()) << subject.status();
  EXPECT_EQ(subject->common_name, "handoff-operator");
  EXPECT_THAT(subject->organizations, ElementsAre("system:masters"));
  EXPECT_FALSE(ParseCertificateSubject("junk").ok());
}

}  // namespace
}  // namespace handoff::kube
