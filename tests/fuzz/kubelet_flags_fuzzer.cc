// The kubelet's flags file (kubeadm-flags.env): a file handoff accepts must come back from
// Emit → Parse with the same flags and every other line kept, Emit must be a fixed point, and the
// edits handoff makes (set --cloud-provider, remove a flag) must read back.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/manifest/kubelet_flags.h"
#include "tests/fuzz/fuzz_check.h"

namespace handoff {
namespace {

KubeletFlagsFile Reparse(const KubeletFlagsFile& file) {
  const std::string emitted = file.Emit();
  absl::StatusOr<KubeletFlagsFile> reparsed = KubeletFlagsFile::Parse(emitted, "emitted.env");
  FUZZ_CHECK(reparsed.ok(), std::string(reparsed.status().message()) + "; emitted:\n" + emitted);
  FUZZ_CHECK(reparsed->flags().items() == file.flags().items(),
             "flags differ; emitted:\n" + emitted);
  FUZZ_CHECK(reparsed->Emit() == emitted, "Emit is not a fixed point; emitted:\n" + emitted);
  return *std::move(reparsed);
}

void FuzzOne(std::string_view text) {
  absl::StatusOr<KubeletFlagsFile> file = KubeletFlagsFile::Parse(text, "kubeadm-flags.env");
  if (!file.ok()) return;
  (void)file->flags().Names();
  (void)file->flags().Get("container-runtime-endpoint");
  Reparse(*file);

  KubeletFlagsFile edited = *file;
  edited.flags().Set("cloud-provider", std::string("external"));
  edited.flags().Set("node-ip", std::string("10.0.0.1"));
  const bool removed = edited.flags().Remove("pod-infra-container-image");
  (void)removed;
  const KubeletFlagsFile reread = Reparse(edited);
  FUZZ_CHECK(reread.flags().Get("cloud-provider") == std::optional<std::string>("external"),
             edited.Emit());
  FUZZ_CHECK(reread.flags().Get("node-ip") == std::optional<std::string>("10.0.0.1"),
             edited.Emit());
  FUZZ_CHECK(reread.flags().Find("pod-infra-container-image").empty(), edited.Emit());

  KubeletFlagsFile cleared = *file;
  cleared.flags().Remove("cloud-provider");
  FUZZ_CHECK(!Reparse(cleared).flags().Get("cloud-provider").has_value(), cleared.Emit());
}

}  // namespace
}  // namespace handoff

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  handoff::FuzzOne(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
