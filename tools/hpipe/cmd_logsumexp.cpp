// hpipe logsumexp --axis band|x|y: log(sum(exp(x))) along one axis (hpipe::logsumexp, like
// scipy.special.logsumexp), on the stack's own rank (1 to 4); the result drops that axis.
#include <algorithm>
#include <array>

#include "commands.h"
#include "hpipe/math.h"

namespace hpipe::cli {

namespace {

template <class T, int R>
void reduce(Context &ctx, const Stack<T> &in, int axis, hpipe::AlignedVector<T> &result) {
  std::array<std::int64_t, R> shape{};
  std::copy(in.shape.begin(), in.shape.end(), shape.begin());
  const View<const T, R> x(in.data.data(), shape);
  if constexpr (R == 1) {
    result[0] = logsumexp(x, ctx.options);
  } else {
    std::array<std::int64_t, R - 1> reduced{};
    for (int d = 0, k = 0; d < R; d++)
      if (d != axis) reduced[std::size_t(k++)] = shape[std::size_t(d)];
    logsumexp(x, axis, View<T, R - 1>(result.data(), reduced), ctx.options);
  }
}

template <class T>
int run(Context &ctx, const std::string &axis_name, int from_end, std::vector<Source> &&inputs) {
  const std::string out = ctx.checked_output_path();
  const Stack<T> in = ctx.stack<T>(std::move(inputs));
  const std::string in_name = in.files.size() == 1 ? in.files[0] : ctx.positional[0];
  const Shape &s = in.shape;
  const int rank = static_cast<int>(s.size());
  if (rank < from_end || rank > 4)
    throw Failure(in_name + ": shape " + shape_string(s) +
                  (rank > 4 ? " has more than 4 dimensions" : " has no axis " + axis_name));
  const int axis = rank - from_end;
  Shape out_shape = s;
  out_shape.erase(out_shape.begin() + axis);
  hpipe::AlignedVector<T> result = ctx.allocate<T>(out_shape, "the result");
  ctx.timed("compute", [&] {
    switch (rank) {
      case 1: reduce<T, 1>(ctx, in, axis, result); break;
      case 2: reduce<T, 2>(ctx, in, axis, result); break;
      case 3: reduce<T, 3>(ctx, in, axis, result); break;
      default: reduce<T, 4>(ctx, in, axis, result); break;
    }
  });
  ctx.summary.set("axis", axis_name);
  ctx.write_output(out, out_shape, result, sizeof(T) == 8 ? DType::f64 : DType::f32);
  return 0;
}

}  // namespace

int run_logsumexp(Context &ctx) {
  if (ctx.positional.empty()) throw UsageError("hpipe logsumexp: expected an input STACK (see hpipe logsumexp --help)");
  const std::string axis = ctx.value("--axis").value_or("band");
  const int from_end = axis_from_end(axis);
  std::vector<Source> inputs = ctx.read_inputs(ctx.positional, "x");
  return ctx.with_precision(any_float64(inputs),
                            [&](auto zero) { return run<decltype(zero)>(ctx, axis, from_end, std::move(inputs)); });
}

}  // namespace hpipe::cli
