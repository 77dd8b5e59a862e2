#include "generators/dot.h"

namespace hpipe::alg {

using namespace Halide;

BatchedDot batched_dot(Func a, Func b, Expr length) {
  Var u("u"), c("c"), i("i");
  const Type t = value_type(a);
  const Type acc = Float(64);
  BatchedDot op;
  op.length = length;
  Expr full_blocks = length / kDotLanes;
  op.chunk_count = max(1, (full_blocks + kDotChunkBlocks - 1) / kDotChunkBlocks);

  op.blocks = RDom(0, kDotChunkBlocks, "block");
  op.blocks.where(c * kDotChunkBlocks + op.blocks.x < full_blocks);
  // The predicate keeps every k it runs below K, but bounds inference bounds c and the block
  // separately (c's last chunk rounds up), so the index carries the promise explicitly.
  Expr k = unsafe_promise_clamped((c * kDotChunkBlocks + op.blocks.x) * kDotLanes + u, 0, length - 1);
  op.lanes = Func("lanes");
  op.lanes(u, c, i) = cast(t, 0);
  op.lanes(u, c, i) += a(k, i) * b(k, i);

  op.lane = RDom(0, kDotLanes, "lane");
  op.lane_total = Func("lane_total");
  op.lane_total(c, i) = cast(acc, 0);
  op.lane_total(c, i) += cast(acc, op.lanes(op.lane, c, i));

  // The leftover products of the row, added (in double) to the last chunk only.
  op.tail = RDom(0, length - full_blocks * kDotLanes, "tail");
  op.tail.where(c == op.chunk_count - 1);
  Expr kt = full_blocks * kDotLanes + op.tail.x;
  op.tail_total = Func("tail_total");
  op.tail_total(c, i) = cast(acc, 0);
  op.tail_total(c, i) += cast(acc, a(kt, i)) * cast(acc, b(kt, i));

  op.chunk_sum = Func("chunk_sum");
  op.chunk_sum(c, i) = op.lane_total(c, i) + op.tail_total(c, i);

  op.chunks = RDom(0, op.chunk_count, "chunk");
  op.sum = Func("sum");
  op.sum(i) = cast(acc, 0);
  op.sum(i) += op.chunk_sum(op.chunks, i);
  op.out = Func("out");
  op.out(i) = cast(t, op.sum(i));
  return op;
}

BatchedDotColumns batched_dot_columns(Func a, Func b, Expr length, Type out_type) {
  Var i("i"), c("c"), g("g");
  const Type t = value_type(a);
  const Type acc = Float(64);
  Expr chunk_count = (length + kDotColumnChunk - 1) / kDotColumnChunk;
  Expr group_count = (chunk_count + kDotGroupChunks - 1) / kDotGroupChunks;
  BatchedDotColumns op;

  op.products = RDom(0, kDotColumnChunk, "product");
  op.products.where(c * kDotColumnChunk + op.products.x < length);
  // As in batched_dot: the predicate bounds k, which bounds inference cannot see.
  Expr k = unsafe_promise_clamped(c * kDotColumnChunk + op.products.x, 0, length - 1);
  op.chunk = Func("chunk");
  op.chunk(i, c) = cast(t, 0);
  op.chunk(i, c) += a(i, k) * b(i, k);

  op.chunks = RDom(0, kDotGroupChunks, "chunk");
  op.chunks.where(g * kDotGroupChunks + op.chunks.x < chunk_count);
  op.group = Func("group");
  op.group(i, g) = cast(acc, 0);
  op.group(i, g) += cast(acc, op.chunk(i, g * kDotGroupChunks + op.chunks.x));

  op.groups = RDom(0, group_count, "group");
  op.sum = Func("sum");
  op.sum(i) = cast(acc, 0);
  op.sum(i) += op.group(i, op.groups);
  op.out = Func("out");
  op.out(i) = cast(out_type, op.sum(i));
  return op;
}

}  // namespace hpipe::alg
