// Batched dot product: algorithm only (schedules live in schedules/dot_*.cpp).
//
// Layout (Halide dimension order, innermost first; NumPy shapes reversed):
//   a(k, i), b(k, i)   NumPy (N, K)
//   out(i)             NumPy (N,)
//
// The summation order is part of the algorithm because it is the accuracy contract. Element k of
// a row is k = (c * kDotChunkBlocks + r) * kDotLanes + u + (tail): the row is cut into blocks of
// kDotLanes products, blocks into chunks of kDotChunkBlocks blocks. Within a chunk, kDotLanes
// independent partial sums (one per lane u) accumulate in the element type over at most
// kDotChunkBlocks products each; the lanes of a chunk, the K % kDotLanes leftover products and
// the chunks are then summed in double. So no float32 partial sum ever covers more than
// kDotChunkBlocks products, whatever K is (bound: runtime/include/hpipe/dot.h).
#pragma once

#include "Halide.h"
#include "generators/common.h"

namespace hpipe::alg {

constexpr int kDotLanes = 32;        // independent partial sums per chunk (also the vector width)
constexpr int kDotChunkBlocks = 64;  // blocks of kDotLanes per chunk: 2048 products

struct BatchedDot {
  Halide::Expr length;      // K
  Halide::Func lanes;       // lanes(u, c, i): partial sum of lane u over the blocks of chunk c (element type)
  Halide::Func lane_total;  // lane_total(c, i) = sum_u lanes(u, c, i), in double
  Halide::Func tail_total;  // tail_total(c, i): the K % kDotLanes leftover products, on the last chunk only
  Halide::Func chunk_sum;   // chunk_sum(c, i) = lane_total + tail_total
  Halide::Func sum;         // sum(i) = sum_c chunk_sum(c, i), in double
  Halide::Func out;         // out(i) = sum(i) in the element type
  Halide::RDom blocks, lane, tail, chunks;
  Halide::Expr chunk_count;  // max(1, ceil((K / kDotLanes) / kDotChunkBlocks))
};
BatchedDot batched_dot(Halide::Func a, Halide::Func b, Halide::Expr length);

// The same product for column-major operands (a transposed view): a(i, k), b(i, k), rows
// contiguous along i. Every row accumulates serially over chunks of kDotColumnChunk products in
// the element type; the chunk sums of a group of kDotGroupChunks chunks are summed in double,
// then the groups. So here too no float32 partial sum covers more than 64 products.
constexpr int kDotColumnChunk = 64;
constexpr int kDotGroupChunks = 16;  // 1024 products per group

struct BatchedDotColumns {
  Halide::Func chunk;  // chunk(i, c) = sum over k in [c * 64, c * 64 + 64) of a * b (element type)
  Halide::Func group;  // group(i, g) = sum over the chunks of group g of chunk(i, c), in double
  Halide::Func sum;    // sum(i) = sum_g group(i, g), in double
  Halide::Func out;    // out(i) = sum(i) in out_type: the element type, or double for partial
                       // results that the caller combines further
  Halide::RDom products, chunks, groups;
};
BatchedDotColumns batched_dot_columns(Halide::Func a, Halide::Func b, Halide::Expr length, Halide::Type out_type);

// Estimates: the W1 workload of shared/workloads.md, (N, K) = (500, 500).
struct DotEstimates {
  int rows = 500, length = 500;
  Halide::Region matrix() const { return {{0, length}, {0, rows}}; }
  Halide::Region columns() const { return {{0, rows}, {0, length}}; }
  Halide::Region out() const { return {{0, rows}}; }
};

}  // namespace hpipe::alg
