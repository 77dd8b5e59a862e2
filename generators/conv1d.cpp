#include "generators/conv1d.h"

namespace hpipe::alg {

using namespace Halide;

Conv1d conv1d(Func signal, Expr signal_length, Func kernel, Expr taps, Expr offset, Conv1dForm form) {
  Var x("x"), k("k"), i("i");
  const Type t = value_type(signal);
  Conv1d op;
  op.form = form;
  op.taps = taps;
  op.padded = Func("padded");
  if (form.kind == Conv1dForm::staged) {
    const int lanes = form.vector_bytes / t.bytes();
    Expr whole_vectors = signal_length >= lanes;
    op.padded(x, i) = cast(t, 0);
    // Vector v covers [min(v lanes, Ls - lanes), + lanes): the last overlaps the one before, which
    // writes the same values there. likely(): Halide peels the last vector off the loop (the min on
    // every vector made rows of 64 4% slower). The promise keeps bounds inference inside the row
    // where these updates do not run (rows shorter than a vector).
    op.copy_vectors = RDom(0, lanes, 0, select(whole_vectors, (signal_length + lanes - 1) / lanes, 0), "copy_vector");
    Expr sx = unsafe_promise_clamped(min(likely(op.copy_vectors.y * lanes), signal_length - lanes) + op.copy_vectors.x,
                                     0, signal_length - 1);
    op.padded(sx, i) = signal(sx, i);
    op.copy_elements = RDom(0, select(whole_vectors, 0, signal_length), "copy_element");
    op.padded(op.copy_elements, i) = signal(op.copy_elements, i);
  } else {
    op.padded(x, i) = select(x >= 0 && x < signal_length, signal(clamp(x, 0, signal_length - 1), i), cast(t, 0));
  }

  op.kernel = RDom(0, taps, "tap");
  op.conv = Func("conv");
  op.conv(k, i) = cast(t, 0);
  op.conv(k, i) += op.padded(k + offset - op.kernel, i) * kernel(op.kernel, i);
  op.out = Func("out");
  op.out(k, i) = op.conv(k, i);
  return op;
}

}  // namespace hpipe::alg
