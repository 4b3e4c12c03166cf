//===- DimProvenance.cpp - Which dim a dynamic dim is ---------------------===//
//
// An exported graph reshapes one tensor with sizes read off another: MHA
// takes `Shape(query)[0]` and reshapes the projected, transposed query
// with it. Both dims are the same run-time size, but they are dims of
// different values, so comparing (value, dim) pairs would not see it. Each
// run-time size the importer records is therefore the dim it comes from,
// followed back through the ops that pass a dim through unchanged
// (elementwise ops, transposes, reshapes that copy it, matmul's batch and
// outer dims, slices and concats along another dim, ...) to the first value
// that has it: usually a graph input's dim.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/OnnxImport.h"

using namespace loom;
using namespace loom::onnx_import;

namespace {

bool dynamicAt(mlir::Value v, int64_t d) {
  auto type = mlir::cast<mlir::RankedTensorType>(v.getType());
  return d >= 0 && d < type.getRank() && type.isDynamicDim(d);
}

int64_t rankOf(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType()).getRank();
}

/// The (operand, dim) that dim `d` of `op`'s result comes from unchanged,
/// or nothing.
std::optional<std::pair<mlir::Value, int64_t>> sourceOf(mlir::Operation *op,
                                                        int64_t d) {
  mlir::Value result = op->getResult(0);
  int64_t rank = rankOf(result);
  auto aligned = [&](mlir::Value operand)
      -> std::optional<std::pair<mlir::Value, int64_t>> {
    int64_t at = d - (rank - rankOf(operand));
    if (dynamicAt(operand, at))
      return std::make_pair(operand, at);
    return std::nullopt;
  };
  if (op->hasTrait<OpTrait::ElementwiseMap>()) {
    for (mlir::Value operand : op->getOperands())
      if (auto s = aligned(operand))
        return s;
    return std::nullopt;
  }
  if (auto t = mlir::dyn_cast<TransposeOp>(op))
    return std::make_pair(t.getInput(), t.getPerm()[d]);
  if (auto r = mlir::dyn_cast<ReshapeOp>(op)) {
    if (d < int64_t(r.getShape().size()) && r.getShape()[d] == 0)
      return std::make_pair(r.getInput(), d);
    return std::nullopt;
  }
  if (auto m = mlir::dyn_cast<MatmulOp>(op)) {
    mlir::Value lhs = m.getLhs(), rhs = m.getRhs();
    if (d < rank - 2) {
      if (auto s = aligned(lhs))
        return s;
      return aligned(rhs);
    }
    if (d == rank - 2)
      return std::make_pair(lhs, rankOf(lhs) - (m.getTransposeLhs() ? 1 : 2));
    return std::make_pair(rhs, rankOf(rhs) - (m.getTransposeRhs() ? 2 : 1));
  }
  if (auto s = mlir::dyn_cast<SliceOp>(op)) {
    if (d != int64_t(s.getDim()))
      return std::make_pair(s.getInput(), d);
    return std::nullopt;
  }
  if (auto c = mlir::dyn_cast<ConcatOp>(op)) {
    if (d != int64_t(c.getDim()))
      for (mlir::Value input : c.getInputs())
        if (dynamicAt(input, d))
          return std::make_pair(input, d);
    return std::nullopt;
  }
  if (auto e = mlir::dyn_cast<ExpandDimsOp>(op)) {
    if (llvm::is_contained(e.getDims(), d))
      return std::nullopt;
    int64_t before =
        llvm::count_if(e.getDims(), [&](int64_t x) { return x < d; });
    return std::make_pair(e.getInput(), d - before);
  }
  if (auto b = mlir::dyn_cast<BroadcastAsOp>(op))
    return std::make_pair(b.getLike(), d);
  if (auto r = mlir::dyn_cast<ReshapeAsOp>(op))
    return std::make_pair(r.getLike(), d);
  if (auto g = mlir::dyn_cast<GatherOp>(op)) {
    int64_t idRank = rankOf(g.getIds());
    if (d < idRank)
      return std::make_pair(g.getIds(), d);
    return std::make_pair(g.getTable(), d - idRank + 1);
  }
  if (auto i = mlir::dyn_cast<IotaOp>(op))
    return std::make_pair(i.getLike(), int64_t(i.getDim()));
  if (mlir::isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, CastOp>(op))
    return std::make_pair(op->getOperand(0), d);
  return std::nullopt;
}

} // namespace

SymbolicSize SymbolicSize::dimOf(mlir::Value tensor, int64_t dim) {
  // Bounded: each step moves to an operand, and graphs are acyclic.
  for (;;) {
    mlir::Operation *op = tensor.getDefiningOp();
    if (!op)
      break;
    auto source = sourceOf(op, dim);
    if (!source || !dynamicAt(source->first, source->second))
      break;
    tensor = source->first;
    dim = source->second;
  }
  return {1, {{tensor, dim}}};
}
