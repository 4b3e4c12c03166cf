//===- KernelChecks.cpp - What every device's library kernels check -------===//

#include "runtime/KernelChecks.h"

#include <algorithm>

namespace loom::kernels {

std::string shapeString(const std::vector<int64_t> &shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i)
    p *= shape[i];
  return p;
}

Status checkArgCount(const std::vector<TensorRef> &args, size_t count,
                     const char *kernel) {
  if (args.size() == count)
    return Status::success();
  return Status::failure(std::string(kernel) + ": expected " +
                         std::to_string(count) + " tensor arguments, got " +
                         std::to_string(args.size()));
}

Status checkDType(const TensorRef &t, DType dtype, const char *what) {
  if (t.dtype == dtype)
    return Status::success();
  return Status::failure(std::string(what) + " has element type " +
                         dtypeName(t.dtype) + ", expected " + dtypeName(dtype));
}

Status checkIdType(const TensorRef &ids, const char *what) {
  if (ids.dtype == DType::I32 || ids.dtype == DType::I64)
    return Status::success();
  return Status::failure(std::string(what) + " must be i32 or i64, got " +
                         dtypeName(ids.dtype));
}

Status checkSameDType(const TensorRef &a, const TensorRef &b,
                      const char *kernel) {
  if (a.dtype == b.dtype)
    return Status::success();
  return Status::failure(std::string(kernel) + ": element types differ (" +
                         dtypeName(a.dtype) + " and " + dtypeName(b.dtype) +
                         ")");
}

Status checkShape(const TensorRef &out, const std::vector<int64_t> &shape,
                  const char *kernel) {
  if (out.shape == shape)
    return Status::success();
  return Status::failure(std::string(kernel) + ": result is " +
                         shapeString(out.shape) + ", expected " +
                         shapeString(shape));
}

//===-- Decoding primitives (Device::gatherRows, moveRows, argmax, topK) ===//

// These speak of shapes as the runtime does ("[2, 3]").
Status checkGatherRows(const TensorRef &src, const std::vector<int64_t> &rows,
                       const TensorRef &dst) {
  if (src.rank() < 1 || dst.rank() != src.rank() || dst.dtype != src.dtype ||
      dst.shape[0] != static_cast<int64_t>(rows.size()) ||
      !std::equal(src.shape.begin() + 1, src.shape.end(),
                  dst.shape.begin() + 1))
    return Status::failure("gatherRows: " + runtime::shapeString(dst.shape) +
                           " cannot hold " + std::to_string(rows.size()) +
                           " rows of " + runtime::shapeString(src.shape));
  for (int64_t row : rows)
    if (row < 0 || row >= src.shape[0])
      return Status::failure("gatherRows: row " + std::to_string(row) + " of " +
                             std::to_string(src.shape[0]));
  return Status::success();
}

Status checkMoveRows(const TensorRef &t, const std::vector<int64_t> &from,
                     const std::vector<int64_t> &to) {
  if (t.rank() < 1 || from.size() != to.size())
    return Status::failure("moveRows: " + std::to_string(from.size()) +
                           " sources for " + std::to_string(to.size()) +
                           " rows of " + runtime::shapeString(t.shape));
  int64_t rows = t.shape[0];
  // 1: read, 2: written.
  std::vector<uint8_t> use(static_cast<size_t>(rows), 0);
  for (size_t i = 0; i < from.size(); ++i)
    for (int64_t row : {from[i], to[i]})
      if (row < 0 || row >= rows)
        return Status::failure("moveRows: row " + std::to_string(row) + " of " +
                               std::to_string(rows));
  for (size_t i = 0; i < to.size(); ++i) {
    if (use[to[i]] == 2)
      return Status::failure("moveRows: row " + std::to_string(to[i]) +
                             " is written twice");
    use[to[i]] = 2;
  }
  for (int64_t row : from)
    if (use[row] == 2)
      return Status::failure("moveRows: row " + std::to_string(row) +
                             " is both read and written");
  return Status::success();
}

Status checkScores(const TensorRef &scores, const char *what) {
  if (scores.dtype != DType::F32 || scores.rank() != 2 || scores.shape[1] < 1)
    return Status::failure(
        std::string(what) + " takes f32 scores [rows, n] with n >= 1, got " +
        dtypeName(scores.dtype) + " " + runtime::shapeString(scores.shape));
  return Status::success();
}

namespace {

/// checkScores, and the cell `cellAt(i)` of each i < count within `scores`.
template <typename CellAt>
Status checkCellsOf(const TensorRef &scores, const char *what, size_t count,
                    CellAt cellAt) {
  LOOM_RETURN_IF_ERROR(checkScores(scores, what));
  int64_t cells = scores.shape[0] * scores.shape[1];
  for (size_t i = 0; i < count; ++i)
    if (cellAt(i) < 0 || cellAt(i) >= cells)
      return Status::failure(std::string(what) + ": cell " +
                             std::to_string(cellAt(i)) + " is outside scores " +
                             runtime::shapeString(scores.shape));
  return Status::success();
}

} // namespace

Status checkScoreEdits(const TensorRef &scores,
                       const std::vector<runtime::Device::ScoreEdit> &edits) {
  return checkCellsOf(scores, "editScores", edits.size(),
                      [&](size_t i) { return edits[i].cell; });
}

Status checkScoreCells(const TensorRef &scores,
                       const std::vector<int64_t> &cells) {
  return checkCellsOf(scores, "readScores", cells.size(),
                      [&](size_t i) { return cells[i]; });
}

Status checkTopK(const TensorRef &scores, int64_t k) {
  LOOM_RETURN_IF_ERROR(checkScores(scores, "topK"));
  int64_t n = scores.shape[1];
  if (k < 1 || k > n)
    return Status::failure("topK: k " + std::to_string(k) + " is outside [1, " +
                           std::to_string(n) + "]");
  return Status::success();
}

//===-- Shape, index and mask kernels ---------------------------------===//

Status sliceRange(const char *kernel, const abi::SliceCall &slice,
                  const std::vector<int64_t> &shape, int64_t &start,
                  int64_t &end) {
  int64_t dim = slice.dim;
  if (dim < 0 || dim >= static_cast<int64_t>(shape.size()))
    return Status::failure(std::string(kernel) + ": dim " +
                           std::to_string(dim) + " is out of range for " +
                           shapeString(shape));
  int64_t size = shape[dim];
  start = slice.start < 0 ? slice.start + size : slice.start;
  end = slice.end <= 0 ? slice.end + size : slice.end;
  if (start < 0 || end > size || start > end)
    return Status::failure(std::string(kernel) + ": range [" +
                           std::to_string(slice.start) + ", " +
                           std::to_string(slice.end) + ") is outside dim " +
                           std::to_string(dim) + " of " + shapeString(shape));
  return Status::success();
}

Status checkTransposeCall(const std::vector<TensorRef> &args,
                          const abi::CallAttrs &attrs,
                          std::vector<int64_t> &shape,
                          std::vector<int64_t> &strides) {
  LOOM_RETURN_IF_ERROR(checkArgCount(args, 2, "transpose"));
  const TensorRef &in = args[0], &out = args[1];
  LOOM_RETURN_IF_ERROR(checkSameDType(in, out, "transpose"));
  ErrorOr<abi::TransposeCall> decoded = abi::TransposeCall::decode(attrs);
  if (!decoded)
    return decoded.status().withContext("transpose");
  // decode checked that perm permutes [0, its size); only the tensor says
  // whether that size is the rank.
  const std::vector<int64_t> &perm = decoded->perm;
  if (static_cast<int64_t>(perm.size()) != in.rank())
    return Status::failure(
        "transpose: perm is not a permutation of the dims of " +
        shapeString(in.shape));
  std::vector<int64_t> inStrides = stridesOf(in.shape);
  shape.clear();
  strides.clear();
  for (int64_t p : perm) {
    shape.push_back(in.shape[p]);
    strides.push_back(inStrides[p]);
  }
  return checkShape(out, shape, "transpose");
}

Status checkSliceCall(const std::vector<TensorRef> &args,
                      const abi::CallAttrs &attrs, int64_t &dim, int64_t &start,
                      int64_t &end) {
  LOOM_RETURN_IF_ERROR(checkArgCount(args, 2, "slice"));
  const TensorRef &in = args[0], &out = args[1];
  LOOM_RETURN_IF_ERROR(checkSameDType(in, out, "slice"));
  ErrorOr<abi::SliceCall> decoded = abi::SliceCall::decode(attrs);
  if (!decoded)
    return decoded.status().withContext("slice");
  dim = decoded->dim;
  LOOM_RETURN_IF_ERROR(sliceRange("slice", *decoded, in.shape, start, end));
  std::vector<int64_t> shape = in.shape;
  shape[dim] = end - start;
  return checkShape(out, shape, "slice");
}

Status checkSliceGradCall(const std::vector<TensorRef> &args,
                          const abi::CallAttrs &attrs, int64_t &dim,
                          int64_t &start, int64_t &end) {
  LOOM_RETURN_IF_ERROR(checkArgCount(args, 3, "slice_grad"));
  const TensorRef &in = args[0], &like = args[1], &out = args[2];
  LOOM_RETURN_IF_ERROR(checkSameDType(in, out, "slice_grad"));
  ErrorOr<abi::SliceCall> decoded = abi::SliceCall::decode(attrs);
  if (!decoded)
    return decoded.status().withContext("slice_grad");
  dim = decoded->dim;
  LOOM_RETURN_IF_ERROR(
      sliceRange("slice_grad", *decoded, like.shape, start, end));
  std::vector<int64_t> expected = like.shape;
  expected[dim] = end - start;
  if (in.shape != expected)
    return Status::failure(
        "slice_grad: input " + shapeString(in.shape) + " does not fit slice [" +
        std::to_string(decoded->start) + ", " + std::to_string(decoded->end) +
        ") of dim " + std::to_string(dim) + " of " + shapeString(like.shape) +
        ", which is " + shapeString(expected));
  return checkShape(out, like.shape, "slice_grad");
}

Status checkConcatCall(const std::vector<TensorRef> &args,
                       const abi::CallAttrs &attrs, int64_t &dim) {
  if (args.size() < 2)
    return Status::failure("concat: expected inputs and a result, got " +
                           std::to_string(args.size()) + " tensor arguments");
  ErrorOr<abi::ConcatCall> decoded = abi::ConcatCall::decode(attrs);
  if (!decoded)
    return decoded.status().withContext("concat");
  size_t numInputs = args.size() - 1;
  const TensorRef &first = args[0], &out = args.back();
  int64_t rank = first.rank();
  dim = decoded->dim;
  if (dim < 0 || dim >= rank)
    return Status::failure("concat: dim " + std::to_string(dim) +
                           " is out of range for " + shapeString(first.shape));
  std::vector<int64_t> shape = first.shape;
  shape[dim] = 0;
  for (size_t i = 0; i < numInputs; ++i) {
    const TensorRef &t = args[i];
    LOOM_RETURN_IF_ERROR(checkSameDType(t, out, "concat"));
    bool fits = t.rank() == rank;
    for (int64_t d = 0; fits && d < rank; ++d)
      fits = d == dim || t.shape[d] == first.shape[d];
    if (!fits)
      return Status::failure("concat: inputs " + shapeString(first.shape) +
                             " and " + shapeString(t.shape) +
                             " differ outside dim " + std::to_string(dim));
    shape[dim] += t.shape[dim];
  }
  return checkShape(out, shape, "concat");
}

Status checkBroadcastAsCall(const std::vector<TensorRef> &args,
                            const abi::CallAttrs &attrs,
                            std::vector<int64_t> &strides) {
  LOOM_RETURN_IF_ERROR(checkArgCount(args, 3, "broadcast_as"));
  LOOM_RETURN_IF_ERROR(abi::decodeNoAttrs("broadcast_as", attrs));
  const TensorRef &in = args[0], &like = args[1], &out = args[2];
  LOOM_RETURN_IF_ERROR(checkSameDType(in, out, "broadcast_as"));
  const std::vector<int64_t> &shape = like.shape;
  size_t rank = shape.size(), inRank = in.shape.size();
  bool fits = inRank <= rank;
  size_t lead = fits ? rank - inRank : 0;
  for (size_t i = 0; fits && i < inRank; ++i)
    fits = in.shape[i] == 1 || in.shape[i] == shape[lead + i];
  if (!fits)
    return Status::failure("broadcast_as: cannot broadcast " +
                           shapeString(in.shape) + " to " + shapeString(shape));
  LOOM_RETURN_IF_ERROR(checkShape(out, shape, "broadcast_as"));
  std::vector<int64_t> inStrides = stridesOf(in.shape);
  strides.assign(rank, 0);
  for (size_t i = 0; i < inRank; ++i)
    strides[lead + i] = in.shape[i] == 1 ? 0 : inStrides[i];
  return Status::success();
}

Status checkSumToCall(const std::vector<TensorRef> &args,
                      const abi::CallAttrs &attrs) {
  LOOM_RETURN_IF_ERROR(checkArgCount(args, 3, "sum_to"));
  LOOM_RETURN_IF_ERROR(abi::decodeNoAttrs("sum_to", attrs));
  const TensorRef &in = args[0], &like = args[1], &out = args[2];
  for (const TensorRef *t : {&in, &out})
    LOOM_RETURN_IF_ERROR(checkDType(*t, DType::F32, "sum_to"));
  const std::vector<int64_t> &shape = like.shape;
  size_t rank = in.shape.size();
  bool fits = shape.size() <= rank;
  size_t lead = fits ? rank - shape.size() : 0;
  for (size_t i = 0; fits && i < shape.size(); ++i)
    fits = shape[i] == 1 || shape[i] == in.shape[lead + i];
  if (!fits)
    return Status::failure("sum_to: cannot sum " + shapeString(in.shape) +
                           " down to " + shapeString(shape));
  return checkShape(out, shape, "sum_to");
}

Status checkGatherCall(const std::vector<TensorRef> &args,
                       const abi::CallAttrs &attrs) {
  LOOM_RETURN_IF_ERROR(checkArgCount(args, 3, "gather"));
  LOOM_RETURN_IF_ERROR(abi::decodeNoAttrs("gather", attrs));
  const TensorRef &table = args[0], &ids = args[1], &out = args[2];
  LOOM_RETURN_IF_ERROR(checkIdType(ids, "gather: ids"));
  if (table.rank() < 1 || table.dtype != out.dtype)
    return Status::failure(
        "gather: needs a table of rank 1 or more with the result's "
        "element type, got " +
        shapeString(table.shape));
  std::vector<int64_t> shape = ids.shape;
  shape.insert(shape.end(), table.shape.begin() + 1, table.shape.end());
  if (out.shape != shape)
    return Status::failure("gather: result is " + shapeString(out.shape) +
                           ", expected " + shapeString(shape));
  return Status::success();
}

Status checkScatterAddCall(const std::vector<TensorRef> &args,
                           const abi::CallAttrs &attrs) {
  LOOM_RETURN_IF_ERROR(checkArgCount(args, 4, "scatter_add"));
  LOOM_RETURN_IF_ERROR(abi::decodeNoAttrs("scatter_add", attrs));
  const TensorRef &updates = args[0], &ids = args[1], &like = args[2],
                  &out = args[3];
  LOOM_RETURN_IF_ERROR(checkIdType(ids, "scatter_add: ids"));
  for (const TensorRef *t : {&updates, &out})
    LOOM_RETURN_IF_ERROR(checkDType(*t, DType::F32, "scatter_add"));
  if (like.rank() < 1)
    return Status::failure("scatter_add: like must have rank 1 or more");
  std::vector<int64_t> expected = ids.shape;
  expected.insert(expected.end(), like.shape.begin() + 1, like.shape.end());
  if (updates.shape != expected)
    return Status::failure("scatter_add: updates " +
                           shapeString(updates.shape) + " do not match ids " +
                           shapeString(ids.shape) + " and rows of " +
                           shapeString(like.shape));
  if (out.shape != like.shape)
    return Status::failure("scatter_add: result is " + shapeString(out.shape) +
                           ", expected " + shapeString(like.shape));
  return Status::success();
}

Status checkOneHotCall(const std::vector<TensorRef> &args,
                       const abi::CallAttrs &attrs, int64_t &depth) {
  LOOM_RETURN_IF_ERROR(checkArgCount(args, 2, "one_hot"));
  const TensorRef &ids = args[0], &out = args[1];
  LOOM_RETURN_IF_ERROR(checkIdType(ids, "one_hot: ids"));
  ErrorOr<abi::OneHotCall> decoded = abi::OneHotCall::decode(attrs);
  if (!decoded)
    return decoded.status().withContext("one_hot");
  depth = decoded->depth;
  std::vector<int64_t> shape = ids.shape;
  shape.push_back(depth);
  if (out.shape != shape)
    return Status::failure("one_hot: result is " + shapeString(out.shape) +
                           ", expected " + shapeString(shape));
  // The verifier allows float results only; f16 and bf16 are not run.
  if (out.dtype != DType::F32 && out.dtype != DType::F64)
    return Status::failure(std::string("one_hot: unsupported result type ") +
                           dtypeName(out.dtype));
  return Status::success();
}

Status checkPaddingMaskCall(const std::vector<TensorRef> &args,
                            const abi::CallAttrs &attrs, int64_t &pad) {
  LOOM_RETURN_IF_ERROR(checkArgCount(args, 2, "padding_mask"));
  const TensorRef &ids = args[0], &out = args[1];
  LOOM_RETURN_IF_ERROR(checkIdType(ids, "padding_mask: ids"));
  LOOM_RETURN_IF_ERROR(checkDType(out, DType::F32, "padding_mask"));
  ErrorOr<abi::PaddingMaskCall> decoded = abi::PaddingMaskCall::decode(attrs);
  if (!decoded)
    return decoded.status().withContext("padding_mask");
  if (ids.rank() != 2)
    return Status::failure("padding_mask: ids must be [batch, length], got " +
                           shapeString(ids.shape));
  std::vector<int64_t> shape = {ids.shape[0], 1, 1, ids.shape[1]};
  if (out.shape != shape)
    return Status::failure("padding_mask: result is " + shapeString(out.shape) +
                           ", expected " + shapeString(shape));
  pad = decoded->pad;
  return Status::success();
}

/// Decodes the AxisCall of causal_mask or iota into the dim of `like` whose
/// size they take.
static Status decodeAxisDim(const char *kernel, const abi::CallAttrs &attrs,
                            const TensorRef &like, int64_t &dim) {
  ErrorOr<abi::AxisCall> decoded = abi::AxisCall::decode(attrs);
  if (!decoded)
    return decoded.status().withContext(kernel);
  dim = decoded->dim;
  if (dim < 0 || dim >= like.rank())
    return Status::failure(std::string(kernel) + ": dim " +
                           std::to_string(dim) + " is out of range for " +
                           shapeString(like.shape));
  return Status::success();
}

Status checkCausalMaskCall(const std::vector<TensorRef> &args,
                           const abi::CallAttrs &attrs, int64_t &n) {
  LOOM_RETURN_IF_ERROR(checkArgCount(args, 2, "causal_mask"));
  const TensorRef &like = args[0], &out = args[1];
  int64_t dim;
  LOOM_RETURN_IF_ERROR(decodeAxisDim("causal_mask", attrs, like, dim));
  LOOM_RETURN_IF_ERROR(checkDType(out, DType::F32, "causal_mask"));
  n = like.shape[dim];
  if (out.shape != std::vector<int64_t>{n, n})
    return Status::failure("causal_mask: result is " + shapeString(out.shape) +
                           ", expected " + shapeString({n, n}));
  return Status::success();
}

Status checkIotaCall(const std::vector<TensorRef> &args,
                     const abi::CallAttrs &attrs, int64_t &n) {
  LOOM_RETURN_IF_ERROR(checkArgCount(args, 2, "iota"));
  const TensorRef &like = args[0], &out = args[1];
  int64_t dim;
  LOOM_RETURN_IF_ERROR(decodeAxisDim("iota", attrs, like, dim));
  n = like.shape[dim];
  if (out.shape != std::vector<int64_t>{n})
    return Status::failure("iota: result is " + shapeString(out.shape) +
                           ", expected " + shapeString({n}));
  switch (out.dtype) {
  case DType::F32:
  case DType::F64:
  case DType::I32:
  case DType::I64:
    return Status::success();
  default:
    return Status::failure(std::string("iota: unsupported result type ") +
                           dtypeName(out.dtype));
  }
}

Status checkIdInRange(const char *kernel, int64_t id, int64_t rows) {
  if (id >= 0 && id < rows)
    return Status::success();
  return Status::failure(std::string(kernel) + ": id " + std::to_string(id) +
                         " is outside [0, " + std::to_string(rows) + ")");
}

//===-- Losses and GEMMs ----------------------------------------------===//

/// A product's two factors: both f32, or both bf16 (summed in f32).
static Status checkFactors(const char *kernel, const TensorRef &a,
                           const TensorRef &b, DType &factors) {
  bool f32 = a.dtype == DType::F32 && b.dtype == DType::F32;
  bool bf16 = a.dtype == DType::BF16 && b.dtype == DType::BF16;
  if (!f32 && !bf16)
    return Status::failure(std::string(kernel) +
                           ": the factors must be both f32 or both bf16, got " +
                           dtypeName(a.dtype) + " and " + dtypeName(b.dtype));
  factors = a.dtype;
  return Status::success();
}

Status checkLinear(const std::vector<TensorRef> &args, bool hasBias,
                   bool hasResidual, LinearDims &dims) {
  size_t count = 3 + hasBias + hasResidual;
  LOOM_RETURN_IF_ERROR(checkArgCount(args, count, "linear"));
  const TensorRef &x = args[0], &w = args[1], &out = args.back();
  const TensorRef *bias = hasBias ? &args[2] : nullptr;
  const TensorRef *residual = hasResidual ? &args[2 + hasBias] : nullptr;
  LOOM_RETURN_IF_ERROR(checkFactors("linear", x, w, dims.factors));
  for (const TensorRef *t : {bias, residual, &out})
    if (t && t->dtype != DType::F32)
      return Status::failure(
          std::string("linear: bias, residual and result must be f32, got ") +
          dtypeName(t->dtype));

  if (x.rank() < 1 || w.rank() != 2 || w.shape[1] != x.shape.back())
    return Status::failure(
        "linear: needs input [..., K] and weight [N, K], got " +
        shapeString(x.shape) + " and " + shapeString(w.shape));
  int64_t k = w.shape[1], n = w.shape[0];
  std::vector<int64_t> outShape(x.shape.begin(), x.shape.end() - 1);
  outShape.push_back(n);
  if (out.shape != outShape)
    return Status::failure("linear: result is " + shapeString(out.shape) +
                           ", expected " + shapeString(outShape));
  if (bias && bias->shape != std::vector<int64_t>{n})
    return Status::failure("linear: bias must be " + std::to_string(n) +
                           ", got " + shapeString(bias->shape));
  if (residual && residual->shape != outShape)
    return Status::failure("linear: residual must be " + shapeString(outShape) +
                           ", got " + shapeString(residual->shape));
  dims.m = product(x.shape, 0, x.shape.size() - 1);
  dims.n = n;
  dims.k = k;
  dims.outShape = std::move(outShape);
  return Status::success();
}

Status checkMatmul(const std::vector<TensorRef> &args, bool transposeLhs,
                   bool transposeRhs, MatmulDims &dims) {
  bool ta = transposeLhs, tb = transposeRhs;
  const TensorRef &a = args[0], &b = args[1], &out = args[2];
  LOOM_RETURN_IF_ERROR(checkFactors("matmul", a, b, dims.factors));
  if (out.dtype != DType::F32)
    return Status::failure(std::string("matmul: the result must be f32, got ") +
                           dtypeName(out.dtype));
  int64_t ra = a.rank(), rb = b.rank();
  if (ra < 2 || rb < 2)
    return Status::failure("matmul: needs operands of rank 2 or more, got " +
                           shapeString(a.shape) + " and " +
                           shapeString(b.shape));
  int64_t m = a.shape[ta ? ra - 1 : ra - 2], k = a.shape[ta ? ra - 2 : ra - 1];
  int64_t kb = b.shape[tb ? rb - 1 : rb - 2], n = b.shape[tb ? rb - 2 : rb - 1];
  if (k != kb)
    return Status::failure(
        "matmul: contraction sizes differ: lhs " + shapeString(a.shape) +
        " has K=" + std::to_string(k) + " but rhs " + shapeString(b.shape) +
        " has K=" + std::to_string(kb));

  // The broadcast batch shape, with per-operand matrix strides (0 where an
  // operand's batch dim is 1 or missing).
  size_t rank = (ra > rb ? ra : rb) - 2;
  std::vector<int64_t> batch(rank), strideA(rank, 0), strideB(rank, 0);
  int64_t sa = m * k, sb = k * n;
  for (size_t i = rank; i-- > 0;) {
    size_t fromEnd = rank - i;
    int64_t da = fromEnd <= size_t(ra - 2) ? a.shape[ra - 2 - fromEnd] : 1;
    int64_t db = fromEnd <= size_t(rb - 2) ? b.shape[rb - 2 - fromEnd] : 1;
    if (da != db && da != 1 && db != 1)
      return Status::failure(
          "matmul: batch dims do not broadcast: " + shapeString(a.shape) +
          " and " + shapeString(b.shape));
    batch[i] = da > db ? da : db;
    if (da == 0 || db == 0)
      batch[i] = 0;
    strideA[i] = da == 1 ? 0 : sa;
    strideB[i] = db == 1 ? 0 : sb;
    sa *= da;
    sb *= db;
  }
  std::vector<int64_t> outShape = batch;
  outShape.push_back(m);
  outShape.push_back(n);
  if (out.shape != outShape)
    return Status::failure("matmul: result is " + shapeString(out.shape) +
                           ", expected " + shapeString(outShape));
  dims.m = m;
  dims.n = n;
  dims.k = k;
  dims.batch = std::move(batch);
  dims.strideA = std::move(strideA);
  dims.strideB = std::move(strideB);
  dims.outShape = std::move(outShape);
  return Status::success();
}

Status checkCrossEntropy(const TensorRef &logits, const TensorRef &targets,
                         const TensorRef *grad, const TensorRef &out,
                         const std::vector<int64_t> &outShape,
                         const char *kernel) {
  for (const TensorRef *t : {&logits, grad, &out})
    if (t)
      LOOM_RETURN_IF_ERROR(checkDType(*t, DType::F32, kernel));
  LOOM_RETURN_IF_ERROR(checkIdType(targets, kernel));
  std::vector<int64_t> lead = logits.shape;
  if (!lead.empty())
    lead.pop_back();
  if (logits.shape.empty() || lead != targets.shape)
    return Status::failure(
        std::string(kernel) + ": logits " + shapeString(logits.shape) +
        " do not match targets " + shapeString(targets.shape));
  if (grad && grad->shape != targets.shape)
    return Status::failure(
        std::string(kernel) + ": grad " + shapeString(grad->shape) +
        " does not match targets " + shapeString(targets.shape));
  if (out.shape != outShape)
    return Status::failure(std::string(kernel) + ": result is " +
                           shapeString(out.shape) + ", expected " +
                           shapeString(outShape));
  return Status::success();
}

Status targetOutsideClasses(const char *kernel, int64_t target,
                            int64_t classes) {
  return Status::failure(std::string(kernel) + ": target id " +
                         std::to_string(target) + " is outside [0, " +
                         std::to_string(classes) + ")");
}

} // namespace loom::kernels
