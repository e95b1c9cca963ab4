// Test helper: a /proc look-alike in a fresh temporary directory, holding the two files the
// process table reads (<pid>/cmdline and <pid>/stat). Removed with everything in it on
// destruction.
#ifndef HANDOFF_TESTS_COMMON_SYSTEM_FAKE_PROC_TREE_H_
#define HANDOFF_TESTS_COMMON_SYSTEM_FAKE_PROC_TREE_H_

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace handoff::testing {

class FakeProcTree {
 public:
  FakeProcTree() {
    std::string pattern = (std::filesystem::temp_directory_path() / "handoff-proc-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp " << pattern << " failed";
      return;
    }
    root_ = pattern;
  }
  ~FakeProcTree() {
    if (root_.empty()) return;
    std::error_code error;
    std::filesystem::remove_all(root_, error);
    EXPECT_FALSE(error) << "cannot remove " << root_ << ": " << error.message();
  }
  FakeProcTree(const FakeProcTree&) = delete;
  FakeProcTree& operator=(const FakeProcTree&) = delete;

  const std::string& root() const { return root_; }

  // <pid>/cmdline as the kernel writes it (each item NUL-terminated) and a stat line whose field
  // 22 is `start_time`.
  void AddProcess(int pid, const std::vector<std::string>& argv, std::uint64_t start_time,
                  const std::string& comm = "proc") {
    std::string cmdline;
    for (const std::string& item : argv) {
      cmdline += item;
      cmdline.push_back('\0');
    }
    WriteFile(pid, "cmdline", cmdline);
    WriteFile(pid, "stat", StatLine(pid, comm, start_time));
  }

  // "<pid> (<comm>) S" then fields 4..21, start_time as field 22, and the rest up to field 52.
  static std::string StatLine(int pid, const std::string& comm, std::uint64_t start_time) {
    std::string line = std::to_string(pid) + " (" + comm + ") S";
    for (int field = 4; field <= 21; ++field) line += " " + std::to_string(field == 4 ? 1 : 0);
    line += " " + std::to_string(start_time);
    for (int field = 23; field <= 52; ++field) line += " 0";
    return line + "\n";
  }

  void WriteFile(int pid, const std::string& name, const std::string& content) {
    const std::filesystem::path dir = std::filesystem::path(root_) / std::to_string(pid);
    std::filesystem::create_directories(dir);
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    out << content;
    EXPECT_TRUE(out.good()) << "cannot write " << (dir / name);
  }

  void MakeDir(const std::string& name) {
    std::filesystem::create_directories(std::filesystem::path(root_) / name);
  }

  void RemoveProcess(int pid) {
    std::filesystem::remove_all(std::filesystem::path(root_) / std::to_string(pid));
  }

 private:
  std::string root_;
};

}  // namespace handoff::testing

#endif  // HANDOFF_TESTS_COMMON_SYSTEM_FAKE_PROC_TREE_H_
