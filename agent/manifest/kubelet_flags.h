// The kubelet's extra flags as kubeadm writes them: /var/lib/kubelet/kubeadm-flags.env holds one
// line KUBELET_KUBEADM_ARGS="--flag=value ...", which the kubelet's systemd drop-in expands
// unquoted, so the value is split on white space.
#ifndef HANDOFF_AGENT_MANIFEST_KUBELET_FLAGS_H_
#define HANDOFF_AGENT_MANIFEST_KUBELET_FLAGS_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "agent/manifest/flag_list.h"

namespace handoff {

inline constexpr std::string_view kKubeletArgsVariable = "KUBELET_KUBEADM_ARGS";

class KubeletFlagsFile {
 public:
  // Error (naming `source` and the line) when the file has no KUBELET_KUBEADM_ARGS line, has it
  // twice, or its value is not a double-quoted string free of quotes and escapes.
  static absl::StatusOr<KubeletFlagsFile> Parse(std::string_view text, std::string source);

  FlagList& flags() { return flags_; }
  const FlagList& flags() const { return flags_; }
  // The file with the args line rewritten and every other line kept.
  std::string Emit() const;

 private:
  KubeletFlagsFile() : flags_({}) {}
  std::string before_;  // lines before the args line, with their newlines
  std::string after_;   // lines after it
  FlagList flags_;
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_MANIFEST_KUBELET_FLAGS_H_
