//===- Optimizer.cpp (placeholder) ---------------------------------------------===//

#include "passes/Passes.h"

namespace loom {
#define GEN_PASS_DEF_LOOMOPTIMIZER
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;

namespace {
struct LoomOptimizerPass : loom::impl::LoomOptimizerBase<LoomOptimizerPass> {
  using LoomOptimizerBase::LoomOptimizerBase;
  void runOnOperation() override {
    getOperation().emitError("not implemented");
    signalPassFailure();
  }
};
} // namespace
