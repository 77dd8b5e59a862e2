// hpipe map exp|log|erf: elementwise transcendentals (hpipe/math.h) over a whole stack, read as
// one dense vector (one flat kernel call).
#include <algorithm>

#include "commands.h"
#include "hpipe/math.h"

namespace hpipe::cli {

namespace {

template <class T>
int run(Context &ctx, const std::string &function, std::vector<Source> &&inputs) {
  const std::string out = ctx.checked_output_path();
  const Stack<T> in = ctx.stack<T>(std::move(inputs));
  hpipe::AlignedVector<T> result = ctx.allocate<T>(in.shape, "the result");
  const std::int64_t n = static_cast<std::int64_t>(in.data.size());
  ctx.timed("compute", [&] {
    if (n == 0) return;  // an empty array maps to an empty array
    const View<const T, 1> x(in.data.data(), {n});
    const View<T, 1> y(result.data(), {n});
    if (function == "exp") exp(x, y, ctx.options);
    if (function == "log") log(x, y, ctx.options);
    if (function == "erf") erf(x, y, ctx.options);
  });
  ctx.summary.set("function", function).set("elements", n);
  ctx.write_output(out, in.shape, result, sizeof(T) == 8 ? DType::f64 : DType::f32);
  return 0;
}

}  // namespace

int run_map(Context &ctx) {
  const std::vector<std::string> functions = {"exp", "log", "erf"};
  if (ctx.positional.empty() || std::find(functions.begin(), functions.end(), ctx.positional[0]) == functions.end())
    throw UsageError("hpipe map: expected exp, log or erf" +
                     (ctx.positional.empty() ? std::string() : ", got '" + ctx.positional[0] + "'"));
  const std::string function = ctx.positional[0];
  if (ctx.positional.size() < 2)
    throw UsageError("hpipe map " + function + ": expected an input STACK (see hpipe map --help)");
  std::vector<Source> inputs = ctx.read_inputs({ctx.positional.begin() + 1, ctx.positional.end()}, "x");
  return ctx.with_precision(any_float64(inputs),
                            [&](auto zero) { return run<decltype(zero)>(ctx, function, std::move(inputs)); });
}

}  // namespace hpipe::cli
