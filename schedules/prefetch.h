// Software prefetch ahead of a buffer's loads, as a lowering pass that a CPU schedule asks for
// (schedules/common.h, LoweringPasses). Halide 14's `prefetch` directive cannot give it: it steps a
// box wider than a cache line 64 elements at a time (one line in four for float32), and a box over
// several bands costs a cascade of min/max per vector (docs/performance-notes.md).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "Halide.h"

namespace hpipe::sched {

// Before each store whose value reads `buffer` through dense vector loads, one prefetch of every
// cache line of each such load, `ahead` elements further along the buffer. Halide 14 emits
// `prefetchnta` for it.
class PrefetchAhead : public Halide::Internal::IRMutator {
 public:
  PrefetchAhead(std::string buffer, int ahead) : buffer_(std::move(buffer)), ahead_(ahead) {}

 private:
  using IRMutator::visit;

  // Dense vector loads of the buffer: ramps of stride 1 that every lane reads (no predicate), and
  // whose index uses no variable that a Let inside the stored value defines (the prefetch goes
  // before the store, outside that Let).
  struct DenseLoads : Halide::Internal::IRVisitor {
    const std::string &buffer;
    std::vector<const Halide::Internal::Load *> found;
    std::vector<std::string> inner_lets;
    explicit DenseLoads(const std::string &b) : buffer(b) {}
    using IRVisitor::visit;
    void visit(const Halide::Internal::Let *op) override {
      inner_lets.push_back(op->name);
      IRVisitor::visit(op);
    }
    void visit(const Halide::Internal::Load *op) override {
      const auto *ramp = op->index.as<Halide::Internal::Ramp>();
      if (op->name == buffer && ramp && Halide::Internal::is_const_one(ramp->stride) &&
          Halide::Internal::is_const_one(op->predicate)) {
        found.push_back(op);
      }
      IRVisitor::visit(op);
    }
    bool uses_inner_let(const Halide::Internal::Load *load) const {
      for (const auto &name : inner_lets)
        if (Halide::Internal::expr_uses_var(load->index, name)) return true;
      return false;
    }
  };

  Halide::Internal::Stmt visit(const Halide::Internal::Store *op) override {
    using namespace Halide::Internal;
    DenseLoads loads(buffer_);
    op->value.accept(&loads);
    const Halide::Expr base = Variable::make(Halide::Handle(), buffer_);
    std::vector<Stmt> stmts;
    for (const Load *load : loads.found) {
      if (loads.uses_inner_let(load)) continue;
      const int per_line = 64 / load->type.bytes();
      const Halide::Expr first = load->index.as<Ramp>()->base + ahead_;
      for (int lane = 0; lane < load->type.lanes(); lane += per_line) {
        stmts.push_back(Evaluate::make(
            Call::make(load->type.element_of(), Call::prefetch, {base, first + lane, 1, 1}, Call::Intrinsic)));
      }
    }
    if (stmts.empty()) return op;
    stmts.push_back(op);
    return Block::make(stmts);
  }

  std::string buffer_;
  int ahead_;
};

}  // namespace hpipe::sched
