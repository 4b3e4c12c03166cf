//===- Report.cpp - What `loom compile --report` writes -------------------===//
//
// Op counts are of the ops directly in a function's body (a loom.fusion
// region counts once, as the one kernel it becomes; the return does not
// count), so "before" and "after" compare kernels launched per call.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Report.h"

#include "ir/LoomDialect.h"

using namespace mlir;
using namespace loom;

namespace {

template <typename... OpTys> int64_t countTopLevel(func::FuncOp fn) {
  int64_t n = 0;
  for (Operation &op : fn.getBody().front())
    if (isa<OpTys...>(op))
      ++n;
  return n;
}

int64_t countKernels(func::FuncOp fn) {
  int64_t n = 0;
  for (Operation &op : fn.getBody().front())
    if (!isa<func::ReturnOp>(op))
      ++n;
  return n;
}

nlohmann::json planFigure(func::FuncOp fn, StringRef name) {
  if (auto attr = fn->getAttrOfType<IntegerAttr>(name))
    return attr.getInt();
  return nullptr;
}

} // namespace

nlohmann::json loom::cli::buildCompileReport(ModuleOp unfused,
                                             ModuleOp compiled) {
  nlohmann::json entries = nlohmann::json::object();
  for (auto fn : compiled.getOps<func::FuncOp>()) {
    nlohmann::json e;
    auto before = unfused.lookupSymbol<func::FuncOp>(fn.getName());
    e["ops_before_fusion"] =
        before ? nlohmann::json(countKernels(before)) : nlohmann::json(nullptr);
    e["ops_after_fusion"] = countKernels(fn);
    e["attention_ops"] = countTopLevel<AttentionOp>(fn);
    e["attention_grad_ops"] = countTopLevel<AttentionGradOp>(fn);
    e["linear_ops"] = countTopLevel<LinearOp>(fn);
    e["add_layer_norm_ops"] = countTopLevel<AddLayerNormOp>(fn);
    e["fusion_regions"] = countTopLevel<FusionOp>(fn);
    e["matmul_ops"] = countTopLevel<MatmulOp>(fn);
    e["arena_bytes"] = planFigure(fn, "loom.arena_bytes");
    e["live_lower_bound_bytes"] = planFigure(fn, "loom.live_lower_bound_bytes");
    e["naive_bytes"] = planFigure(fn, "loom.naive_bytes");
    e["persistent_bytes"] = planFigure(fn, "loom.persistent_bytes");
    // bf16 copies of weights and activations (mixed precision), before the
    // arena reuses their room; null without any.
    e["narrow_copy_bytes"] = planFigure(fn, "loom.narrow_copy_bytes");
    entries[fn.getName().str()] = e;
  }
  return entries;
}
