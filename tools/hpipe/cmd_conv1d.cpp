// hpipe conv1d: 1-D convolution of every signal along one axis (hpipe::conv1d, np.convolve's
// semantics). The signals along an axis of extent L with `outer` extents before it and `inner`
// after are, for each outer index, N = inner rows of L values with strides (1, inner): a strided
// view (dense rows when inner = 1, and then all outer rows in one call).
#include "commands.h"
#include "hpipe/conv1d.h"

namespace hpipe::cli {

namespace {

ConvMode parse_mode(const std::string &text) {
  if (text == "full") return ConvMode::full;
  if (text == "same") return ConvMode::same;
  if (text == "valid") return ConvMode::valid;
  throw UsageError("--mode: expected full, same or valid, got '" + text + "'");
}

template <class T>
int run(Context &ctx, std::vector<Source> &&inputs, Numbers &taps_source, int from_end, const std::string &axis,
        ConvMode mode) {
  const std::string out = ctx.checked_output_path();
  const Stack<T> in = ctx.stack<T>(std::move(inputs));
  const Stack<T> taps = taps_source.values<T>(ctx);
  const std::string in_name = in.files.size() == 1 ? in.files[0] : ctx.positional[0];
  const Shape &s = in.shape;
  if (static_cast<int>(s.size()) < from_end)
    throw Failure(in_name + ": shape " + shape_string(s) + " has no axis " + axis + " (it needs at least " +
                  std::to_string(from_end) + " dimensions)");
  const std::size_t a = s.size() - static_cast<std::size_t>(from_end);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < a; d++) outer *= s[d];
  for (std::size_t d = a + 1; d < s.size(); d++) inner *= s[d];
  const std::int64_t la = s[a], rows = outer * inner;
  const bool per_row = taps.shape.size() == 2;
  if (taps.shape.empty() || taps.shape.size() > 2 || (per_row && taps.shape[0] != rows))
    throw Failure(taps_source.name + ": expected taps (Lv,) shared by every signal, or (" + std::to_string(rows) +
                  ", Lv) one row per signal of " + in_name + " along " + axis + ", got shape " +
                  shape_string(taps.shape));
  const std::int64_t lv = taps.shape.back();
  if (la < 1 || lv < 1)
    throw Failure((la < 1 ? in_name : taps_source.name) + ": convolution needs signals and taps of length >= 1, got " +
                  std::to_string(la) + " and " + std::to_string(lv));
  const std::int64_t lo = conv1d_length(la, lv, mode);
  Shape out_shape = s;
  out_shape[a] = lo;
  hpipe::AlignedVector<T> result = ctx.allocate<T>(out_shape, "the result");
  // Calls for `n` signals starting at signal `first`: inputs at `x`, outputs at `y`.
  auto convolve = [&](std::int64_t first, std::int64_t n, const T *x, T *y, std::int64_t stride) {
    const View<const T, 2> signals(x, {n, la}, {stride == 1 ? la : 1, stride});
    const View<T, 2> results(y, {n, lo}, {stride == 1 ? lo : 1, stride});
    if (per_row)
      conv1d(signals, View<const T, 2>(taps.data.data() + first * lv, {n, lv}), mode, results, ctx.options);
    else
      conv1d(signals, View<const T, 1>(taps.data.data(), {lv}), mode, results, ctx.options);
  };
  ctx.timed("compute", [&] {
    if (inner == 1) {
      convolve(0, outer, in.data.data(), result.data(), 1);
      return;
    }
    for (std::int64_t o = 0; o < outer; o++)
      convolve(o * inner, inner, in.data.data() + o * la * inner, result.data() + o * lo * inner, inner);
  });
  ctx.summary.set("axis", axis).set("mode", to_string(mode)).set("taps", lv).set("per_signal_taps", per_row);
  ctx.write_output(out, out_shape, result, sizeof(T) == 8 ? DType::f64 : DType::f32);
  return 0;
}

}  // namespace

int run_conv1d(Context &ctx) {
  if (ctx.positional.empty()) throw UsageError("hpipe conv1d: expected an input STACK (see hpipe conv1d --help)");
  if (ctx.has("--taps") == ctx.has("--taps-file"))
    throw UsageError("hpipe conv1d: give either --taps LIST or --taps-file FILE");
  const std::string axis = ctx.value("--axis").value_or("x");
  const int from_end = axis_from_end(axis);
  const ConvMode mode = parse_mode(ctx.value("--mode").value_or("same"));
  Numbers taps;
  if (const auto listed = ctx.value("--taps")) {
    taps.name = "--taps";
    taps.listed = number_list(*listed);
    if (!taps.listed) throw UsageError("--taps: expected numbers separated by commas, got '" + *listed + "'");
  } else {
    taps.name = ctx.required("--taps-file");
    taps.file = ctx.read_inputs({taps.name}, "taps");
  }
  std::vector<Source> inputs = ctx.read_inputs(ctx.positional, "signals");
  return ctx.with_precision(any_float64(inputs) || taps.float64(), [&](auto zero) {
    return run<decltype(zero)>(ctx, std::move(inputs), taps, from_end, axis, mode);
  });
}

}  // namespace hpipe::cli
