//===- SplitProjections.cpp - One product per slice of a packed projection ===//
//
// PyTorch's multi-head attention projects q, k and v with one packed weight
// [3E, E] and slices the product; its ONNX export keeps that form. Loom's own
// models project each with the rows of the packed weight it needs. This pass
// turns the first form into the second where the packed product is read only
// through slices of its last dim:
//
//   %p = loom.matmul %x, %w {transpose_rhs}     // w [3E, E]
//   %b = loom.add %bias, %p                     // bias [3E], either side
//   %q = loom.slice %b {dim = last, start = 0, end = E}
//   %k = loom.slice %b {dim = last, start = E, end = 2E}
//     ==>
//   %wq = loom.slice %w {dim = 0, start = 0, end = E}
//   %bq = loom.slice %bias {dim = 0, start = 0, end = E}
//   %q = loom.add %bq, (loom.matmul %x, %wq {transpose_rhs})
//   ... and so for %k
//
// so that loom-fuse-linear makes one loom.linear per projection (no slice
// of an activation is left to copy) and a model from ONNX has the same
// projections as the one Loom builds. It does not fire when anything else
// reads the product (or the sum), when a slice is along another dim or has
// a bound it cannot place in [0, N), or when the weight is not [N, K] read
// transposed. With `remarks`, a sliced product that stays says why.
//
//===----------------------------------------------------------------------===//

#include "ir/LoomDialect.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace loom {
#define GEN_PASS_DEF_LOOMSPLITPROJECTIONS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

/// Slice `s` of a last dim of size `n` as [start, end), or nothing.
std::optional<std::pair<int64_t, int64_t>> sliceRange(SliceOp s, int64_t n) {
  int64_t start = s.getStart(), end = s.getEnd();
  if (start < 0)
    start += n;
  if (end <= 0)
    end += n;
  if (start < 0 || end > n || start >= end)
    return std::nullopt;
  return std::make_pair(start, end);
}

struct SplitProjections
    : public loom::impl::LoomSplitProjectionsBase<SplitProjections> {
  using LoomSplitProjectionsBase::LoomSplitProjectionsBase;

  void runOnOperation() override {
    SmallVector<MatmulOp> products;
    getOperation().walk([&](MatmulOp op) { products.push_back(op); });
    for (MatmulOp op : products)
      split(op);
  }

  void split(MatmulOp op) {
    // The product, or the sum with its bias, is what the slices read.
    Value packed = op.getResult();
    AddOp add;
    Value bias;
    if (op->hasOneUse())
      if (auto a = dyn_cast<AddOp>(*op->getUsers().begin())) {
        Value other = a.getLhs() == packed ? a.getRhs() : a.getLhs();
        auto type = cast<RankedTensorType>(other.getType());
        if (type.getRank() == 1 && a.getType() == packed.getType()) {
          add = a;
          bias = other;
          packed = a.getResult();
        }
      }
    auto decline = [&](const char *why) {
      if (remarks)
        op.emitRemark("packed projection not split: ") << why;
    };
    auto isSlice = [](Operation *user) { return isa<SliceOp>(user); };
    if (llvm::none_of(packed.getUsers(), isSlice))
      return; // not sliced: nothing to split, and nothing to say
    if (!llvm::all_of(packed.getUsers(), isSlice))
      return decline("the packed product is also read whole");
    auto type = cast<RankedTensorType>(packed.getType());
    int64_t last = type.getRank() - 1, n = type.getDimSize(last);
    auto weight = cast<RankedTensorType>(op.getRhs().getType());
    if (!op.getTransposeRhs() || op.getTransposeLhs() || weight.getRank() != 2)
      return decline("the weight is not [N, K] read transposed");
    if (ShapedType::isDynamic(n))
      return decline("the packed size is dynamic");
    SmallVector<std::pair<SliceOp, std::pair<int64_t, int64_t>>> slices;
    for (Operation *user : packed.getUsers()) {
      auto slice = cast<SliceOp>(user);
      auto range = sliceRange(slice, n);
      if (int64_t(slice.getDim()) != last || !range)
        return decline("a slice is not of the last dim, within it");
      slices.push_back({slice, *range});
    }
    for (auto &[slice, range] : slices) {
      OpBuilder b(slice);
      Location loc = slice.getLoc();
      auto [start, end] = range;
      // loom.slice's end 0 is the end of the dim.
      int64_t sliceEnd = end == n ? 0 : end;
      Value rows = b.create<SliceOp>(loc, op.getRhs(), 0, start, sliceEnd);
      Value part = b.create<MatmulOp>(loc, op.getLhs(), rows,
                                      /*transpose_lhs=*/false,
                                      /*transpose_rhs=*/true);
      if (add) {
        Value partBias = b.create<SliceOp>(loc, bias, 0, start, sliceEnd);
        part = add.getLhs() == bias ? b.create<AddOp>(loc, partBias, part)
                                    : b.create<AddOp>(loc, part, partBias);
      }
      slice.getResult().replaceAllUsesWith(part);
      slice.erase();
    }
    if (add)
      add.erase();
    op.erase();
  }
};

} // namespace
