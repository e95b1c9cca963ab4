// Bounds on what the coordinator keeps of text an agent (or anyone) sent: a node's reasons,
// results and history entries are stored, sent in every status and read back by `history`, so
// none may grow with what a client chooses to send.
#ifndef HANDOFF_COORDINATOR_SERVER_BOUNDED_TEXT_H_
#define HANDOFF_COORDINATOR_SERVER_BOUNDED_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace handoff::server {

// `text` cut to at most `max_bytes` (never inside a UTF-8 sequence), with what was cut said.
inline std::string BoundedText(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t cut = max_bytes;
  // Back to the start of a UTF-8 sequence: continuation bytes are 10xxxxxx.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return absl::StrCat(std::string(text.substr(0, cut)), "… [", text.size() - cut,
                      " more bytes not kept]");
}

}  // namespace handoff::server

#endif  // HANDOFF_COORDINATOR_SERVER_BOUNDED_TEXT_H_
