//===- LibraryCalls.cpp - The library-kernel calling convention -----------===//

#include "abi/LibraryCalls.h"

#include <algorithm>
#include <cmath>

namespace loom::abi {
namespace {

/// Checks that `attrs` holds exactly `ints` integers and `floats` floats;
/// `layout` names them for the message ("[dim, start, end]").
Status expectCounts(const CallAttrs &attrs, size_t ints, size_t floats,
                    const char *layout) {
  if (attrs.ints.size() == ints && attrs.floats.size() == floats)
    return Status::success();
  return Status::failure("expected " + std::to_string(ints) + " integer and " +
                             std::to_string(floats) + " float attributes " +
                             layout + ", got " +
                             std::to_string(attrs.ints.size()) + " and " +
                             std::to_string(attrs.floats.size()),
                         ErrorCode::Corrupt);
}

Status expectFlag(int64_t value, const char *name) {
  if (value == 0 || value == 1)
    return Status::success();
  return Status::failure(std::string("flag ") + name + " is " +
                             std::to_string(value) + ", not 0 or 1",
                         ErrorCode::Corrupt);
}

Status expectRate(double value, const char *name) {
  if (value >= 0 && value < 1)
    return Status::success();
  return Status::failure(std::string(name) + " " + std::to_string(value) +
                             " is outside [0, 1)",
                         ErrorCode::Corrupt);
}

} // namespace

const std::vector<std::string> &libraryKernelNames() {
  static const std::vector<std::string> names = {
      "attention",  "attention_grad", "broadcast_as",  "causal_mask",
      "concat",     "copy",           "cross_entropy", "cross_entropy_grad",
      "gather",     "iota",           "linear",        "matmul",
      "one_hot",    "padding_mask",   "scatter_add",   "slice",
      "slice_grad", "sum_to",         "transpose"};
  return names;
}

CallAttrs LinearCall::encode() const {
  return {
      {hasBias ? 1 : 0, hasResidual ? 1 : 0, static_cast<int64_t>(activation)},
      {}};
}

ErrorOr<LinearCall> LinearCall::decode(const CallAttrs &attrs) {
  LOOM_RETURN_IF_ERROR(
      expectCounts(attrs, 3, 0, "[hasBias, hasResidual, activation]"));
  LOOM_RETURN_IF_ERROR(expectFlag(attrs.ints[0], "hasBias"));
  LOOM_RETURN_IF_ERROR(expectFlag(attrs.ints[1], "hasResidual"));
  if (attrs.ints[2] < 0 || attrs.ints[2] > 2)
    return Status::failure("unknown activation " +
                               std::to_string(attrs.ints[2]),
                           ErrorCode::Corrupt);
  LinearCall call;
  call.hasBias = attrs.ints[0];
  call.hasResidual = attrs.ints[1];
  call.activation = static_cast<Activation>(attrs.ints[2]);
  return call;
}

CallAttrs MatmulCall::encode() const {
  return {{transposeLhs ? 1 : 0, transposeRhs ? 1 : 0}, {}};
}

ErrorOr<MatmulCall> MatmulCall::decode(const CallAttrs &attrs) {
  LOOM_RETURN_IF_ERROR(
      expectCounts(attrs, 2, 0, "[transposeLhs, transposeRhs]"));
  LOOM_RETURN_IF_ERROR(expectFlag(attrs.ints[0], "transposeLhs"));
  LOOM_RETURN_IF_ERROR(expectFlag(attrs.ints[1], "transposeRhs"));
  MatmulCall call;
  call.transposeLhs = attrs.ints[0];
  call.transposeRhs = attrs.ints[1];
  return call;
}

CallAttrs TransposeCall::encode() const { return {perm, {}}; }

ErrorOr<TransposeCall> TransposeCall::decode(const CallAttrs &attrs) {
  if (!attrs.floats.empty())
    return Status::failure("transpose takes no float attributes",
                           ErrorCode::Corrupt);
  std::vector<int64_t> sorted = attrs.ints;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int64_t>(i))
      return Status::failure("the permutation is not one of [0, " +
                                 std::to_string(sorted.size()) + ")",
                             ErrorCode::Corrupt);
  return TransposeCall{attrs.ints};
}

CallAttrs SliceCall::encode() const { return {{dim, start, end}, {}}; }

ErrorOr<SliceCall> SliceCall::decode(const CallAttrs &attrs) {
  LOOM_RETURN_IF_ERROR(expectCounts(attrs, 3, 0, "[dim, start, end]"));
  if (attrs.ints[0] < 0)
    return Status::failure("negative slice dim " +
                               std::to_string(attrs.ints[0]),
                           ErrorCode::Corrupt);
  return SliceCall{attrs.ints[0], attrs.ints[1], attrs.ints[2]};
}

CallAttrs ConcatCall::encode() const { return {{dim}, {}}; }

ErrorOr<ConcatCall> ConcatCall::decode(const CallAttrs &attrs) {
  LOOM_RETURN_IF_ERROR(expectCounts(attrs, 1, 0, "[dim]"));
  return ConcatCall{attrs.ints[0]};
}

CallAttrs OneHotCall::encode() const { return {{depth}, {}}; }

ErrorOr<OneHotCall> OneHotCall::decode(const CallAttrs &attrs) {
  LOOM_RETURN_IF_ERROR(expectCounts(attrs, 1, 0, "[depth]"));
  if (attrs.ints[0] <= 0)
    return Status::failure("one_hot depth " + std::to_string(attrs.ints[0]) +
                               " is not positive",
                           ErrorCode::Corrupt);
  return OneHotCall{attrs.ints[0]};
}

CallAttrs PaddingMaskCall::encode() const { return {{pad}, {}}; }

ErrorOr<PaddingMaskCall> PaddingMaskCall::decode(const CallAttrs &attrs) {
  LOOM_RETURN_IF_ERROR(expectCounts(attrs, 1, 0, "[pad]"));
  return PaddingMaskCall{attrs.ints[0]};
}

CallAttrs AxisCall::encode() const { return {{dim}, {}}; }

ErrorOr<AxisCall> AxisCall::decode(const CallAttrs &attrs) {
  LOOM_RETURN_IF_ERROR(expectCounts(attrs, 1, 0, "[dim]"));
  return AxisCall{attrs.ints[0]};
}

CallAttrs CrossEntropyCall::encode() const {
  return {{ignoreIndex}, {labelSmoothing}};
}

ErrorOr<CrossEntropyCall> CrossEntropyCall::decode(const CallAttrs &attrs) {
  LOOM_RETURN_IF_ERROR(
      expectCounts(attrs, 1, 1, "[ignoreIndex] [labelSmoothing]"));
  LOOM_RETURN_IF_ERROR(expectRate(attrs.floats[0], "label smoothing"));
  return CrossEntropyCall{attrs.ints[0], attrs.floats[0]};
}

CallAttrs AttentionCall::encode() const {
  return {{hasMask ? 1 : 0, hasSeed ? 1 : 0, causal ? 1 : 0,
           static_cast<int64_t>(dropoutOffset)},
          {scale, dropoutRate}};
}

ErrorOr<AttentionCall> AttentionCall::decode(const CallAttrs &attrs) {
  LOOM_RETURN_IF_ERROR(expectCounts(
      attrs, 4, 2,
      "[hasMask, hasSeed, causal, dropoutOffset] [scale, dropoutRate]"));
  LOOM_RETURN_IF_ERROR(expectFlag(attrs.ints[0], "hasMask"));
  LOOM_RETURN_IF_ERROR(expectFlag(attrs.ints[1], "hasSeed"));
  LOOM_RETURN_IF_ERROR(expectFlag(attrs.ints[2], "causal"));
  LOOM_RETURN_IF_ERROR(expectRate(attrs.floats[1], "dropout rate"));
  if (!std::isfinite(attrs.floats[0]))
    return Status::failure("attention scale is not finite", ErrorCode::Corrupt);
  AttentionCall call;
  call.hasMask = attrs.ints[0];
  call.hasSeed = attrs.ints[1];
  call.causal = attrs.ints[2];
  call.dropoutOffset = static_cast<uint64_t>(attrs.ints[3]);
  call.scale = attrs.floats[0];
  call.dropoutRate = attrs.floats[1];
  return call;
}

Status decodeNoAttrs(const char *kernel, const CallAttrs &attrs) {
  if (attrs.ints.empty() && attrs.floats.empty())
    return Status::success();
  return Status::failure(std::string(kernel) + " takes no attributes, got " +
                             std::to_string(attrs.ints.size()) + " and " +
                             std::to_string(attrs.floats.size()),
                         ErrorCode::Corrupt);
}

} // namespace loom::abi
