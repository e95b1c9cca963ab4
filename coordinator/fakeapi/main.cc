#include <iostream>

#include "common/fs/file_system.h"
#include "coordinator/fakeapi/fake_apiserver_cli.h"

int main(int argc, char** argv) {
  // Before any thread starts, so that only WaitForTerminationSignal receives SIGINT/SIGTERM.
  handoff::fakeapi::BlockTerminationSignals();
  std::unique_ptr<handoff::FileSystem> fs = handoff::NewPosixFileSystem("");
  return handoff::fakeapi::RunFakeApiServerCli(
      argc, argv, std::cout, std::cerr, *fs,
      [](const std::string&) { handoff::fakeapi::WaitForTerminationSignal(); });
}
