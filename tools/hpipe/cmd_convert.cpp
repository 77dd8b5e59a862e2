// hpipe convert: a stack to another format or element type.
#include <algorithm>

#include "commands.h"

namespace hpipe::cli {

int run_convert(Context &ctx) {
  if (ctx.positional.empty()) throw UsageError("hpipe convert: expected an input STACK (see hpipe convert --help)");
  const std::string out = ctx.checked_output_path();
  std::vector<Source> sources = ctx.read_inputs(ctx.positional, "input");
  const bool f64 = any_float64(sources);
  const DType first = sources[0].array.dtype;
  const bool same =
      std::all_of(sources.begin(), sources.end(), [&](const Source &s) { return s.array.dtype == first; });
  // A PNG written with --scale reads in its original units, which its integer type cannot hold.
  const bool rescaled =
      !ctx.read.raw && std::any_of(sources.begin(), sources.end(), [](const Source &s) { return s.range.has_value(); });
  const DType keep = same && !rescaled ? first : f64 ? DType::f64 : DType::f32;
  return ctx.with_precision(f64, [&](auto zero) {
    using T = decltype(zero);
    const Stack<T> stack = ctx.stack<T>(std::move(sources));
    ctx.write_output(out, stack.shape, stack.data, keep);
    return 0;
  });
}

}  // namespace hpipe::cli
