//===- LibraryCalls.cpp - The library-kernel calling convention -----------===//

#include "abi/LibraryCalls.h"

#include <algorithm>
#include <cmath>
#include <cstring>

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
           static_cast<int64_t>(dropoutOffset), keysPositionMajor ? 1 : 0},
          {scale, dropoutRate}};
}

ErrorOr<AttentionCall> AttentionCall::decode(const CallAttrs &attrs) {
  LOOM_RETURN_IF_ERROR(expectCounts(attrs, 5, 2,
                                    "[hasMask, hasSeed, causal, dropoutOffset, "
                                    "keysPositionMajor] [scale, dropoutRate]"));
  LOOM_RETURN_IF_ERROR(expectFlag(attrs.ints[0], "hasMask"));
  LOOM_RETURN_IF_ERROR(expectFlag(attrs.ints[1], "hasSeed"));
  LOOM_RETURN_IF_ERROR(expectFlag(attrs.ints[2], "causal"));
  LOOM_RETURN_IF_ERROR(expectFlag(attrs.ints[4], "keysPositionMajor"));
  LOOM_RETURN_IF_ERROR(expectRate(attrs.floats[1], "dropout rate"));
  if (!std::isfinite(attrs.floats[0]))
    return Status::failure("attention scale is not finite", ErrorCode::Corrupt);
  AttentionCall call;
  call.hasMask = attrs.ints[0];
  call.hasSeed = attrs.ints[1];
  call.causal = attrs.ints[2];
  call.dropoutOffset = static_cast<uint64_t>(attrs.ints[3]);
  call.keysPositionMajor = attrs.ints[4];
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

namespace loom::abi {

Status checkLibraryAttrs(std::string_view kernel, const CallAttrs &attrs) {
  auto status = [](const auto &decoded) {
    return decoded ? Status::success() : decoded.status();
  };
  if (kernel == "linear")
    return status(LinearCall::decode(attrs));
  if (kernel == "matmul")
    return status(MatmulCall::decode(attrs));
  if (kernel == "transpose")
    return status(TransposeCall::decode(attrs));
  if (kernel == "slice" || kernel == "slice_grad")
    return status(SliceCall::decode(attrs));
  if (kernel == "concat")
    return status(ConcatCall::decode(attrs));
  if (kernel == "one_hot")
    return status(OneHotCall::decode(attrs));
  if (kernel == "padding_mask")
    return status(PaddingMaskCall::decode(attrs));
  if (kernel == "causal_mask" || kernel == "iota")
    return status(AxisCall::decode(attrs));
  if (kernel == "cross_entropy" || kernel == "cross_entropy_grad")
    return status(CrossEntropyCall::decode(attrs));
  if (kernel == "attention" || kernel == "attention_grad")
    return status(AttentionCall::decode(attrs));
  const LibrarySignature *signature = librarySignature(kernel);
  if (!signature)
    return Status::success();
  return decodeNoAttrs(signature->kernel, attrs);
}

const std::vector<LibrarySignature> &librarySignatures() {
  constexpr DTypeSet kFloats = dtypeBit(DType::F32) | dtypeBit(DType::F64);
  constexpr DTypeSet kIota = kFloats | kIdDTypes;
  // A product's factors: f32, or bf16 summed in f32 (mixed precision; a
  // decoder's caches held in bf16 as attention's keys and values).
  constexpr DTypeSet kFactors = kF32Only | dtypeBit(DType::BF16);
  // {name, dtypes, minRank, maxRank, written, count, flag, mayShare}
  auto in = [](const char *name, DTypeSet dtypes = kAnyDType, int minRank = 0,
               int maxRank = kAnyRank) {
    return LibraryArg{name, dtypes, minRank, maxRank};
  };
  auto out = [](const char *name, DTypeSet dtypes = kAnyDType, int minRank = 0,
                int maxRank = kAnyRank) {
    LibraryArg arg{name, dtypes, minRank, maxRank};
    arg.written = true;
    return arg;
  };
  auto flagged = [](LibraryArg arg, int flag) {
    arg.count = ArgCount::Flagged;
    arg.flag = flag;
    return arg;
  };
  auto counted = [](LibraryArg arg, ArgCount count) {
    arg.count = count;
    return arg;
  };
  auto shared = [](LibraryArg arg) {
    arg.mayShareWithResult = true;
    return arg;
  };
  // The ranks are those each kernel refuses below or above; flags index
  // the attribute struct's integers (LinearCall: hasBias, hasResidual;
  // AttentionCall: hasMask, hasSeed).
  static const std::vector<LibrarySignature> signatures = {
      {"attention",
       {in("q", kF32Only, 2), in("k", kFactors, 2), in("v", kFactors, 2),
        flagged(in("mask", kF32Only), 0),
        flagged(in("seed", dtypeBit(DType::I64)), 1), out("out", kF32Only, 2),
        out("lse", kF32Only, 1)}},
      {"attention_grad",
       {in("q", kF32Only, 2), in("k", kF32Only, 2), in("v", kF32Only, 2),
        in("out", kF32Only, 2), in("lse", kF32Only, 1), in("dout", kF32Only, 2),
        flagged(in("mask", kF32Only), 0),
        flagged(in("seed", dtypeBit(DType::I64)), 1), out("dq", kF32Only, 2),
        out("dk", kF32Only, 2), out("dv", kF32Only, 2)}},
      {"broadcast_as", {in("in"), in("like"), out("out")}},
      {"causal_mask", {in("like", kAnyDType, 1), out("out", kF32Only, 2, 2)}},
      {"concat",
       {counted(in("inputs", kAnyDType, 1), ArgCount::Run),
        out("out", kAnyDType, 1)}},
      {"copy",
       {shared(in("in")), counted(in("like"), ArgCount::Optional), out("out")}},
      {"cross_entropy",
       {in("logits", kF32Only, 1), in("targets", kIdDTypes),
        out("out", kF32Only)}},
      {"cross_entropy_grad",
       {shared(in("logits", kF32Only, 1)), in("targets", kIdDTypes),
        in("dloss", kF32Only), out("out", kF32Only, 1)}},
      {"gather", {in("table", kAnyDType, 1), in("ids", kIdDTypes), out("out")}},
      {"iota", {in("like", kAnyDType, 1), out("out", kIota, 1, 1)}},
      {"linear",
       {in("x", kFactors, 1), in("weight", kFactors, 2, 2),
        flagged(in("bias", kF32Only, 1, 1), 0),
        flagged(in("residual", kF32Only, 1), 1), out("out", kF32Only, 1)}},
      {"matmul",
       {in("lhs", kFactors, 2), in("rhs", kFactors, 2),
        out("out", kF32Only, 2)}},
      {"one_hot", {in("ids", kIdDTypes), out("out", kFloats, 1)}},
      {"padding_mask",
       {in("ids", kIdDTypes, 2, 2), out("out", kF32Only, 4, 4)}},
      {"scatter_add",
       {in("grad", kF32Only), in("ids", kIdDTypes), in("like", kAnyDType, 1),
        out("out", kF32Only, 1)}},
      {"slice", {in("in", kAnyDType, 1), out("out", kAnyDType, 1)}},
      {"slice_grad",
       {in("grad", kAnyDType, 1), in("like", kAnyDType, 1),
        out("out", kAnyDType, 1)}},
      {"sum_to", {in("in", kF32Only), in("like"), out("out", kF32Only)}},
      {"transpose", {in("in"), out("out")}},
  };
  return signatures;
}

const LibrarySignature *librarySignature(std::string_view kernel) {
  const std::vector<LibrarySignature> &all = librarySignatures();
  auto it = std::lower_bound(all.begin(), all.end(), kernel,
                             [](const LibrarySignature &s, std::string_view k) {
                               return std::string_view(s.kernel) < k;
                             });
  return it != all.end() && kernel == it->kernel ? &*it : nullptr;
}

ErrorOr<std::vector<const LibraryArg *>>
libraryCallArgs(const LibrarySignature &signature, const CallAttrs &attrs,
                size_t numArgs) {
  // Fixed and flagged tensors first; whatever is left is the variable one's.
  size_t fixed = 0;
  const LibraryArg *variable = nullptr;
  for (const LibraryArg &arg : signature.args) {
    switch (arg.count) {
    case ArgCount::One:
      ++fixed;
      break;
    case ArgCount::Flagged:
      if (arg.flag >= 0 && size_t(arg.flag) < attrs.ints.size() &&
          attrs.ints[arg.flag] == 1)
        ++fixed;
      break;
    case ArgCount::Optional:
    case ArgCount::Run:
      variable = &arg;
      break;
    }
  }
  size_t rest = numArgs >= fixed ? numArgs - fixed : 0;
  bool fits = numArgs >= fixed;
  if (variable && variable->count == ArgCount::Optional)
    fits = fits && rest <= 1;
  else if (variable)
    fits = fits && rest >= 1;
  else
    fits = fits && rest == 0;
  if (!fits) {
    std::string expected = std::to_string(fixed);
    if (variable && variable->count == ArgCount::Optional)
      expected += " or " + std::to_string(fixed + 1);
    else if (variable)
      expected = std::to_string(fixed + 1) + " or more";
    return Status::failure(
        std::string(signature.kernel) + " takes " + expected +
            " tensors with these attributes, got " + std::to_string(numArgs),
        ErrorCode::Corrupt);
  }
  std::vector<const LibraryArg *> args;
  for (const LibraryArg &arg : signature.args) {
    size_t copies = 1;
    if (arg.count == ArgCount::Flagged)
      copies = arg.flag >= 0 && size_t(arg.flag) < attrs.ints.size() &&
                       attrs.ints[arg.flag] == 1
                   ? 1
                   : 0;
    else if (arg.count != ArgCount::One)
      copies = rest;
    args.insert(args.end(), copies, &arg);
  }
  return args;
}

} // namespace loom::abi
