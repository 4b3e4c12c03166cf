//===- ShapeInference.cpp - Result types of loom ops ----------------------===//
//
// Each op with InferTypeOpAdaptor computes its result type here. The verifier
// that InferTypeOpInterface installs compares a written result type with this
// one, so these functions are also where shape errors are named.
//
//===----------------------------------------------------------------------===//

#include "ir/LoomDialect.h"
#include "ir/ShapeUtils.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace loom;

std::string loom::formatShape(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (i)
      s += "x";
    s += ShapedType::isDynamic(d) ? "?" : std::to_string(d);
  }
  return s;
}

std::optional<SmallVector<int64_t>> loom::broadcastShapes(ArrayRef<int64_t> a,
                                                          ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    bool dynA = ShapedType::isDynamic(da), dynB = ShapedType::isDynamic(db);
    if (dynA && dynB)
      out[i] = ShapedType::kDynamic;
    else if (dynA)
      out[i] = db == 1 ? ShapedType::kDynamic : db;
    else if (dynB)
      out[i] = da == 1 ? ShapedType::kDynamic : da;
    else if (da == db || db == 1)
      out[i] = da;
    else if (da == 1)
      out[i] = db;
    else
      return std::nullopt;
  }
  return out;
}

std::optional<int64_t> loom::normalizeAxis(int64_t i, int64_t rank) {
  if (i < 0)
    i += rank;
  if (i < 0 || i >= rank)
    return std::nullopt;
  return i;
}

namespace {

RankedTensorType ranked(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

/// Checks that every value is a ranked tensor; names the first that is not.
LogicalResult requireRanked(std::optional<Location> loc, StringRef op,
                            ValueRange values) {
  for (Value v : values)
    if (!ranked(v))
      return emitOptionalError(loc, "'loom.", op,
                               "' needs ranked tensors, got ", v.getType());
  return success();
}

LogicalResult inferBroadcast(std::optional<Location> loc, StringRef op,
                             ValueRange operands, Type element,
                             SmallVectorImpl<Type> &results) {
  if (failed(requireRanked(loc, op, operands)))
    return failure();
  SmallVector<int64_t> shape = llvm::to_vector(ranked(operands[0]).getShape());
  for (Value v : operands.drop_front()) {
    auto next = broadcastShapes(shape, ranked(v).getShape());
    if (!next)
      return emitOptionalError(loc, "'loom.", op, "' cannot broadcast ",
                               formatShape(shape), " with ",
                               formatShape(ranked(v).getShape()));
    shape = *next;
  }
  results.push_back(tensorOf(shape, element));
  return success();
}

LogicalResult inferBinary(std::optional<Location> loc, StringRef op, Value lhs,
                          Value rhs, SmallVectorImpl<Type> &results) {
  if (failed(requireRanked(loc, op, {lhs, rhs})))
    return failure();
  Type el = ranked(lhs).getElementType();
  if (el != ranked(rhs).getElementType())
    return emitOptionalError(loc, "'loom.", op,
                             "' needs operands of one element type, got ", el,
                             " and ", ranked(rhs).getElementType());
  return inferBroadcast(loc, op, {lhs, rhs}, el, results);
}

LogicalResult inferSameAsInput(std::optional<Location> loc, StringRef op,
                               Value input, SmallVectorImpl<Type> &results) {
  if (failed(requireRanked(loc, op, input)))
    return failure();
  results.push_back(input.getType());
  return success();
}

/// The result of reducing `dims` of `shape`.
LogicalResult inferReduce(std::optional<Location> loc, StringRef op,
                          Value input, ArrayRef<int64_t> dims, bool keepDims,
                          SmallVectorImpl<Type> &results) {
  if (failed(requireRanked(loc, op, input)))
    return failure();
  auto type = ranked(input);
  int64_t rank = type.getRank();
  SmallVector<bool> reduced(rank, false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank)
      return emitOptionalError(loc, "'loom.", op, "' reduces dim ", d,
                               " of a rank-", rank, " tensor");
    if (reduced[d])
      return emitOptionalError(loc, "'loom.", op, "' lists dim ", d, " twice");
    reduced[d] = true;
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i])
      shape.push_back(type.getDimSize(i));
    else if (keepDims)
      shape.push_back(1);
  }
  results.push_back(tensorOf(shape, type.getElementType()));
  return success();
}

LogicalResult inferAxisOp(std::optional<Location> loc, StringRef op,
                          Value input, int64_t axis,
                          SmallVectorImpl<Type> &results) {
  if (failed(requireRanked(loc, op, input)))
    return failure();
  int64_t rank = ranked(input).getRank();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "'loom.", op, "' axis ", axis,
                             " is out of range for a rank-", rank, " tensor");
  results.push_back(input.getType());
  return success();
}

/// The element count if every dim is static; nothing when a dim is dynamic
/// or the count does not fit in int64 (`*overflow` says which).
std::optional<int64_t> staticCount(ArrayRef<int64_t> shape,
                                   bool *overflow = nullptr) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (ShapedType::isDynamic(d))
      return std::nullopt;
    if (__builtin_mul_overflow(n, d, &n)) {
      if (overflow)
        *overflow = true;
      return std::nullopt;
    }
  }
  return n;
}

} // namespace

#define LOOM_INFER_BINARY(Op, name)                                            \
  LogicalResult Op::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &results) {                                        \
    return inferBinary(loc, name, adaptor.getLhs(), adaptor.getRhs(),          \
                       results);                                               \
  }
LOOM_INFER_BINARY(AddOp, "add")
LOOM_INFER_BINARY(SubOp, "sub")
LOOM_INFER_BINARY(MulOp, "mul")
LOOM_INFER_BINARY(DivOp, "div")
LOOM_INFER_BINARY(MaximumOp, "maximum")
LOOM_INFER_BINARY(MinimumOp, "minimum")
LOOM_INFER_BINARY(PowOp, "pow")
#undef LOOM_INFER_BINARY

#define LOOM_INFER_UNARY(Op, name)                                             \
  LogicalResult Op::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &results) {                                        \
    return inferSameAsInput(loc, name, adaptor.getInput(), results);           \
  }
LOOM_INFER_UNARY(NegOp, "neg")
LOOM_INFER_UNARY(AbsOp, "abs")
LOOM_INFER_UNARY(ExpOp, "exp")
LOOM_INFER_UNARY(LogOp, "log")
LOOM_INFER_UNARY(SqrtOp, "sqrt")
LOOM_INFER_UNARY(RsqrtOp, "rsqrt")
LOOM_INFER_UNARY(TanhOp, "tanh")
LOOM_INFER_UNARY(SigmoidOp, "sigmoid")
LOOM_INFER_UNARY(ReluOp, "relu")
LOOM_INFER_UNARY(GeluOp, "gelu")
LOOM_INFER_UNARY(ErfOp, "erf")
LOOM_INFER_UNARY(SinOp, "sin")
LOOM_INFER_UNARY(CosOp, "cos")
#undef LOOM_INFER_UNARY

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  SmallVector<Type> tmp;
  if (failed(
          inferBinary(loc, "compare", adaptor.getLhs(), adaptor.getRhs(), tmp)))
    return failure();
  results.push_back(tensorOf(cast<RankedTensorType>(tmp[0]).getShape(),
                             IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  Value t = adaptor.getOnTrue(), f = adaptor.getOnFalse();
  if (failed(requireRanked(loc, "select", {adaptor.getCond(), t, f})))
    return failure();
  Type el = ranked(t).getElementType();
  if (el != ranked(f).getElementType())
    return emitOptionalError(loc,
                             "'loom.select' needs both branches of one "
                             "element type, got ",
                             el, " and ", ranked(f).getElementType());
  return inferBroadcast(loc, "select", {adaptor.getCond(), t, f}, el, results);
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
  if (failed(requireRanked(loc, "matmul", {lhs, rhs})))
    return failure();
  auto a = ranked(lhs), b = ranked(rhs);
  if (a.getElementType() != b.getElementType())
    return emitOptionalError(loc,
                             "'loom.matmul' needs operands of one "
                             "element type, got ",
                             a.getElementType(), " and ", b.getElementType());
  if (a.getRank() < 2 || b.getRank() < 2)
    return emitOptionalError(loc,
                             "'loom.matmul' needs operands of rank 2 or "
                             "more, got ",
                             formatShape(a.getShape()), " and ",
                             formatShape(b.getShape()));
  int64_t ra = a.getRank(), rb = b.getRank();
  bool ta = adaptor.getTransposeLhs(), tb = adaptor.getTransposeRhs();
  int64_t m = a.getDimSize(ta ? ra - 1 : ra - 2);
  int64_t ka = a.getDimSize(ta ? ra - 2 : ra - 1);
  int64_t kb = b.getDimSize(tb ? rb - 1 : rb - 2);
  int64_t n = b.getDimSize(tb ? rb - 2 : rb - 1);
  if (!ShapedType::isDynamic(ka) && !ShapedType::isDynamic(kb) && ka != kb)
    return emitOptionalError(
        loc,
        "'loom.matmul' contraction sizes differ: ", formatShape(a.getShape()),
        ta ? " (transposed)" : "", " has K=", ka, " but ",
        formatShape(b.getShape()), tb ? " (transposed)" : "", " has K=", kb);
  auto batch =
      broadcastShapes(a.getShape().drop_back(2), b.getShape().drop_back(2));
  if (!batch)
    return emitOptionalError(loc, "'loom.matmul' batch dims do not broadcast: ",
                             formatShape(a.getShape()), " and ",
                             formatShape(b.getShape()));
  SmallVector<int64_t> shape = *batch;
  shape.push_back(m);
  shape.push_back(n);
  results.push_back(tensorOf(shape, a.getElementType()));
  return success();
}

#define LOOM_INFER_REDUCE(Op, name)                                            \
  LogicalResult Op::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &results) {                                        \
    return inferReduce(loc, name, adaptor.getInput(), adaptor.getDims(),       \
                       adaptor.getKeepDims(), results);                        \
  }
LOOM_INFER_REDUCE(ReduceSumOp, "reduce_sum")
LOOM_INFER_REDUCE(ReduceMeanOp, "reduce_mean")
LOOM_INFER_REDUCE(ReduceMaxOp, "reduce_max")
#undef LOOM_INFER_REDUCE

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  return inferAxisOp(loc, "softmax", adaptor.getInput(), adaptor.getAxis(),
                     results);
}

LogicalResult LogSoftmaxOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &results) {
  return inferAxisOp(loc, "log_softmax", adaptor.getInput(), adaptor.getAxis(),
                     results);
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  Value x = adaptor.getInput();
  if (failed(requireRanked(loc, "layer_norm",
                           {x, adaptor.getGamma(), adaptor.getBeta()})))
    return failure();
  auto type = ranked(x);
  if (type.getRank() < 1)
    return emitOptionalError(loc, "'loom.layer_norm' needs rank 1 or more");
  int64_t d = type.getShape().back();
  for (Value p : {adaptor.getGamma(), adaptor.getBeta()}) {
    auto pt = ranked(p);
    if (pt.getRank() != 1 || pt.getElementType() != type.getElementType() ||
        (!ShapedType::isDynamic(d) && !pt.isDynamicDim(0) &&
         pt.getDimSize(0) != d))
      return emitOptionalError(
          loc, "'loom.layer_norm' needs gamma and beta of shape [", d,
          "] and element type ", type.getElementType(), ", got ", pt);
  }
  // Written so that a NaN fails too.
  double epsilon = adaptor.getEpsilon().convertToDouble();
  if (!(epsilon >= 0) || !std::isfinite(epsilon))
    return emitOptionalError(loc,
                             "'loom.layer_norm' epsilon must be a finite "
                             "number, 0 or more, got ",
                             epsilon);
  results.push_back(type);
  return success();
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  double rate = adaptor.getRate().convertToDouble();
  if (!(rate >= 0.0 && rate < 1.0))
    return emitOptionalError(loc, "'loom.dropout' rate must be in [0, 1), got ",
                             rate);
  auto seed = ranked(adaptor.getSeed());
  if (!seed || seed.getRank() != 0)
    return emitOptionalError(loc, "'loom.dropout' seed must be tensor<i64>");
  return inferSameAsInput(loc, "dropout", adaptor.getInput(), results);
}

/// Shared by cross_entropy and its gradient: logits [..., C] and targets [...].
static LogicalResult checkCrossEntropy(std::optional<Location> loc,
                                       StringRef op, Value logits,
                                       Value targets, double smoothing) {
  if (failed(requireRanked(loc, op, {logits, targets})))
    return failure();
  auto l = ranked(logits), t = ranked(targets);
  if (l.getRank() != t.getRank() + 1)
    return emitOptionalError(loc, "'loom.", op,
                             "' needs logits [..., C] and "
                             "targets [...], got ",
                             formatShape(l.getShape()), " and ",
                             formatShape(t.getShape()));
  if (!verifyCompatibleShape(l.getShape().drop_back(), t.getShape())
           .succeeded())
    return emitOptionalError(
        loc, "'loom.", op, "' logits ", formatShape(l.getShape()),
        " do not match targets ", formatShape(t.getShape()));
  if (!(smoothing >= 0.0 && smoothing <= 1.0))
    return emitOptionalError(loc, "'loom.", op,
                             "' label_smoothing must be in [0, 1], got ",
                             smoothing);
  return success();
}

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &results) {
  if (failed(checkCrossEntropy(loc, "cross_entropy", adaptor.getLogits(),
                               adaptor.getTargets(),
                               adaptor.getLabelSmoothing().convertToDouble())))
    return failure();
  auto l = ranked(adaptor.getLogits());
  results.push_back(tensorOf(l.getShape().drop_back(), l.getElementType()));
  return success();
}

LogicalResult
CrossEntropyGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &results) {
  if (failed(checkCrossEntropy(loc, "cross_entropy_grad", adaptor.getLogits(),
                               adaptor.getTargets(),
                               adaptor.getLabelSmoothing().convertToDouble())))
    return failure();
  auto l = ranked(adaptor.getLogits());
  auto g = ranked(adaptor.getGrad());
  if (!g ||
      failed(verifyCompatibleShape(g.getShape(), l.getShape().drop_back())))
    return emitOptionalError(loc, "'loom.cross_entropy_grad' grad must have "
                                  "the targets' shape");
  results.push_back(l);
  return success();
}

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  if (failed(requireRanked(loc, "reshape", adaptor.getInput())))
    return failure();
  auto in = ranked(adaptor.getInput());
  ArrayRef<int64_t> spec = adaptor.getShape();
  SmallVector<int64_t> shape;
  int64_t inferIndex = -1;
  for (auto [i, s] : llvm::enumerate(spec)) {
    if (s == 0) {
      if ((int64_t)i >= in.getRank())
        return emitOptionalError(loc, "'loom.reshape' copies dim ", i,
                                 " of a rank-", in.getRank(), " input");
      shape.push_back(in.getDimSize(i));
    } else if (s == -1) {
      if (inferIndex >= 0)
        return emitOptionalError(loc,
                                 "'loom.reshape' infers more than one dim");
      inferIndex = i;
      shape.push_back(ShapedType::kDynamic);
    } else if (s > 0) {
      shape.push_back(s);
    } else {
      return emitOptionalError(loc, "'loom.reshape' has invalid size ", s);
    }
  }
  bool overflow = false;
  auto inCount = staticCount(in.getShape(), &overflow);
  SmallVector<int64_t> known;
  for (auto [i, d] : llvm::enumerate(shape))
    if ((int64_t)i != inferIndex)
      known.push_back(d);
  auto knownCount = staticCount(known, &overflow);
  if (overflow)
    return emitOptionalError(
        loc, "'loom.reshape' of ", formatShape(in.getShape()), " into ",
        formatShape(shape), " counts more elements than an int64 holds");
  if (inferIndex >= 0) {
    if (inCount && knownCount) {
      if (*knownCount == 0 || *inCount % *knownCount)
        return emitOptionalError(loc, "'loom.reshape' cannot reshape ",
                                 formatShape(in.getShape()), " into ",
                                 formatShape(shape));
      shape[inferIndex] = *inCount / *knownCount;
    }
  } else if (inCount && knownCount && *inCount != *knownCount) {
    return emitOptionalError(loc, "'loom.reshape' cannot reshape ",
                             formatShape(in.getShape()), " (", *inCount,
                             " elements) into ", formatShape(shape), " (",
                             *knownCount, " elements)");
  }
  results.push_back(tensorOf(shape, in.getElementType()));
  return success();
}

LogicalResult ReshapeAsOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  if (failed(requireRanked(loc, "reshape_as",
                           {adaptor.getInput(), adaptor.getLike()})))
    return failure();
  auto in = ranked(adaptor.getInput()), like = ranked(adaptor.getLike());
  bool overflow = false;
  auto a = staticCount(in.getShape(), &overflow),
       b = staticCount(like.getShape(), &overflow);
  if (overflow)
    return emitOptionalError(loc, "'loom.reshape_as' of ",
                             formatShape(in.getShape()), " into ",
                             formatShape(like.getShape()),
                             " counts more elements than an int64 holds");
  if (a && b && *a != *b)
    return emitOptionalError(loc, "'loom.reshape_as' cannot reshape ",
                             formatShape(in.getShape()), " into ",
                             formatShape(like.getShape()));
  results.push_back(tensorOf(like.getShape(), in.getElementType()));
  return success();
}

LogicalResult ExpandDimsOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &results) {
  if (failed(requireRanked(loc, "expand_dims", adaptor.getInput())))
    return failure();
  auto in = ranked(adaptor.getInput());
  int64_t rank = in.getRank() + adaptor.getDims().size();
  SmallVector<bool> inserted(rank, false);
  for (int64_t d : adaptor.getDims()) {
    if (d < 0 || d >= rank || inserted[d])
      return emitOptionalError(loc,
                               "'loom.expand_dims' has invalid or repeated "
                               "dim ",
                               d, " for a rank-", rank, " result");
    inserted[d] = true;
  }
  SmallVector<int64_t> shape;
  int64_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    shape.push_back(inserted[i] ? 1 : in.getDimSize(next++));
  results.push_back(tensorOf(shape, in.getElementType()));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  if (failed(requireRanked(loc, "transpose", adaptor.getInput())))
    return failure();
  auto in = ranked(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if ((int64_t)perm.size() != in.getRank())
    return emitOptionalError(loc, "'loom.transpose' permutation has ",
                             perm.size(), " entries for a rank-", in.getRank(),
                             " tensor");
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen[p])
      return emitOptionalError(loc,
                               "'loom.transpose' perm is not a "
                               "permutation of 0..",
                               in.getRank() - 1);
    seen[p] = true;
    shape.push_back(in.getDimSize(p));
  }
  results.push_back(tensorOf(shape, in.getElementType()));
  return success();
}

/// The extent of slice [start, end) of a dim of size `size` (maybe dynamic).
/// A negative start counts from the end; an end <= 0 counts from the end, so
/// end = 0 is the end itself (`x[1:]` is start 1, end 0; `x[:-1]` is end -1).
static LogicalResult sliceExtent(std::optional<Location> loc, StringRef op,
                                 int64_t size, int64_t start, int64_t end,
                                 int64_t &extent) {
  if (ShapedType::isDynamic(size)) {
    bool sameSide = (start >= 0) == (end > 0);
    extent = sameSide ? end - start : ShapedType::kDynamic;
    if (sameSide && extent < 0)
      return emitOptionalError(loc, "'loom.", op, "' has start ", start,
                               " after end ", end);
    return success();
  }
  int64_t s = start < 0 ? start + size : start;
  int64_t e = end <= 0 ? end + size : end;
  if (s < 0 || e > size || s > e)
    return emitOptionalError(loc, "'loom.", op, "' range [", start, ", ", end,
                             ") is outside a dim of size ", size);
  extent = e - s;
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  if (failed(requireRanked(loc, "slice", adaptor.getInput())))
    return failure();
  auto in = ranked(adaptor.getInput());
  int64_t dim = adaptor.getDim();
  if (dim < 0 || dim >= in.getRank())
    return emitOptionalError(loc, "'loom.slice' dim ", dim,
                             " is out of range for a rank-", in.getRank(),
                             " tensor");
  SmallVector<int64_t> shape = llvm::to_vector(in.getShape());
  if (failed(sliceExtent(loc, "slice", shape[dim], adaptor.getStart(),
                         adaptor.getEnd(), shape[dim])))
    return failure();
  results.push_back(tensorOf(shape, in.getElementType()));
  return success();
}

LogicalResult SliceGradOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  if (failed(requireRanked(loc, "slice_grad",
                           {adaptor.getInput(), adaptor.getLike()})))
    return failure();
  auto in = ranked(adaptor.getInput()), like = ranked(adaptor.getLike());
  int64_t dim = adaptor.getDim();
  if (dim < 0 || dim >= like.getRank() || in.getRank() != like.getRank())
    return emitOptionalError(loc, "'loom.slice_grad' needs input and like of "
                                  "one rank and dim in range");
  int64_t extent;
  if (failed(sliceExtent(loc, "slice_grad", like.getDimSize(dim),
                         adaptor.getStart(), adaptor.getEnd(), extent)))
    return failure();
  if (!ShapedType::isDynamic(extent) && !in.isDynamicDim(dim) &&
      in.getDimSize(dim) != extent)
    return emitOptionalError(loc, "'loom.slice_grad' input has ",
                             in.getDimSize(dim), " entries along dim ", dim,
                             " but the slice has ", extent);
  results.push_back(tensorOf(like.getShape(), in.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "'loom.concat' needs at least one input");
  if (failed(requireRanked(loc, "concat", inputs)))
    return failure();
  auto first = ranked(inputs[0]);
  int64_t dim = adaptor.getDim();
  if (dim < 0 || dim >= first.getRank())
    return emitOptionalError(loc, "'loom.concat' dim ", dim,
                             " is out of range for rank ", first.getRank());
  SmallVector<int64_t> shape = llvm::to_vector(first.getShape());
  for (Value v : inputs.drop_front()) {
    auto t = ranked(v);
    if (t.getRank() != first.getRank() ||
        t.getElementType() != first.getElementType())
      return emitOptionalError(loc,
                               "'loom.concat' inputs differ in rank or "
                               "element type: ",
                               first, " and ", t);
    for (int64_t i = 0; i < t.getRank(); ++i) {
      int64_t d = t.getDimSize(i);
      if (i == dim) {
        shape[i] = ShapedType::isDynamic(shape[i]) || ShapedType::isDynamic(d)
                       ? ShapedType::kDynamic
                       : shape[i] + d;
      } else if (!ShapedType::isDynamic(d) &&
                 !ShapedType::isDynamic(shape[i]) && d != shape[i]) {
        return emitOptionalError(loc, "'loom.concat' inputs differ in dim ", i,
                                 ": ", shape[i], " and ", d);
      } else if (ShapedType::isDynamic(shape[i])) {
        shape[i] = d;
      }
    }
  }
  results.push_back(tensorOf(shape, first.getElementType()));
  return success();
}

LogicalResult BroadcastAsOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &results) {
  if (failed(requireRanked(loc, "broadcast_as",
                           {adaptor.getInput(), adaptor.getLike()})))
    return failure();
  auto in = ranked(adaptor.getInput()), like = ranked(adaptor.getLike());
  auto b = broadcastShapes(in.getShape(), like.getShape());
  if (!b || in.getRank() > like.getRank())
    return emitOptionalError(loc, "'loom.broadcast_as' cannot broadcast ",
                             formatShape(in.getShape()), " to ",
                             formatShape(like.getShape()));
  results.push_back(tensorOf(like.getShape(), in.getElementType()));
  return success();
}

LogicalResult SumToOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  if (failed(requireRanked(loc, "sum_to",
                           {adaptor.getInput(), adaptor.getLike()})))
    return failure();
  auto in = ranked(adaptor.getInput()), like = ranked(adaptor.getLike());
  auto b = broadcastShapes(like.getShape(), in.getShape());
  if (!b || like.getRank() > in.getRank())
    return emitOptionalError(loc, "'loom.sum_to' cannot sum ",
                             formatShape(in.getShape()), " down to ",
                             formatShape(like.getShape()));
  results.push_back(tensorOf(like.getShape(), in.getElementType()));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  if (failed(
          requireRanked(loc, "gather", {adaptor.getTable(), adaptor.getIds()})))
    return failure();
  auto table = ranked(adaptor.getTable()), ids = ranked(adaptor.getIds());
  if (table.getRank() < 1)
    return emitOptionalError(loc, "'loom.gather' table must have rank >= 1");
  SmallVector<int64_t> shape = llvm::to_vector(ids.getShape());
  llvm::append_range(shape, table.getShape().drop_front());
  results.push_back(tensorOf(shape, table.getElementType()));
  return success();
}

LogicalResult ScatterAddOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &results) {
  if (failed(requireRanked(
          loc, "scatter_add",
          {adaptor.getUpdates(), adaptor.getIds(), adaptor.getLike()})))
    return failure();
  auto upd = ranked(adaptor.getUpdates()), ids = ranked(adaptor.getIds()),
       like = ranked(adaptor.getLike());
  SmallVector<int64_t> expected = llvm::to_vector(ids.getShape());
  if (like.getRank() < 1)
    return emitOptionalError(loc,
                             "'loom.scatter_add' like must have rank >= 1");
  llvm::append_range(expected, like.getShape().drop_front());
  if (failed(verifyCompatibleShape(expected, upd.getShape())))
    return emitOptionalError(loc, "'loom.scatter_add' updates ",
                             formatShape(upd.getShape()), " do not match ids ",
                             formatShape(ids.getShape()), " and rows of ",
                             formatShape(like.getShape()));
  results.push_back(tensorOf(like.getShape(), upd.getElementType()));
  return success();
}
