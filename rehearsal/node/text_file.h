// Small text files of the host and the nodes as the sandbox's own code reads and writes them:
// /proc and /proc/sys entries, pid files, the host-change records. Not for the files handoff
// moves (those go through common/fs, with its limits, journal and durability).
#ifndef HANDOFF_REHEARSAL_NODE_TEXT_FILE_H_
#define HANDOFF_REHEARSAL_NODE_TEXT_FILE_H_

#include <optional>
#include <string>

#include "absl/status/status.h"

namespace handoff::sandbox::node {

// The whole file; nullopt when it cannot be opened.
std::optional<std::string> ReadText(const std::string& path);

// Replaces `path` with `text` by writing `<path>.tmp` and renaming it over: a reader sees the old
// text or the new one, never part of it. Errors name the file.
absl::Status WriteText(const std::string& path, const std::string& text);

}  // namespace handoff::sandbox::node

#endif  // HANDOFF_REHEARSAL_NODE_TEXT_FILE_H_
