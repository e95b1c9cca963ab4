// A fake EC2 instance metadata service (IMDSv2 only) on a loopback port, for the downtime path's
// cluster-tag check (agent/cloud/instance_tags.h) in tests and in the sandbox, where each
// simulated node's agent is pointed at one with instanceMetadata.endpoint.
//
// It answers as the real one does for what handoff asks:
//   PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds 1..21600 -> 200, a token
//     (400 without a valid TTL header);
//   GET with X-aws-ec2-metadata-token: that token -> the path's answer, text/plain; without the
//     header, or with another token, 401 (an instance that requires IMDSv2);
//   GET /latest/meta-data/instance-id, local-hostname, placement/availability-zone -> the
//     instance's;
//   GET /latest/meta-data/tags/instance[/] -> the tag keys, one a line, or 404 when the instance
//     does not allow tags in its metadata; .../tags/instance/<key> -> the value, 404 if absent.
// Unlike the real service it lists any key, '/' included, so that a test or rehearsal can see a
// confirmed check. With answer = false it accepts connections and never answers, as a metadata
// endpoint behind a firewall that drops packets would look to a client with a timeout.
#ifndef HANDOFF_REHEARSAL_IMDS_FAKE_IMDS_H_
#define HANDOFF_REHEARSAL_IMDS_FAKE_IMDS_H_

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace handoff::sandbox {

struct FakeImdsOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port
  std::string instance_id = "i-0123456789abcdef0";
  std::string local_hostname = "ip-10-0-1-10.ec2.internal";
  std::string availability_zone = "us-east-1a";
  // The identity document's accountId (dynamic/instance-identity/document); its region is the
  // zone's without the last letter.
  std::string account_id = "123456789012";
  // nullopt: the instance does not show its tags in the metadata (tags/instance is 404).
  std::optional<std::map<std::string, std::string>> tags;
  bool answer = true;
};

class FakeImds {
 public:
  // Binds and serves on a thread of its own.
  static absl::StatusOr<std::unique_ptr<FakeImds>> Start(FakeImdsOptions options);
  // Stops serving (releasing requests held by answer = false) and joins the thread.
  ~FakeImds();
  FakeImds(const FakeImds&) = delete;
  FakeImds& operator=(const FakeImds&) = delete;

  // "http://127.0.0.1:PORT", for instanceMetadata.endpoint.
  std::string endpoint() const;
  int port() const;
  // Replaces the tags (nullopt: not shown); thread-safe, seen by the next request.
  void SetTags(std::optional<std::map<std::string, std::string>> tags);
  // Requests refused with 401 so far (no token, or not the one issued).
  int unauthorized_requests() const;
  // Tokens issued so far.
  int tokens_issued() const;

  class Impl;
  explicit FakeImds(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_IMDS_FAKE_IMDS_H_
