//===- FuseElementwise.cpp (placeholder) ---------------------------------------------===//

#include "passes/Passes.h"

namespace loom {
#define GEN_PASS_DEF_LOOMFUSEELEMENTWISE
#include "passes/Passes.h.inc"
} // namespace loom

namespace {
struct LoomFuseElementwisePass : loom::impl::LoomFuseElementwiseBase<LoomFuseElementwisePass> {
  using LoomFuseElementwiseBase::LoomFuseElementwiseBase;
  void runOnOperation() override {}
};
} // namespace
