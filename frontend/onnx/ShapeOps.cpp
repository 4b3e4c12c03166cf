//===- ShapeOps.cpp - ONNX shape ops and shape arithmetic -----------------===//
//
// Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Expand,
// ConstantOfShape and Range: the ops that read shapes or make them. An
// exported Transformer computes the targets of its reshapes at run time from
// Shape nodes; here those computations run on sizes (OnnxImport.h), and a
// reshape to sizes becomes a loom.reshape whose 0s copy a dim and whose -1
// infers the one left:
//
//   %s = Shape(%x)            x : [batch, len, 512]
//   %b = Gather(%s, 0)        -> size: dim 0 of x
//   %t = Concat(%b, -1, 8, 64)
//   %y = Reshape(%x, %t)      -> loom.reshape %x [0, -1, 8, 64]
//
// (Gather, Concat and Slice, which take part in that arithmetic, are in
// IndexOps.cpp.)
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/OnnxImport.h"
#include "frontend/onnx/OnnxImporter.h"
#include "ir/ShapeUtils.h"

#include <numeric>

using namespace loom;
using namespace loom::onnx_import;
using llvm::Error;
using llvm::Expected;

/// The product of `have` divided by that of `target` without its entry
/// `skip`, when it is a whole symbolic size (every run-time dim of the
/// divisor is one of the dividend's, the factors divide).
static std::optional<SymbolicSize>
quotient(const std::vector<SymbolicSize> &have,
         const std::vector<SymbolicSize> &target, size_t skip) {
  SymbolicSize q;
  for (const SymbolicSize &h : have) {
    if (h.factor < 0 || (h.factor != 0 && q.factor > (int64_t(1) << 40) / h.factor))
      return std::nullopt;
    q.factor *= h.factor;
    q.dims.append(h.dims.begin(), h.dims.end());
  }
  for (size_t i = 0; i < target.size(); ++i) {
    if (i == skip)
      continue;
    const SymbolicSize &t = target[i];
    if (t.factor <= 0 || q.factor % t.factor != 0)
      return std::nullopt;
    q.factor /= t.factor;
    for (const auto &dim : t.dims) {
      auto *found = llvm::find(q.dims, dim);
      if (found == q.dims.end())
        return std::nullopt;
      q.dims.erase(found);
    }
  }
  return q;
}

namespace {
Expected<Tensor> tensorShaped(NodeContext &ctx,
                              const std::vector<SymbolicSize> &sizes,
                              DType kind);
} // namespace

/// Reshapes `x` to `target`, one size per result dim (-1 allowed once).
Expected<Tensor>
loom::onnx_import::reshapeTo(NodeContext &ctx, Tensor x,
                             const std::vector<SymbolicSize> &target) {
  std::vector<SymbolicSize> have = sizesOf(x);
  std::vector<int64_t> spec(target.size());
  int64_t inferred = -1;
  std::vector<size_t> unresolved;
  for (size_t i = 0; i < target.size(); ++i) {
    const SymbolicSize &t = target[i];
    if (t.isConstant()) {
      if (t.factor == -1) {
        if (inferred >= 0)
          return ctx.error("more than one -1 in the target shape");
        inferred = int64_t(i);
        spec[i] = -1;
      } else if (t.factor < 0) {
        return ctx.error("a negative size " + std::to_string(t.factor) +
                         " in the target shape");
      } else if (t.factor == 0) {
        // A zero-size dim: loom.reshape's 0 would copy instead.
        if (i < have.size() && have[i] == t)
          spec[i] = 0;
        else
          return ctx.error("a reshape to a zero-size dim");
      } else {
        spec[i] = t.factor;
      }
    } else if (i < have.size() && have[i] == t) {
      spec[i] = 0;
    } else {
      unresolved.push_back(i);
    }
  }
  if (unresolved.size() + (inferred >= 0) > 1) {
    // Several dims from elsewhere (a flattened [len * batch, d] split back
    // into [len, batch, d]): the shape of a tensor that has them.
    if (inferred < 0)
      if (std::optional<Tensor> like = ctx.tensorWithSizes(target))
        return ctx.create<ReshapeAsOp>(x.value(), like->value());
    // Else a tensor made to have them (MHA's key-padding mask, [batch, heads,
    // 1, len] to [batch * heads, 1, len]), the -1 being what x's size leaves.
    std::vector<SymbolicSize> sizes = target;
    if (inferred >= 0) {
      std::optional<SymbolicSize> rest = quotient(have, target, inferred);
      if (!rest)
        return ctx.error("a reshape whose -1 is no whole number of the "
                         "input's run-time sizes");
      sizes[inferred] = *rest;
    }
    Expected<Tensor> like = tensorShaped(ctx, sizes, DType::I64);
    if (!like)
      return like.takeError();
    return ctx.create<ReshapeAsOp>(x.value(), like->value());
  }
  for (size_t i : unresolved)
    spec[i] = -1;
  return ctx.create<ReshapeOp>(x.value(), spec);
}

Tensor loom::onnx_import::iotaAlong(NodeContext &ctx, mlir::Value of, int64_t dim, DType kind) {
  Tensor like(of, &ctx.graph());
  return Tensor(ctx.builder()
                    .create<IotaOp>(ctx.graph().location(),
                                    tensorOf({like.dim(dim)},
                                             ctx.elementType(kind)),
                                    of, dim)
                    .getResult(),
                &ctx.graph());
}

namespace {

//===-- Shape -------------------------------------------------------------===//

Error convertShape(NodeContext &ctx) {
  if (!ctx.hasInput(0))
    return ctx.error("input 0 is missing");
  const ImportedValue &a = ctx.input(0);
  std::vector<SymbolicSize> sizes;
  if (a.constant) {
    for (int64_t d : a.constant->shape)
      sizes.push_back(SymbolicSize::of(d));
  } else if (a.tensor) {
    sizes = sizesOf(a.tensor);
    ctx.shapeSources().push_back(a.tensor);
  } else {
    int64_t n = a.sizes->size();
    if (!a.sizesAreScalar)
      sizes.push_back(SymbolicSize::of(n));
  }
  int64_t rank = static_cast<int64_t>(sizes.size());
  int64_t start =
      std::clamp<int64_t>(countFromEnd(ctx.intAttr("start", 0), rank), 0, rank);
  int64_t end = std::clamp<int64_t>(
      countFromEnd(ctx.intAttr("end", rank), rank), 0, rank);
  std::vector<SymbolicSize> out(sizes.begin() + start,
                                sizes.begin() + std::max(start, end));
  ctx.setOutput(0, sizesValue(std::move(out), false));
  return Error::success();
}

/// Size: the product of the dims, a size itself.
Error convertSize(NodeContext &ctx) {
  if (!ctx.hasInput(0))
    return ctx.error("input 0 is missing");
  const ImportedValue &a = ctx.input(0);
  SymbolicSize size;
  if (a.constant) {
    size.factor = a.constant->numel();
  } else if (a.tensor) {
    for (const SymbolicSize &d : sizesOf(a.tensor)) {
      size.factor *= d.factor;
      size.dims.append(d.dims.begin(), d.dims.end());
    }
  } else {
    size.factor = a.sizes->size();
  }
  ctx.setOutput(0, sizesValue({size}, /*scalar=*/true));
  return Error::success();
}

//===-- Unsqueeze, Squeeze, Flatten, Reshape, Transpose -------------------===//

/// The axes of Unsqueeze, Squeeze and the reductions: input 1 from opset 13
/// on, the `axes` attribute before.
Expected<std::optional<std::vector<int64_t>>> axesOf(NodeContext &ctx,
                                                     int input) {
  if (ctx.hasInput(input)) {
    Expected<std::vector<int64_t>> axes = ctx.constantInts(input, "axes");
    if (!axes)
      return axes.takeError();
    return std::optional<std::vector<int64_t>>(*axes);
  }
  return ctx.intsAttr("axes");
}

Error convertUnsqueeze(NodeContext &ctx) {
  auto axesOr = axesOf(ctx, 1);
  if (!axesOr)
    return axesOr.takeError();
  if (!*axesOr)
    return ctx.error("has no axes");
  std::vector<int64_t> axes = **axesOr;
  if (!ctx.hasInput(0))
    return ctx.error("input 0 is missing");
  const ImportedValue &a = ctx.input(0);
  int64_t inRank = a.constant         ? a.constant->rank()
                   : a.tensor         ? a.tensor.rank()
                   : a.sizesAreScalar ? 0
                                      : 1;
  int64_t rank = inRank + int64_t(axes.size());
  for (int64_t &axis : axes) {
    axis = countFromEnd(axis, rank);
    if (axis < 0 || axis >= rank)
      return ctx.error("an axis out of range");
  }
  llvm::sort(axes);
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return ctx.error("a repeated axis");
  if (a.constant) {
    HostTensor out = *a.constant;
    out.shape.clear();
    size_t next = 0;
    for (int64_t i = 0; i < rank; ++i)
      out.shape.push_back(
          llvm::is_contained(axes, i) ? 1 : a.constant->shape[next++]);
    ctx.setOutput(0, constantValue(std::move(out)));
    return Error::success();
  }
  if (a.sizes) {
    if (rank != 1)
      return ctx.error("makes sizes known only at run time more than a "
                       "vector");
    ImportedValue v = a;
    v.sizesAreScalar = false;
    ctx.setOutput(0, std::move(v));
    return Error::success();
  }
  Expected<Tensor> x = ctx.tensor(0);
  if (!x)
    return x.takeError();
  Expected<Tensor> out = ctx.create<ExpandDimsOp>(x->value(), axes);
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

Error convertSqueeze(NodeContext &ctx) {
  auto axesOr = axesOf(ctx, 1);
  if (!axesOr)
    return axesOr.takeError();
  if (!ctx.hasInput(0))
    return ctx.error("input 0 is missing");
  const ImportedValue &a = ctx.input(0);
  if (a.sizes) {
    if (a.sizesAreScalar || a.sizes->size() != 1)
      return ctx.error("squeezes sizes that are not one vector of one size");
    ImportedValue v = a;
    v.sizesAreScalar = true;
    ctx.setOutput(0, std::move(v));
    return Error::success();
  }
  std::vector<int64_t> shape =
      a.constant ? a.constant->shape : std::vector<int64_t>();
  if (!a.constant)
    for (int64_t i = 0; i < a.tensor.rank(); ++i)
      shape.push_back(a.tensor.dim(i));
  int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<bool> drop(rank, false);
  if (*axesOr) {
    for (int64_t axis : **axesOr) {
      int64_t d = countFromEnd(axis, rank);
      if (d < 0 || d >= rank)
        return ctx.error("axis " + std::to_string(axis) + " out of range");
      if (shape[d] != 1 && shape[d] != kDyn)
        return ctx.error("squeezes dim " + std::to_string(d) + " of size " +
                         std::to_string(shape[d]));
      drop[d] = true;
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) {
      if (shape[d] == kDyn)
        return ctx.error("squeezes every unit dim of a tensor with dynamic "
                         "dims; give the axes");
      drop[d] = shape[d] == 1;
    }
  }
  if (a.constant) {
    HostTensor out = *a.constant;
    out.shape.clear();
    for (int64_t d = 0; d < rank; ++d)
      if (!drop[d])
        out.shape.push_back(shape[d]);
    ctx.setOutput(0, constantValue(std::move(out)));
    return Error::success();
  }
  std::vector<SymbolicSize> have = sizesOf(a.tensor), target;
  for (int64_t d = 0; d < rank; ++d)
    if (!drop[d])
      target.push_back(have[d]);
  Expected<Tensor> out = reshapeTo(ctx, a.tensor, target);
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

Error convertReshape(NodeContext &ctx) {
  Expected<Tensor> x = ctx.tensor(0);
  if (!x)
    return x.takeError();
  Expected<std::vector<SymbolicSize>> target = ctx.sizes(1, "shape");
  if (!target)
    return target.takeError();
  bool allowZero = ctx.intAttr("allowzero", 0) != 0;
  std::vector<SymbolicSize> have = sizesOf(*x);
  for (size_t i = 0; i < target->size(); ++i) {
    SymbolicSize &t = (*target)[i];
    if (!allowZero && t.isConstant() && t.factor == 0) {
      if (i >= have.size())
        return ctx.error("a 0 in the target shape past the input's rank");
      t = have[i];
    }
  }
  Expected<Tensor> out = reshapeTo(ctx, *x, *target);
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

Error convertFlatten(NodeContext &ctx) {
  Expected<Tensor> x = ctx.tensor(0);
  if (!x)
    return x.takeError();
  int64_t rank = x->rank();
  int64_t axis = countFromEnd(ctx.intAttr("axis", 1), rank);
  if (axis < 0 || axis > rank)
    return ctx.error("axis out of range");
  std::vector<SymbolicSize> have = sizesOf(*x);
  SymbolicSize outer, inner;
  for (int64_t d = 0; d < rank; ++d) {
    SymbolicSize &into = d < axis ? outer : inner;
    into.factor *= have[d].factor;
    into.dims.append(have[d].dims.begin(), have[d].dims.end());
  }
  Expected<Tensor> out = reshapeTo(ctx, *x, {outer, inner});
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

Error convertTranspose(NodeContext &ctx) {
  Expected<Tensor> x = ctx.tensor(0);
  if (!x)
    return x.takeError();
  std::vector<int64_t> perm;
  if (auto attr = ctx.intsAttr("perm")) {
    perm = *attr;
  } else {
    perm.resize(x->rank());
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  std::vector<int64_t> sorted = perm;
  llvm::sort(sorted);
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != int64_t(i) || sorted.size() != size_t(x->rank()))
      return ctx.error("perm is not a permutation of the input's dims");
  Expected<Tensor> out = ctx.create<TransposeOp>(x->value(), perm);
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

//===-- Expand, ConstantOfShape, Range ------------------------------------===//

/// A 1-D i64 tensor of run-time length `size`: the positions along its first
/// dim, widened by each further dim and the factor ([a] + [1, n] is [a, n],
/// read as [a * n]).
Expected<Tensor> vectorOfLength(NodeContext &ctx, const SymbolicSize &size) {
  auto [of, dim] = size.dims[0];
  Expected<Tensor> cur = iotaAlong(ctx, of, dim, DType::I64);
  auto widen = [&](Tensor by) -> Expected<Tensor> {
    Expected<Tensor> column =
        ctx.create<ExpandDimsOp>(cur->value(), llvm::ArrayRef<int64_t>{1});
    if (!column)
      return column.takeError();
    Expected<Tensor> row =
        ctx.create<ExpandDimsOp>(by.value(), llvm::ArrayRef<int64_t>{0});
    if (!row)
      return row.takeError();
    Expected<Tensor> grid = ctx.create<AddOp>(column->value(), row->value());
    if (!grid)
      return grid.takeError();
    return ctx.create<ReshapeOp>(grid->value(), llvm::ArrayRef<int64_t>{-1});
  };
  for (size_t k = 1; cur && k < size.dims.size(); ++k)
    cur = widen(iotaAlong(ctx, size.dims[k].first, size.dims[k].second,
                          DType::I64));
  if (cur && size.factor != 1) {
    if (size.factor > (int64_t(1) << 24))
      return ctx.error("a run-time size times " + std::to_string(size.factor) +
                       " (more than 2^24)");
    Expected<Tensor> factor = ctx.constantTensor(HostTensor(
        {size.factor}, DType::I64, std::vector<double>(size.factor, 0.0)));
    if (!factor)
      return factor.takeError();
    cur = widen(*factor);
  }
  return cur;
}

/// A tensor of shape `sizes` to broadcast against: a constant when every
/// size is known; a tensor whose dims are those sizes when there is one; else
/// the sum of one position vector per run-time size, each along its own dim
/// ([n, 1] + [1, n] is [n, n]: the square of a generated causal mask).
Expected<Tensor> tensorShaped(NodeContext &ctx,
                              const std::vector<SymbolicSize> &sizes,
                              DType kind) {
  std::vector<int64_t> shape;
  mlir::Value like;
  bool constant = true, oneTensor = true;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const SymbolicSize &s = sizes[i];
    if (s.isConstant()) {
      if (s.factor < 0)
        return ctx.error("a negative size " + std::to_string(s.factor) +
                         " in the shape");
      shape.push_back(s.factor);
      continue;
    }
    constant = false;
    if (s.factor <= 0)
      return ctx.error("a run-time size times " + std::to_string(s.factor));
    shape.push_back(1);
    if (s.factor != 1 || s.dims.size() != 1 ||
        s.dims[0].second != int64_t(i) || (like && like != s.dims[0].first))
      oneTensor = false;
    like = s.dims[0].first;
  }
  if (constant) {
    int64_t count = 1;
    for (int64_t d : shape) {
      if (d != 0 && count > (int64_t(1) << 24) / d)
        return ctx.error("a constant shape of more than 2^24 elements");
      count *= d;
    }
    return ctx.constantTensor(
        HostTensor(shape, kind, std::vector<double>(count, 0.0)));
  }
  if (oneTensor) {
    Tensor likeTensor(like, &ctx.graph());
    bool fits = likeTensor.rank() == int64_t(sizes.size());
    for (size_t i = 0; fits && i < sizes.size(); ++i)
      fits = !sizes[i].isConstant() || likeTensor.dim(i) == sizes[i].factor;
    if (fits)
      return likeTensor;
  }
  // The constant sizes (1 at the run-time ones), then each run-time size.
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d != 0 && count > (int64_t(1) << 24) / d)
      return ctx.error("a constant shape of more than 2^24 elements");
    count *= d;
  }
  Expected<Tensor> sum = ctx.constantTensor(
      HostTensor(shape, DType::I64, std::vector<double>(count, 0.0)));
  if (!sum)
    return sum.takeError();
  int64_t rank = int64_t(sizes.size());
  for (int64_t i = 0; i < rank; ++i) {
    if (sizes[i].isConstant())
      continue;
    Expected<Tensor> positions = vectorOfLength(ctx, sizes[i]);
    if (!positions)
      return positions.takeError();
    llvm::SmallVector<int64_t> others;
    for (int64_t j = 0; j < rank; ++j)
      if (j != i)
        others.push_back(j);
    Expected<Tensor> along =
        others.empty() ? std::move(positions)
                       : ctx.create<ExpandDimsOp>(
                             positions->value(), llvm::ArrayRef<int64_t>(others));
    if (!along)
      return along.takeError();
    sum = ctx.create<AddOp>(sum->value(), along->value());
    if (!sum)
      return sum.takeError();
  }
  return *sum;
}

Error convertExpand(NodeContext &ctx) {
  Expected<Tensor> x = ctx.tensor(0);
  if (!x)
    return x.takeError();
  Expected<std::vector<SymbolicSize>> target = ctx.sizes(1, "shape");
  if (!target)
    return target.takeError();
  // The result is the broadcast of x's sizes and the target's.
  std::vector<SymbolicSize> have = sizesOf(*x);
  size_t rank = std::max(have.size(), target->size());
  std::vector<SymbolicSize> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    std::optional<SymbolicSize> p, q;
    if (i >= rank - have.size())
      p = have[i - (rank - have.size())];
    if (i >= rank - target->size())
      q = (*target)[i - (rank - target->size())];
    if (!q)
      result[i] = *p;
    else if (!p || (p->isConstant() && p->factor == 1))
      result[i] = *q;
    else if ((q->isConstant() && q->factor == 1) || *p == *q)
      result[i] = *p;
    else if (p->isConstant() && q->isConstant())
      return ctx.error("cannot broadcast size " + std::to_string(p->factor) +
                       " to " + std::to_string(q->factor));
    else
      result[i] = q->isConstant() ? *q : *p;
  }
  if (result == have) {
    ctx.setOutput(0, *x);
    return Error::success();
  }
  Expected<DType> kind = dtypeOfType(x->elementType());
  if (!kind)
    return ctx.error(llvm::toString(kind.takeError()));
  Expected<Tensor> like = tensorShaped(ctx, result, *kind);
  if (!like)
    return like.takeError();
  Expected<Tensor> out = ctx.create<BroadcastAsOp>(x->value(), like->value());
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

Error convertConstantOfShape(NodeContext &ctx) {
  Expected<std::vector<SymbolicSize>> target = ctx.sizes(0, "shape");
  if (!target)
    return target.takeError();
  HostTensor fill = HostTensor::scalar(0.0, DType::F32);
  if (const onnx::AttributeProto *value = ctx.attribute("value")) {
    Expected<HostTensor> t = hostTensorOf(value->t());
    if (!t)
      return ctx.error("its value: " + llvm::toString(t.takeError()));
    if (t->numel() != 1)
      return ctx.error("a value of more than one element");
    fill = HostTensor::scalar(t->data[0], t->kind);
  }
  bool constant = llvm::all_of(
      *target, [](const SymbolicSize &s) { return s.isConstant(); });
  if (constant) {
    std::vector<int64_t> shape;
    for (const SymbolicSize &s : *target) {
      if (s.factor < 0)
        return ctx.error("a negative size " + std::to_string(s.factor));
      shape.push_back(s.factor);
    }
    std::optional<int64_t> count = elementCountWithin(shape);
    if (!count || *count > (int64_t(1) << 24))
      return ctx.error("a constant of shape " + formatShape(shape) +
                       ": more than 2^24 elements");
    ctx.setOutput(
        0, constantValue(HostTensor(shape, fill.kind,
                                    std::vector<double>(*count, fill.data[0]))));
    return Error::success();
  }
  Expected<Tensor> like = tensorShaped(ctx, *target, fill.kind);
  if (!like)
    return like.takeError();
  Expected<Tensor> scalar = ctx.constantTensor(fill);
  if (!scalar)
    return scalar.takeError();
  Expected<Tensor> out =
      ctx.create<BroadcastAsOp>(scalar->value(), like->value());
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

Error convertRange(NodeContext &ctx) {
  const ImportedValue &start = ctx.input(0), &limit = ctx.input(1),
                      &delta = ctx.input(2);
  if (start.constant && limit.constant && delta.constant) {
    if (start.constant->numel() != 1 || limit.constant->numel() != 1 ||
        delta.constant->numel() != 1)
      return ctx.error("start, limit and delta must be scalars");
    double s = start.constant->data[0], l = limit.constant->data[0],
           d = delta.constant->data[0];
    if (d == 0)
      return ctx.error("a delta of 0");
    // In double until it is known to be small: a huge count does not
    // survive the conversion to an integer.
    double count = std::ceil((l - s) / d);
    if (!std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d) ||
        !(count <= double(int64_t(1) << 24)))
      return ctx.error("a range from " + std::to_string(s) + " to " +
                       std::to_string(l) + " by " + std::to_string(d) +
                       ": not finite, or more than 2^24 elements");
    int64_t n = std::max<int64_t>(0, int64_t(count));
    HostTensor out({n}, start.constant->kind);
    for (int64_t i = 0; i < n; ++i)
      out.data[i] = s + double(i) * d;
    ctx.setOutput(0, constantValue(std::move(out)));
    return Error::success();
  }
  // Positions 0 .. n-1 of a run-time length: loom.iota over the dim.
  Expected<std::vector<SymbolicSize>> first = ctx.sizes(0, "start");
  Expected<std::vector<SymbolicSize>> step = ctx.sizes(2, "delta");
  Expected<std::vector<SymbolicSize>> end = ctx.sizes(1, "limit");
  if (!first || !step || !end)
    return ctx.error("a range whose start or delta is not a constant");
  if (first->size() != 1 || !(*first)[0].isConstant() ||
      (*first)[0].factor != 0 || step->size() != 1 ||
      !(*step)[0].isConstant() || (*step)[0].factor != 1 || end->size() != 1 ||
      (*end)[0].factor != 1 || (*end)[0].dims.size() != 1)
    return ctx.error("a range over sizes known only at run time other than "
                     "0, 1, ..., n - 1 for one dim n");
  auto [of, dim] = (*end)[0].dims[0];
  Expected<DType> kind =
      dtypeOfOnnx(start.onnxType ? start.onnxType : onnx::TensorProto::INT64);
  if (!kind)
    return ctx.error(llvm::toString(kind.takeError()));
  Tensor out = iotaAlong(ctx, of, dim, *kind);
  ctx.setOutput(0, out);
  return Error::success();
}

} // namespace

void loom::onnx_import::addShapeConverters(llvm::StringMap<Converter> &c) {
  c["Shape"] = convertShape;
  c["Size"] = convertSize;
  c["Unsqueeze"] = convertUnsqueeze;
  c["Squeeze"] = convertSqueeze;
  c["Reshape"] = convertReshape;
  c["Flatten"] = convertFlatten;
  c["Transpose"] = convertTranspose;
  c["Expand"] = convertExpand;
  c["ConstantOfShape"] = convertConstantOfShape;
  c["Range"] = convertRange;
}
