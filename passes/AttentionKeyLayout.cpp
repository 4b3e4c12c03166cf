//===- AttentionKeyLayout.cpp - Attention reads position-first keys -------===//
//
// A decoder's self-attention cache grows by one position per step. Held
// position first, [T, ..., D], the first T positions of a buffer with room
// for more are a contiguous prefix, so a step appends its position in place
// (Session::run's appendInto) instead of copying the cache. Attention wants
// [..., T, D]; the frontend writes the transpose, and this pass lets
// loom.attention read the keys and values where they lie instead:
//
//   %k = loom.transpose %cache_k [1, 2, 3, 0, 4]  // [T, N, K, H, D] -> [N, K, H, T, D]
//   %v = loom.transpose %cache_v [1, 2, 3, 0, 4]
//   %o, %lse = loom.attention %q, %k, %v {scale = ...}
//   ==>
//   %o, %lse = loom.attention %q, %cache_k, %cache_v {keys_position_major, scale = ...}
//
// It fires only when both k and v are such a transpose (the one that moves
// dim 0 to the keys' dim and keeps the others in order) and the attention
// has no dropout (keys_position_major is for inference). Run after autodiff:
// the fused op has no gradient. A transpose left without uses is erased.
// With `remarks`, each attention that reads a transposed k or v and is not
// rewritten says why.
//
//===----------------------------------------------------------------------===//

#include "ir/LoomDialect.h"
#include "passes/Passes.h"

namespace loom {
#define GEN_PASS_DEF_LOOMATTENTIONKEYLAYOUT
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

/// The input of `value` when it is a transpose that moves dim 0 of a
/// [T, ..., D] tensor to the keys' dim: perm [1, ..., r - 2, 0, r - 1].
Value positionFirstSource(Value value) {
  auto transpose = value.getDefiningOp<TransposeOp>();
  if (!transpose)
    return nullptr;
  ArrayRef<int64_t> perm = transpose.getPerm();
  int64_t r = static_cast<int64_t>(perm.size());
  if (r < 2 || perm[r - 2] != 0 || perm[r - 1] != r - 1)
    return nullptr;
  for (int64_t i = 0; i + 2 < r; ++i)
    if (perm[i] != i + 1)
      return nullptr;
  return transpose.getInput();
}

struct AttentionKeyLayout
    : public loom::impl::LoomAttentionKeyLayoutBase<AttentionKeyLayout> {
  using LoomAttentionKeyLayoutBase::LoomAttentionKeyLayoutBase;

  void runOnOperation() override {
    getOperation().walk([&](AttentionOp op) {
      if (op.getKeysPositionMajor())
        return;
      Value k = positionFirstSource(op.getK());
      Value v = positionFirstSource(op.getV());
      bool transposed = op.getK().getDefiningOp<TransposeOp>() ||
                        op.getV().getDefiningOp<TransposeOp>();
      auto decline = [&](const char *why) {
        if (remarks && transposed)
          op.emitRemark("keys read through a transpose: ") << why;
      };
      if (!k || !v)
        return decline("k and v are not both [T, ..., D] moved to [..., T, D]");
      if (op.getDropoutRate().convertToDouble() > 0.0)
        return decline("dropout (position-first keys are for inference)");
      Operation *oldK = op.getK().getDefiningOp();
      Operation *oldV = op.getV().getDefiningOp();
      op.getKMutable().assign(k);
      op.getVMutable().assign(v);
      op.setKeysPositionMajor(true);
      if (oldK->use_empty())
        oldK->erase();
      if (oldV != oldK && oldV->use_empty())
        oldV->erase();
    });
  }
};

} // namespace
