//===- FuseLinear.cpp (placeholder) ---------------------------------------------===//

#include "passes/Passes.h"

namespace loom {
#define GEN_PASS_DEF_LOOMFUSELINEAR
#include "passes/Passes.h.inc"
} // namespace loom

namespace {
struct LoomFuseLinearPass : loom::impl::LoomFuseLinearBase<LoomFuseLinearPass> {
  using LoomFuseLinearBase::LoomFuseLinearBase;
  void runOnOperation() override {}
};
} // namespace
