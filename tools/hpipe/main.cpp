// hpipe: process image stacks from the shell with hpipe's kernels. See cli.h.
#include "cli.h"

int main(int argc, char **argv) { return hpipe::cli::main(argc, argv); }
