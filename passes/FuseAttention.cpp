//===- FuseAttention.cpp (placeholder) ---------------------------------------------===//

#include "passes/Passes.h"

namespace loom {
#define GEN_PASS_DEF_LOOMFUSEATTENTION
#include "passes/Passes.h.inc"
} // namespace loom

namespace {
struct LoomFuseAttentionPass : loom::impl::LoomFuseAttentionBase<LoomFuseAttentionPass> {
  using LoomFuseAttentionBase::LoomFuseAttentionBase;
  void runOnOperation() override {}
};
} // namespace
