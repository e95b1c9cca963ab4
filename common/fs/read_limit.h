// How much handoff reads of each kind of file. Every FileSystem::ReadFile takes one, so that a
// file that is far larger than its kind can be (a 5 GB "manifest", a symlink to /dev/zero, a log
// named like a settings file) is refused with the file, its size and the limit named, instead of
// exhausting the agent's memory.
#ifndef HANDOFF_COMMON_FS_READ_LIMIT_H_
#define HANDOFF_COMMON_FS_READ_LIMIT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace handoff {

// A kind of file and the most handoff reads of it.
struct ReadLimit {
  std::string_view kind;  // names the file in errors: "static pod manifest"
  uint64_t max_bytes;
};

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;

// The anchors: the API server refuses an object over 1.5 MiB (etcd's default request limit), so
// no pod larger than that can even be mirrored; kubeadm writes manifests of 3-5 KiB. Each limit
// leaves two orders of magnitude over what the file really holds, and handoff keeps a few copies
// of each file it plans with (text, parsed tree, new text, diff), so these also bound its memory.

// A file in the kubelet's manifest directory: kubeadm's are under 5 KiB, and a pod over the API
// server's 1.5 MiB object limit could not be mirrored.
inline constexpr ReadLimit kStaticPodManifestRead{"static pod manifest", 1 * kMiB};
// kubeadm-flags.env: one line of flags, read by systemd as an EnvironmentFile, which takes lines
// up to LONG_LINE_MAX (1 MiB) only.
inline constexpr ReadLimit kKubeletFlagsRead{"kubelet flags file", 1 * kMiB};
// A systemd unit file or drop-in, and an environment file it names: systemd reads lines of up to
// LONG_LINE_MAX (1 MiB); kubeadm's packages install files of under 1 KiB.
inline constexpr ReadLimit kUnitFileRead{"systemd unit file", 1 * kMiB};
inline constexpr ReadLimit kEnvironmentFileRead{"environment file", 1 * kMiB};
// The kubelet's CredentialProviderConfig: a few providers with their image patterns.
inline constexpr ReadLimit kCredentialProviderConfigRead{"credential provider configuration",
                                                         1 * kMiB};
// handoff's settings, written by hand: a few KiB.
inline constexpr ReadLimit kSettingsRead{"settings file", 1 * kMiB};
// A LeaderMigrationConfiguration: a few hundred bytes naming a handful of controllers.
inline constexpr ReadLimit kLeaderMigrationConfigRead{"Leader Migration configuration", 1 * kMiB};
// A kubeconfig may embed certificates and a CA bundle as base64 (a public CA bundle is about
// 200 KiB); client-go sets no limit, 4 MiB is far above any real one.
inline constexpr ReadLimit kKubeconfigRead{"kubeconfig", 4 * kMiB};
// A PEM certificate, key or CA bundle (--ca, --cert, --key, a kubeconfig's *-file entries).
inline constexpr ReadLimit kPemRead{"PEM file", 4 * kMiB};
// A transaction's journal: a few paths, modes and states.
inline constexpr ReadLimit kJournalRead{"transaction journal", 1 * kMiB};
// The migration record holds parts of up to three manifests, the kubelet's flags and the Leader
// Migration file: the sum of their limits, rounded up.
inline constexpr ReadLimit kMigrationRecordRead{"migration record", 8 * kMiB};
// A record of the command log holds a CommandResult, which came over gRPC (4 MiB per message by
// default).
inline constexpr ReadLimit kCommandRecordRead{"command log record", 4 * kMiB};
// A backup holds a file a move changed (a manifest, the flags file, the Leader Migration file)
// as it was; and a file handoff wrote holds what the planner made of one: twice the largest of
// those limits leaves room for what the planner adds.
inline constexpr ReadLimit kChangedFileRead{"file handoff changes", 2 * kMiB};
// Callers that name no kind: larger than any file handoff reads whole, still a bound.
inline constexpr ReadLimit kAnyFileRead{"file", 256 * kMiB};

// "512 bytes", "4.0 KiB", "5.2 MiB", "1 MiB" (a whole number of units has no decimals).
std::string FormatByteSize(uint64_t bytes);

// OK when `size` bytes are within `limit`; else FailedPrecondition
// "<path>: 5.2 MiB is larger than the 1 MiB limit for a static pod manifest".
absl::Status CheckReadSize(std::string_view path, uint64_t size, const ReadLimit& limit);

}  // namespace handoff

#endif  // HANDOFF_COMMON_FS_READ_LIMIT_H_
