// hpipe: process image stacks from the shell with hpipe's kernels. See cli.h.
#include "cli.h"
#include "tools/flush_stdout.h"

int main(int argc, char **argv) { return hpipe::tools::flush_stdout("hpipe", hpipe::cli::main(argc, argv)); }
