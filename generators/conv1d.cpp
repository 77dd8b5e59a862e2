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
  if (form == Conv1dForm::staged) {
    op.signal = RDom(0, signal_length, "sx");
    op.padded(x, i) = cast(t, 0);
    op.padded(op.signal, i) = signal(op.signal, i);
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
