//===- PlanMemory.cpp (placeholder) ---------------------------------------------===//

#include "passes/Passes.h"

namespace loom {
#define GEN_PASS_DEF_LOOMPLANMEMORY
#include "passes/Passes.h.inc"
} // namespace loom

namespace {
struct LoomPlanMemoryPass : loom::impl::LoomPlanMemoryBase<LoomPlanMemoryPass> {
  using LoomPlanMemoryBase::LoomPlanMemoryBase;
  void runOnOperation() override {}
};
} // namespace
