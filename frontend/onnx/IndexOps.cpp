//===- IndexOps.cpp - ONNX Gather, Concat, Slice and Split ----------------===//
//
// The ops that pick, join and cut tensors. Each works on the tensors of the
// graph, on constants (folded here) and on the vectors of sizes of shape
// arithmetic: Gather picks a dim out of a Shape, Concat joins the sizes of a
// reshape's target, Slice cuts a Shape or, to a run-time end, a table to a
// sequence's length.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/OnnxImport.h"
#include "frontend/onnx/OnnxImporter.h"

#include <numeric>

using namespace loom;
using namespace loom::onnx_import;
using llvm::Error;
using llvm::Expected;

namespace {

/// A known value as a flat list of sizes with its rank (0 or 1).
struct KnownVector {
  std::vector<SymbolicSize> sizes;
  bool scalar = false;
  int32_t onnxType = onnx::TensorProto::INT64;
};

/// Input `i` as a rank-0 or rank-1 known integer value, or nothing.
std::optional<KnownVector> knownVector(NodeContext &ctx, int i) {
  if (!ctx.hasInput(i))
    return std::nullopt;
  const ImportedValue &v = ctx.input(i);
  KnownVector out;
  out.onnxType = v.onnxType ? v.onnxType : onnx::TensorProto::INT64;
  if (v.sizes) {
    out.sizes = *v.sizes;
    out.scalar = v.sizesAreScalar;
    return out;
  }
  if (v.constant && v.constant->rank() <= 1 &&
      (v.constant->kind == DType::I64 || v.constant->kind == DType::I32)) {
    for (double x : v.constant->data)
      out.sizes.push_back(SymbolicSize::of(toInt64(x)));
    out.scalar = v.constant->rank() == 0;
    return out;
  }
  return std::nullopt;
}

//===-- Gather ------------------------------------------------------------===//

/// Gather on a constant of any rank along `axis` with constant `ids`.
std::optional<HostTensor> foldGather(const HostTensor &data,
                                     const HostTensor &ids, int64_t axis) {
  int64_t n = data.shape[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= data.shape[d];
  for (int64_t d = axis + 1; d < data.rank(); ++d)
    inner *= data.shape[d];
  std::vector<int64_t> shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), ids.shape.begin(), ids.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  HostTensor out(shape, data.kind);
  int64_t k = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (double idv : ids.data) {
      int64_t id = toInt64(idv);
      if (id < 0)
        id += n;
      if (id < 0 || id >= n)
        return std::nullopt;
      for (int64_t i = 0; i < inner; ++i)
        out.data[k++] = data.data[(o * n + id) * inner + i];
    }
  return out;
}

/// The elements of `table` at `ids` along `axis`, ONNX Gather's result:
/// `ids`' dims take the place of that axis. loom.gather picks rows, so the
/// axis is moved to the front and the result's dims put back in order.
Expected<Tensor> gatherAlongAxis(NodeContext &ctx, Tensor table, int64_t axis,
                                 Tensor ids) {
  int64_t rank = table.rank();
  if (axis != 0) {
    std::vector<int64_t> toFront = {axis};
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis)
        toFront.push_back(d);
    Expected<Tensor> moved = ctx.create<TransposeOp>(table.value(), toFront);
    if (!moved)
      return moved.takeError();
    table = *moved;
  }
  Expected<Tensor> rows = ctx.create<GatherOp>(table.value(), ids.value());
  if (!rows || axis == 0)
    return rows;
  // rows: [ids..., d0 .. d(axis-1), d(axis+1) ..]; the ids go after d(axis-1).
  int64_t idRank = ids.rank();
  std::vector<int64_t> back;
  for (int64_t d = 0; d < axis; ++d)
    back.push_back(idRank + d);
  for (int64_t d = 0; d < idRank; ++d)
    back.push_back(d);
  for (int64_t d = idRank + axis; d < rows->rank(); ++d)
    back.push_back(d);
  return ctx.create<TransposeOp>(rows->value(), back);
}

Error convertGather(NodeContext &ctx) {
  if (ctx.numInputs() != 2)
    return ctx.error("takes 2 inputs");
  const ImportedValue &data = ctx.input(0), &ids = ctx.input(1);
  int64_t axisAttr = ctx.intAttr("axis", 0);
  if (data.constant && ids.constant) {
    int64_t axis = countFromEnd(axisAttr, data.constant->rank());
    if (axis < 0 || axis >= data.constant->rank())
      return ctx.error("axis " + std::to_string(axisAttr) + " out of range");
    auto out = foldGather(*data.constant, *ids.constant, axis);
    if (!out)
      return ctx.error("an index out of range");
    ctx.setOutput(0, constantValue(std::move(*out)));
    return Error::success();
  }
  if (data.sizes && ids.constant) {
    if (data.sizesAreScalar || ids.constant->rank() > 1 ||
        countFromEnd(axisAttr, 1) != 0)
      return ctx.error("gathers from sizes other than along one vector");
    std::vector<SymbolicSize> out;
    int64_t n = data.sizes->size();
    for (double idv : ids.constant->data) {
      int64_t id = toInt64(idv);
      if (id < 0)
        id += n;
      if (id < 0 || id >= n)
        return ctx.error("an index out of range");
      out.push_back((*data.sizes)[id]);
    }
    ctx.setOutput(0, sizesValue(std::move(out), ids.constant->rank() == 0,
                                data.onnxType));
    return Error::success();
  }
  Expected<Tensor> table = ctx.tensor(0);
  if (!table)
    return table.takeError();
  int64_t rank = table->rank();
  int64_t axis = countFromEnd(axisAttr, rank);
  if (axis < 0 || axis >= rank)
    return ctx.error("axis " + std::to_string(axisAttr) + " out of range");
  // Negative constant indices count from the end of a static dim.
  if (ids.constant) {
    for (double id : ids.constant->data)
      if (id < 0 && table->dim(axis) == kDyn)
        return ctx.error("a negative index into a dynamic dim");
    if (table->dim(axis) != kDyn && ids.constant->rank() == 0) {
      // One index: a slice without the dim.
      int64_t id = toInt64(ids.constant->data[0]);
      if (id < 0)
        id += table->dim(axis);
      if (id < 0 || id >= table->dim(axis))
        return ctx.error("index " + std::to_string(id) + " out of range");
      Expected<Tensor> one = ctx.create<SliceOp>(
          table->value(), axis, id, id + 1 == table->dim(axis) ? 0 : id + 1);
      if (!one)
        return one.takeError();
      std::vector<SymbolicSize> target = sizesOf(*one);
      std::vector<SymbolicSize> without = target;
      without.erase(without.begin() + axis);
      // Sizes at and past the axis move one index down.
      Expected<Tensor> out = reshapeTo(ctx, *one, without);
      if (!out)
        return out.takeError();
      ctx.setOutput(0, *out);
      return Error::success();
    }
  }
  HostTensor fixedIds;
  Expected<Tensor> idTensor = [&]() -> Expected<Tensor> {
    if (ids.constant) {
      fixedIds = *ids.constant;
      for (double &id : fixedIds.data)
        if (id < 0)
          id += double(table->dim(axis));
      return ctx.constantTensor(fixedIds);
    }
    return ctx.tensor(1);
  }();
  if (!idTensor)
    return idTensor.takeError();
  if (!ids.constant) {
    // Run-time ids may count from the end: ids < 0 ? ids + n : ids, for a
    // static n (loom.gather takes ids in [0, n)).
    int64_t n = table->dim(axis);
    if (n == kDyn)
      return ctx.error("indices known only at run time into a dynamic dim "
                       "(which may be negative)");
    Expected<DType> idKind = dtypeOfType(idTensor->elementType());
    if (!idKind)
      return ctx.error(llvm::toString(idKind.takeError()));
    Expected<Tensor> zero = ctx.constantTensor(HostTensor::scalar(0, *idKind));
    Expected<Tensor> size =
        ctx.constantTensor(HostTensor::scalar(double(n), *idKind));
    if (!zero || !size)
      return zero ? size.takeError() : zero.takeError();
    Expected<Tensor> negative = ctx.create<CompareOp>(
        ComparePredicate::lt, idTensor->value(), zero->value());
    if (!negative)
      return negative.takeError();
    Expected<Tensor> wrapped =
        ctx.create<AddOp>(idTensor->value(), size->value());
    if (!wrapped)
      return wrapped.takeError();
    idTensor = ctx.create<SelectOp>(negative->value(), wrapped->value(),
                                    idTensor->value());
    if (!idTensor)
      return idTensor.takeError();
  }
  Expected<Tensor> out = gatherAlongAxis(ctx, *table, axis, *idTensor);
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

//===-- Concat, Slice -----------------------------------------------------===//

Error convertConcat(NodeContext &ctx) {
  int64_t axisAttr = ctx.intAttr("axis", 0);
  bool allKnown = ctx.numInputs() > 0;
  for (int i = 0; i < ctx.numInputs(); ++i)
    allKnown &= bool(knownVector(ctx, i)) && !knownVector(ctx, i)->scalar;
  if (allKnown) {
    std::vector<SymbolicSize> out;
    for (int i = 0; i < ctx.numInputs(); ++i) {
      std::optional<KnownVector> v = knownVector(ctx, i);
      out.insert(out.end(), v->sizes.begin(), v->sizes.end());
    }
    ctx.setOutput(
        0, sizesValue(std::move(out), false, knownVector(ctx, 0)->onnxType));
    return Error::success();
  }
  std::vector<mlir::Value> inputs;
  int64_t rank = -1;
  for (int i = 0; i < ctx.numInputs(); ++i) {
    Expected<Tensor> t = ctx.tensor(i);
    if (!t)
      return t.takeError();
    rank = t->rank();
    inputs.push_back(t->value());
  }
  if (inputs.empty())
    return ctx.error("has no inputs");
  int64_t axis = countFromEnd(axisAttr, rank);
  if (axis < 0 || axis >= rank)
    return ctx.error("axis " + std::to_string(axisAttr) + " out of range");
  Expected<Tensor> out = ctx.create<ConcatOp>(mlir::ValueRange(inputs), axis);
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

/// Elements [0, n) of `x` along `axis`, n a dim of another tensor known
/// only at run time (a positional-encoding table cut to the sequence's
/// length): the rows at positions loom.iota gives, gathered.
Expected<Tensor> runTimePrefix(NodeContext &ctx, Tensor x, int64_t axis,
                               int64_t start, const SymbolicSize &end) {
  if (start != 0 || end.factor != 1 || end.dims.size() != 1)
    return ctx.error("a slice to a run-time end other than the first n "
                     "elements, for one run-time size n");
  auto [of, dim] = end.dims[0];
  Tensor like(of, &ctx.graph());
  Tensor positions(
      ctx.builder()
          .create<IotaOp>(ctx.graph().location(),
                          tensorOf({like.dim(dim)}, ctx.builder().getI64Type()),
                          of, dim)
          .getResult(),
      &ctx.graph());
  return gatherAlongAxis(ctx, x, axis, positions);
}

Error convertSlice(NodeContext &ctx) {
  std::vector<int64_t> starts, ends, axes, steps;
  // An end known only at run time (a prefix as long as a sequence):
  // `runTimeEnds[i]` holds it and ends[i] is unused.
  std::vector<std::optional<SymbolicSize>> runTimeEnds;
  if (ctx.opsetVersion() < 10) {
    starts = ctx.intsAttr("starts").value_or(std::vector<int64_t>());
    ends = ctx.intsAttr("ends").value_or(std::vector<int64_t>());
    axes = ctx.intsAttr("axes").value_or(std::vector<int64_t>());
  } else {
    auto s = ctx.constantInts(1, "starts");
    if (!s)
      return s.takeError();
    auto e = ctx.sizes(2, "ends");
    if (!e)
      return e.takeError();
    starts = *s;
    for (const SymbolicSize &end : *e) {
      ends.push_back(end.isConstant() ? end.factor : 0);
      runTimeEnds.push_back(end.isConstant() ? std::nullopt
                                             : std::optional(end));
    }
    if (ctx.hasInput(3)) {
      auto a = ctx.constantInts(3, "axes");
      if (!a)
        return a.takeError();
      axes = *a;
    }
    if (ctx.hasInput(4)) {
      auto st = ctx.constantInts(4, "steps");
      if (!st)
        return st.takeError();
      steps = *st;
    }
  }
  if (starts.size() != ends.size() ||
      (!axes.empty() && axes.size() != starts.size()) ||
      (!steps.empty() && steps.size() != starts.size()))
    return ctx.error("starts, ends, axes and steps of different lengths");
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t step : steps)
    if (step != 1)
      return ctx.unsupportedAttribute("steps",
                                      std::to_string(step) + " (only 1 is)");
  // A vector of sizes slices on the host.
  if (std::optional<KnownVector> v = knownVector(ctx, 0);
      v && !v->scalar && ctx.input(0).sizes) {
    if (axes.size() != 1 || countFromEnd(axes[0], 1) != 0)
      return ctx.error("slices sizes along another axis than 0");
    if (!runTimeEnds.empty() && runTimeEnds[0])
      return ctx.error("slices sizes up to a size known only at run time");
    int64_t n = v->sizes.size();
    int64_t s = starts[0] < 0 ? std::max<int64_t>(0, starts[0] + n)
                              : std::min(starts[0], n);
    int64_t e =
        ends[0] < 0 ? std::max<int64_t>(0, ends[0] + n) : std::min(ends[0], n);
    std::vector<SymbolicSize> out(v->sizes.begin() + s,
                                  v->sizes.begin() + std::max(s, e));
    ctx.setOutput(0, sizesValue(std::move(out), false, v->onnxType));
    return Error::success();
  }
  Expected<Tensor> x = ctx.tensor(0);
  if (!x)
    return x.takeError();
  Tensor cur = *x;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = countFromEnd(axes[i], cur.rank());
    if (axis < 0 || axis >= cur.rank())
      return ctx.error("axis " + std::to_string(axes[i]) + " out of range");
    if (i < runTimeEnds.size() && runTimeEnds[i]) {
      Expected<Tensor> prefix =
          runTimePrefix(ctx, cur, axis, starts[i], *runTimeEnds[i]);
      if (!prefix)
        return prefix.takeError();
      cur = *prefix;
      continue;
    }
    int64_t size = cur.dim(axis);
    int64_t s = starts[i], e = ends[i];
    // ONNX clamps to the dim; loom.slice counts negative starts and ends
    // <= 0 from the end, so the end itself is 0.
    if (size != kDyn) {
      s = s < 0 ? std::max<int64_t>(0, s + size) : std::min(s, size);
      e = e < 0 ? std::max<int64_t>(0, e + size) : std::min(e, size);
      if (e <= s)
        return ctx.error("an empty slice of axis " + std::to_string(axis));
      if (s == 0 && e == size)
        continue;
      if (e == size)
        e = 0;
    } else {
      if (e >= (int64_t(1) << 31))
        e = 0;
      else if (e == 0 || (s >= 0 && e > 0 && e <= s) ||
               (s < 0 && e < 0 && e <= s))
        return ctx.error("an empty slice of axis " + std::to_string(axis));
      if (s < 0 && e > 0)
        return ctx.error("a slice of a dynamic dim from its end to a "
                         "position counted from its start");
    }
    Expected<Tensor> next = ctx.create<SliceOp>(cur.value(), axis, s, e);
    if (!next)
      return next.takeError();
    cur = *next;
  }
  ctx.setOutput(0, cur);
  return Error::success();
}

//===-- Split -------------------------------------------------------------===//

/// Split: consecutive loom.slices along `axis`, sized by the `split` input
/// (the attribute before opset 13), else equal parts (the last smaller when
/// the dim does not divide, as opset 18's num_outputs says).
Error convertSplit(NodeContext &ctx) {
  Expected<Tensor> x = ctx.tensor(0);
  if (!x)
    return x.takeError();
  int64_t axis = countFromEnd(ctx.intAttr("axis", 0), x->rank());
  if (axis < 0 || axis >= x->rank())
    return ctx.error("axis " + std::to_string(ctx.intAttr("axis", 0)) +
                     " out of range for rank " + std::to_string(x->rank()));
  int64_t outputs = ctx.proto().output_size();
  if (outputs < 1)
    return ctx.error("no outputs");
  std::vector<int64_t> parts;
  if (ctx.opsetVersion() < 13) {
    parts = ctx.intsAttr("split").value_or(std::vector<int64_t>());
  } else if (ctx.hasInput(1)) {
    Expected<std::vector<int64_t>> given = ctx.constantInts(1, "split");
    if (!given)
      return given.takeError();
    parts = *given;
  }
  int64_t size = x->dim(axis);
  if (parts.empty()) {
    if (size == kDyn)
      return ctx.error("equal parts of a dim known only at run time (give "
                       "the sizes as the split input)");
    int64_t piece = (size + outputs - 1) / outputs;
    for (int64_t i = 0, left = size; i < outputs; ++i, left -= piece)
      parts.push_back(std::min(piece, left));
  }
  if (int64_t(parts.size()) != outputs)
    return ctx.error(std::to_string(parts.size()) + " sizes for " +
                     std::to_string(outputs) + " outputs");
  int64_t total = 0;
  for (int64_t p : parts) {
    if (p <= 0)
      return ctx.error("a part of size " + std::to_string(p) +
                       " (each must be at least 1)");
    if (p > (int64_t(1) << 40) || total > (int64_t(1) << 40))
      return ctx.error("part sizes past any tensor's");
    total += p;
  }
  if (size != kDyn && total != size)
    return ctx.error("parts that sum to " + std::to_string(total) +
                     ", not to dim " + std::to_string(axis) + "'s " +
                     std::to_string(size));
  int64_t start = 0;
  for (int64_t i = 0; i < outputs; ++i) {
    int64_t end = start + parts[i];
    Tensor piece = *x;
    if (parts.size() > 1) {
      // loom.slice's end 0 is the end itself: the last part ends there.
      Expected<Tensor> sliced = ctx.create<SliceOp>(
          x->value(), axis, start, i + 1 == outputs ? 0 : end);
      if (!sliced)
        return sliced.takeError();
      piece = *sliced;
    }
    ctx.setOutput(i, piece);
    start = end;
  }
  return Error::success();
}

} // namespace

void loom::onnx_import::addIndexConverters(llvm::StringMap<Converter> &c) {
  c["Gather"] = convertGather;
  c["Concat"] = convertConcat;
  c["Slice"] = convertSlice;
  c["Split"] = convertSplit;
}
