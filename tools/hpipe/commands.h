// The subcommands: one function each (cmd_<name>.cpp), listed in kCommands (commands.cpp).
#pragma once

#include "cli.h"
#include "hpipe/recon.h"

namespace hpipe::cli {

int run_info(Context &ctx);
int run_convert(Context &ctx);
int run_diff(Context &ctx);
int run_synth(Context &ctx);
int run_cassi(Context &ctx);
int run_dot(Context &ctx);
int run_conv1d(Context &ctx);
int run_recon(Context &ctx);
int run_map(Context &ctx);
int run_logsumexp(Context &ctx);
int run_preview(Context &ctx);
int run_batch(Context &ctx);

extern const std::vector<Option> kBatchOptions;  // cmd_batch.cpp

// recon's METHOD (gap-tv or admm-tv) as named, with a UsageError for another name or for an
// option of the other method (--gamma is ADMM's, --no-accelerate GAP's). cmd_recon.cpp; batch
// checks its items' options with it.
ReconMethod checked_recon_method(const Context &ctx, const std::string &name);

}  // namespace hpipe::cli
