//===- NNOps.cpp - ONNX contractions, reductions and normalizations -------===//
//
// MatMul and Gemm as loom.matmul (with its transposes, so the fusion passes
// see the same products a native model has), Softmax and LogSoftmax, the
// mean and sum reductions, and LayerNormalization as loom.layer_norm.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/OnnxImport.h"

using namespace loom;
using namespace loom::onnx_import;
using llvm::Error;
using llvm::Expected;

namespace {

/// The right operand of a product, read transposed where that keeps its
/// source's last dim last: a transpose that brings the source's last dim to
/// the contraction (dim -2) folds into loom.matmul's transpose_rhs, so that
/// `MatMul(x, Transpose(W))` is the `x W^T` loom.linear takes and
/// `MatMul(q, Transpose(k))` the `q k^T` attention fusion looks for. What is
/// left of the permutation stays a transpose (none when it is the identity).
/// Returns the operand and whether it is now read transposed.
Expected<std::pair<Tensor, bool>> foldTransposedRhs(NodeContext &ctx,
                                                    Tensor x) {
  auto transpose = x.value().getDefiningOp<TransposeOp>();
  int64_t rank = x.rank();
  if (!transpose || rank < 2 || transpose.getPerm()[rank - 2] != rank - 1)
    return std::make_pair(x, false);
  llvm::SmallVector<int64_t> perm(transpose.getPerm());
  std::swap(perm[rank - 1], perm[rank - 2]);
  Tensor input(transpose.getInput(), &ctx.graph());
  bool identity = true;
  for (int64_t i = 0; i < rank; ++i)
    identity &= perm[i] == i;
  if (identity)
    return std::make_pair(input, true);
  Expected<Tensor> rest = ctx.create<TransposeOp>(input.value(), perm);
  if (!rest)
    return rest.takeError();
  return std::make_pair(*rest, true);
}

Error convertMatMul(NodeContext &ctx) {
  Expected<Tensor> a = ctx.tensor(0);
  if (!a)
    return a.takeError();
  Expected<Tensor> b = ctx.tensor(1);
  if (!b)
    return b.takeError();
  if (a->rank() >= 2 && b->rank() >= 2) {
    auto rhs = foldTransposedRhs(ctx, *b);
    if (!rhs)
      return rhs.takeError();
    Expected<Tensor> out = ctx.create<MatmulOp>(a->value(), rhs->first.value(),
                                                false, rhs->second);
    if (!out)
      return out.takeError();
    ctx.setOutput(0, *out);
    return Error::success();
  }
  // NumPy's vectors: a row on the left, a column on the right, dropped after.
  Tensor lhs = *a, rhs = *b;
  bool rowVector = lhs.rank() == 1, columnVector = rhs.rank() == 1;
  if (rowVector) {
    Expected<Tensor> t =
        ctx.create<ExpandDimsOp>(lhs.value(), llvm::ArrayRef<int64_t>{0});
    if (!t)
      return t.takeError();
    lhs = *t;
  }
  if (columnVector) {
    Expected<Tensor> t =
        ctx.create<ExpandDimsOp>(rhs.value(), llvm::ArrayRef<int64_t>{1});
    if (!t)
      return t.takeError();
    rhs = *t;
  }
  Expected<Tensor> out =
      ctx.create<MatmulOp>(lhs.value(), rhs.value(), false, false);
  if (!out)
    return out.takeError();
  if (rowVector || columnVector) {
    // Drop the unit dims of [..., M, N]: 0 copies a dim where it stays, and
    // N, moving one index down after a dropped M, is given or inferred.
    int64_t r = out->rank();
    std::vector<int64_t> spec(r - (rowVector && columnVector ? 2 : 1), 0);
    if (rowVector && !columnVector)
      spec.back() = out->dim(r - 1) == kDyn ? -1 : out->dim(r - 1);
    Expected<Tensor> squeezed = ctx.create<ReshapeOp>(out->value(), spec);
    if (!squeezed)
      return squeezed.takeError();
    out = std::move(squeezed);
  }
  ctx.setOutput(0, *out);
  return Error::success();
}

Error convertGemm(NodeContext &ctx) {
  Expected<Tensor> a = ctx.tensor(0);
  if (!a)
    return a.takeError();
  Expected<Tensor> b = ctx.tensor(1);
  if (!b)
    return b.takeError();
  if (a->rank() != 2 || b->rank() != 2)
    return ctx.error("Gemm takes matrices");
  float alpha = ctx.floatAttr("alpha", 1.0f),
        beta = ctx.floatAttr("beta", 1.0f);
  Expected<Tensor> product = ctx.create<MatmulOp>(
      a->value(), b->value(), ctx.intAttr("transA", 0) != 0,
      ctx.intAttr("transB", 0) != 0);
  if (!product)
    return product.takeError();
  Expected<DType> kind = dtypeOfType(product->elementType());
  if (!kind)
    return ctx.error(llvm::toString(kind.takeError()));
  auto scaled = [&](Tensor t, float factor) -> Expected<Tensor> {
    if (factor == 1.0f)
      return t;
    Expected<Tensor> s = ctx.constantTensor(HostTensor::scalar(factor, *kind));
    if (!s)
      return s.takeError();
    return ctx.create<MulOp>(t.value(), s->value());
  };
  Expected<Tensor> out = scaled(*product, alpha);
  if (out && ctx.hasInput(2) && beta != 0.0f) {
    Expected<Tensor> c = ctx.tensor(2);
    if (!c)
      return c.takeError();
    Expected<Tensor> bias = scaled(*c, beta);
    if (!bias)
      return bias.takeError();
    out = ctx.create<AddOp>(out->value(), bias->value());
  }
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

/// Softmax and LogSoftmax: from opset 13 along `axis` (default -1); before,
/// over the dims from `axis` (default 1) on, which is one axis only when it
/// is the last.
template <bool isLog> Error convertSoftmax(NodeContext &ctx) {
  Expected<Tensor> x = ctx.tensor(0);
  if (!x)
    return x.takeError();
  int64_t rank = x->rank();
  bool coerced = ctx.opsetVersion() < 13;
  int64_t axis = ctx.intAttr("axis", coerced ? 1 : -1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return ctx.error("axis out of range");
  if (coerced && axis != rank - 1)
    return ctx.unsupportedAttribute(
        "axis", std::to_string(axis) +
                    " before opset 13 (a softmax over several dims)");
  Expected<Tensor> out = isLog ? ctx.create<LogSoftmaxOp>(x->value(), axis)
                               : ctx.create<SoftmaxOp>(x->value(), axis);
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

/// ReduceMean, ReduceSum and ReduceMax: the axes are an input from opset 13
/// on for ReduceSum (18 for the others), an attribute before.
enum class Reduction { Mean, Sum, Max };

template <Reduction kind> Error convertReduce(NodeContext &ctx) {
  Expected<Tensor> x = ctx.tensor(0);
  if (!x)
    return x.takeError();
  std::vector<int64_t> axes;
  if (ctx.hasInput(1)) {
    Expected<std::vector<int64_t>> in = ctx.constantInts(1, "axes");
    if (!in)
      return in.takeError();
    axes = *in;
  } else if (auto attr = ctx.intsAttr("axes")) {
    axes = *attr;
  }
  bool keep = ctx.intAttr("keepdims", 1) != 0;
  if (axes.empty()) {
    if (ctx.intAttr("noop_with_empty_axes", 0) != 0) {
      ctx.setOutput(0, *x);
      return Error::success();
    }
    for (int64_t d = 0; d < x->rank(); ++d)
      axes.push_back(d);
  }
  for (int64_t &axis : axes) {
    if (axis < 0)
      axis += x->rank();
    if (axis < 0 || axis >= x->rank())
      return ctx.error("an axis out of range");
  }
  llvm::sort(axes);
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  Expected<Tensor> out = kind == Reduction::Mean
                             ? ctx.create<ReduceMeanOp>(x->value(), axes, keep)
                         : kind == Reduction::Sum
                             ? ctx.create<ReduceSumOp>(x->value(), axes, keep)
                             : ctx.create<ReduceMaxOp>(x->value(), axes, keep);
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

Error convertLayerNormalization(NodeContext &ctx) {
  Expected<Tensor> x = ctx.tensor(0);
  if (!x)
    return x.takeError();
  Expected<Tensor> scale = ctx.tensor(1);
  if (!scale)
    return scale.takeError();
  int64_t rank = x->rank();
  int64_t axis = countFromEnd(ctx.intAttr("axis", -1), rank);
  if (axis < 0 || axis >= rank)
    return ctx.error("axis " + std::to_string(ctx.intAttr("axis", -1)) +
                     " out of range for rank " + std::to_string(rank));
  // Over the last dims [axis, rank): x flattened to [..., n] (its leading
  // dims copied), scale and bias to [n], and the result back to x's shape.
  int64_t normalized = rank - axis;
  auto checkShape = [&](const Tensor &t, const char *what) -> Error {
    if (t.rank() != normalized)
      return ctx.error(std::string("a ") + what + " of rank " +
                       std::to_string(t.rank()) + " for the " +
                       std::to_string(normalized) +
                       " normalized dims (Loom takes the normalized shape "
                       "itself, not a broadcast of it)");
    for (int64_t d = 0; d < normalized; ++d)
      if (t.dim(d) != kDyn && x->dim(axis + d) != kDyn &&
          t.dim(d) != x->dim(axis + d))
        return ctx.error(std::string("a ") + what +
                         " of another shape than the normalized dims");
    return Error::success();
  };
  auto flatten = [&](Tensor t, int64_t keep) -> Expected<Tensor> {
    if (normalized == 1)
      return t;
    llvm::SmallVector<int64_t> spec(keep, 0);
    spec.push_back(-1);
    return ctx.create<ReshapeOp>(t.value(), spec);
  };
  if (Error e = checkShape(*scale, "scale"))
    return std::move(e);
  Tensor input = *x;
  Expected<Tensor> flat = flatten(input, axis);
  Expected<Tensor> gamma = flatten(*scale, 0);
  if (!flat || !gamma)
    return flat ? gamma.takeError() : flat.takeError();
  Tensor bias;
  if (ctx.hasInput(2)) {
    Expected<Tensor> b = ctx.tensor(2);
    if (!b)
      return b.takeError();
    if (Error e = checkShape(*b, "bias"))
      return std::move(e);
    Expected<Tensor> beta = flatten(*b, 0);
    if (!beta)
      return beta.takeError();
    bias = *beta;
  } else {
    Expected<DType> kind = dtypeOfType(scale->elementType());
    if (!kind)
      return ctx.error(llvm::toString(kind.takeError()));
    int64_t n = gamma->dim(0);
    if (n == kDyn)
      return ctx.error("a scale of dynamic size without a bias");
    Expected<Tensor> zeros =
        ctx.constantTensor(HostTensor({n}, *kind, std::vector<double>(n, 0.0)));
    if (!zeros)
      return zeros.takeError();
    bias = *zeros;
  }
  x = std::move(flat);
  scale = std::move(gamma);
  Expected<Tensor> out = ctx.create<LayerNormOp>(
      x->value(), scale->value(), bias.value(),
      llvm::APFloat(double(ctx.floatAttr("epsilon", 1e-5f))));
  if (!out)
    return out.takeError();
  if (normalized > 1) {
    out = ctx.create<ReshapeAsOp>(out->value(), input.value());
    if (!out)
      return out.takeError();
  }
  ctx.setOutput(0, *out);
  // Mean and InvStdDev, where asked for, from their own reductions (with the
  // normalized dims kept, as ONNX shapes them).
  bool wantStats = false;
  for (int i = 1; i < ctx.proto().output_size(); ++i)
    wantStats |= !ctx.proto().output(i).empty();
  if (!wantStats)
    return Error::success();
  Expected<DType> kind = dtypeOfType(input.elementType());
  if (!kind)
    return ctx.error(llvm::toString(kind.takeError()));
  // Over the flattened last dim (what the CPU's reductions take), then
  // shaped [..., 1, ..., 1].
  llvm::SmallVector<int64_t> last = {axis};
  Expected<Tensor> mean = ctx.create<ReduceMeanOp>(x->value(), last, true);
  if (!mean)
    return mean.takeError();
  Expected<Tensor> centered = ctx.create<SubOp>(x->value(), mean->value());
  if (!centered)
    return centered.takeError();
  Expected<Tensor> squared =
      ctx.create<MulOp>(centered->value(), centered->value());
  if (!squared)
    return squared.takeError();
  Expected<Tensor> variance =
      ctx.create<ReduceMeanOp>(squared->value(), last, true);
  Expected<Tensor> epsilon = ctx.constantTensor(
      HostTensor::scalar(ctx.floatAttr("epsilon", 1e-5f), *kind));
  if (!variance || !epsilon)
    return variance ? epsilon.takeError() : variance.takeError();
  Expected<Tensor> shifted =
      ctx.create<AddOp>(variance->value(), epsilon->value());
  if (!shifted)
    return shifted.takeError();
  Expected<Tensor> invStd = ctx.create<RsqrtOp>(shifted->value());
  if (!invStd)
    return invStd.takeError();
  if (normalized > 1) {
    llvm::SmallVector<int64_t> spec(axis, 0);
    spec.append(normalized, 1);
    mean = ctx.create<ReshapeOp>(mean->value(), spec);
    invStd = ctx.create<ReshapeOp>(invStd->value(), spec);
    if (!mean || !invStd)
      return mean ? invStd.takeError() : mean.takeError();
  }
  ctx.setOutput(1, *mean);
  ctx.setOutput(2, *invStd);
  return Error::success();
}

} // namespace

void loom::onnx_import::addNNConverters(llvm::StringMap<Converter> &c) {
  c["MatMul"] = convertMatMul;
  c["Gemm"] = convertGemm;
  c["Softmax"] = convertSoftmax<false>;
  c["LogSoftmax"] = convertSoftmax<true>;
  c["ReduceMean"] = convertReduce<Reduction::Mean>;
  c["ReduceSum"] = convertReduce<Reduction::Sum>;
  c["ReduceMax"] = convertReduce<Reduction::Max>;
  c["LayerNormalization"] = convertLayerNormalization;
}
