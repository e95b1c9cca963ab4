#include <iostream>

#include "ctl/ctl_cli.h"

int main(int argc, char** argv) {
  if (absl::Status watching = handoff::ctl::StartInterruptWatcher(); !watching.ok()) {
    std::cerr << "handoffctl: " << watching.message() << "\n";
    return 2;
  }
  return handoff::ctl::RunCtl(argc, argv, std::cout, std::cerr, handoff::ctl::RealCtlEnvironment());
}
