//===- MaskOps.cpp - ONNX Trilu -------------------------------------------===//
//
// Trilu keeps a triangle of the last two dims and zeroes the rest. PyTorch
// translators build their causal mask with it at run time:
// nn.Transformer.generate_square_subsequent_mask(n) exports as
//
//   %full = ConstantOfShape(Concat(n, n)) {value = -inf}
//   %mask = Trilu(%full, 1) {upper = 1}        // -inf above the diagonal
//
// On a constant it folds. Otherwise it compares positions, which the
// importer knows only at run time:
//
//   %j = loom.iota %x {dim = last}            // [m]
//   %i = loom.iota %x {dim = last - 1}        // [n], expanded to [n, 1]
//   %keep = loom.compare ge|le, %j - %i, k    // upper: j - i >= k
//   %out = loom.select %keep, %x, 0
//
// That form is what loom-fuse-attention recognizes as the causal flag when
// %x is a square filled with a large negative number and k is 1.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/OnnxImport.h"
#include "frontend/onnx/OnnxImporter.h"

using namespace loom;
using namespace loom::onnx_import;
using llvm::Error;
using llvm::Expected;

namespace {

Error convertTrilu(NodeContext &ctx) {
  int64_t upper = ctx.intAttr("upper", 1);
  if (upper != 0 && upper != 1)
    return ctx.unsupportedAttribute("upper", std::to_string(upper) +
                                                 " (0 or 1)");
  int64_t k = 0;
  if (ctx.hasInput(1)) {
    Expected<std::vector<int64_t>> given = ctx.constantInts(1, "k");
    if (!given)
      return given.takeError();
    if (given->size() != 1)
      return ctx.error("k of " + std::to_string(given->size()) +
                       " elements (it is a scalar)");
    k = (*given)[0];
  }
  auto kept = [&](int64_t row, int64_t col) {
    return upper ? col - row >= k : col - row <= k;
  };
  const ImportedValue &in = ctx.input(0);
  if (in.constant) {
    HostTensor out = *in.constant;
    int64_t rank = out.rank();
    if (rank < 2)
      return ctx.error("an input of rank " + std::to_string(rank) +
                       " (it needs at least 2)");
    int64_t rows = out.shape[rank - 2], cols = out.shape[rank - 1];
    for (int64_t e = 0; e < out.numel(); ++e)
      if (!kept((e / cols) % rows, e % cols))
        out.data[e] = 0;
    ctx.setOutput(0, constantValue(std::move(out)));
    return Error::success();
  }
  Expected<Tensor> x = ctx.tensor(0);
  if (!x)
    return x.takeError();
  int64_t rank = x->rank();
  if (rank < 2)
    return ctx.error("an input of rank " + std::to_string(rank) +
                     " (it needs at least 2)");
  // k past any dim keeps all or nothing; saturate so that j - i - k cannot
  // overflow.
  k = std::clamp<int64_t>(k, -(int64_t(1) << 40), int64_t(1) << 40);
  Tensor cols = iotaAlong(ctx, x->value(), rank - 1, DType::I64);
  Tensor rows = iotaAlong(ctx, x->value(), rank - 2, DType::I64);
  Expected<Tensor> column =
      ctx.create<ExpandDimsOp>(rows.value(), llvm::ArrayRef<int64_t>{1});
  if (!column)
    return column.takeError();
  Expected<Tensor> offset = ctx.create<SubOp>(cols.value(), column->value());
  if (!offset)
    return offset.takeError();
  Expected<Tensor> bound = ctx.constantTensor(HostTensor::scalar(k, DType::I64));
  if (!bound)
    return bound.takeError();
  Expected<Tensor> keep = ctx.create<CompareOp>(
      upper ? ComparePredicate::ge : ComparePredicate::le, offset->value(),
      bound->value());
  if (!keep)
    return keep.takeError();
  Expected<DType> kind = dtypeOfType(x->elementType());
  if (!kind)
    return ctx.error(llvm::toString(kind.takeError()));
  Expected<Tensor> zero = ctx.constantTensor(HostTensor::scalar(0, *kind));
  if (!zero)
    return zero.takeError();
  Expected<Tensor> out =
      ctx.create<SelectOp>(keep->value(), x->value(), zero->value());
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

} // namespace

void loom::onnx_import::addMaskConverters(llvm::StringMap<Converter> &c) {
  c["Trilu"] = convertTrilu;
}
