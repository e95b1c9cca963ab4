// A directory tree's contents, to prove a command wrote nothing.
#ifndef HANDOFF_TESTS_AGENT_CLI_FILE_TREE_H_
#define HANDOFF_TESTS_AGENT_CLI_FILE_TREE_H_

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace handoff {

// Every entry under `dir`: a file's bytes, a symlink's target, or "(directory)"; a FIFO or
// device is listed by kind and never opened.
inline std::map<std::string, std::string> Tree(const std::filesystem::path& dir) {
  namespace stdfs = std::filesystem;
  std::map<std::string, std::string> entries;
  for (const auto& entry : stdfs::recursive_directory_iterator(dir)) {
    const std::string path = entry.path().string();
    if (entry.is_symlink()) {
      entries[path] = "-> " + stdfs::read_symlink(entry.path()).string();
    } else if (entry.is_regular_file()) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::ostringstream content;
      content << in.rdbuf();
      entries[path] = content.str();
    } else if (entry.is_directory()) {
      entries[path] = "(directory)";
    } else {
      entries[path] = "(special)";
    }
  }
  return entries;
}

}  // namespace handoff

#endif  // HANDOFF_TESTS_AGENT_CLI_FILE_TREE_H_
