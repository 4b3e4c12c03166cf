//===- Autodiff.cpp (placeholder) ---------------------------------------------===//

#include "passes/Passes.h"

namespace loom {
#define GEN_PASS_DEF_LOOMAUTODIFF
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;

namespace {
struct LoomAutodiffPass : loom::impl::LoomAutodiffBase<LoomAutodiffPass> {
  using LoomAutodiffBase::LoomAutodiffBase;
  void runOnOperation() override {
    getOperation().emitError("not implemented");
    signalPassFailure();
  }
};
} // namespace
