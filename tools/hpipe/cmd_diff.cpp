// hpipe diff: how far apart two stacks are.
#include <algorithm>
#include <cmath>

#include "commands.h"

namespace hpipe::cli {

namespace {

Shape squeezed(Shape s) {
  while (s.size() > 2 && s[0] == 1) s.erase(s.begin());
  return s;
}

}  // namespace

int run_diff(Context &ctx) {
  if (ctx.positional.size() != 2) throw UsageError("hpipe diff: expected two stacks (see hpipe diff --help)");
  const Stack<double> a = ctx.stack<double>(ctx.read_inputs({ctx.positional[0]}, "a"));
  const Stack<double> b = ctx.stack<double>(ctx.read_inputs({ctx.positional[1]}, "b"));
  if (squeezed(a.shape) != squeezed(b.shape))
    throw Failure(ctx.positional[1] + ": shape " + shape_string(b.shape) + " differs from " + shape_string(a.shape) +
                  " of " + ctx.positional[0]);
  double max_abs = 0, sum_abs = 0, sum_a = 0;
  std::int64_t unequal = 0, numbers_a = 0;  // mean |a| is over a's numbers, as np.nanmean
  const std::size_t n = a.data.size();
  for (std::size_t i = 0; i < n; i++) {
    const double x = a.data[i], y = b.data[i];
    // Equal values, NaN against NaN and inf against the same inf included, differ by 0 (as
    // np.testing.assert_array_equal counts them); NaN against a number differs by NaN.
    const bool equal = x == y || (std::isnan(x) && std::isnan(y));
    const double d = equal ? 0 : std::abs(x - y);
    max_abs = std::isnan(d) || std::isnan(max_abs) ? NAN : std::max(max_abs, d);
    sum_abs += d;
    sum_a += std::isnan(x) ? 0 : std::abs(x);
    numbers_a += !std::isnan(x);
    unequal += !equal;
  }
  // An a of NaN alone has no mean |a| (NaN, as np.nanmean); an empty one 0.
  const double mean_abs = n ? sum_abs / double(n) : 0, mean_a = numbers_a ? sum_a / double(numbers_a) : n ? NAN : 0;
  const double ratio = mean_abs / mean_a;  // inf / inf and x / NaN: NaN, printed as such (not "-nan")
  const double relative = mean_a == 0 ? 0.0 : std::isnan(ratio) ? NAN : ratio;
  ctx.summary.set("elements", static_cast<std::int64_t>(n)).set("unequal", unequal);
  ctx.summary.set("max_abs", max_abs).set("mean_abs", mean_abs).set("mean_abs_a", mean_a);
  ctx.summary.set("relative", relative);
  char line[200];
  std::snprintf(line, sizeof line,
                "%s: max |a - b| = %.3g, mean |a - b| = %.3g (mean |a| = %.3g, relative %.3g), %lld of %zu differ",
                shape_string(a.shape).c_str(), max_abs, mean_abs, mean_a, relative, static_cast<long long>(unequal), n);
  ctx.say(line);
  return 0;
}

}  // namespace hpipe::cli
