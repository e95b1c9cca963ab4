#include "rehearsal/standin/standin_main.h"

int main(int argc, char** argv) { return handoff::standin::RunStandin(argc, argv); }
