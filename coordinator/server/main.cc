#include "coordinator/server/coordinator_main.h"

int main(int argc, char** argv) { return handoff::server::RunCoordinator(argc, argv); }
