//===- InterpreterOps.cpp - From ops to the interpreter's kernels ---------===//
//
// One case per op: read the attributes, call the kernel. A kernel's error is
// prefixed with the op and its location here, so every message says where in
// the model it happened.
//
//===----------------------------------------------------------------------===//

#include "ir/InterpreterOps.h"
#include "ir/InterpreterKernels.h"
#include "ir/LoomDialect.h"

#include "ir/InterpreterFused.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace loom;
using namespace loom::interp;

namespace {

using Results = std::vector<HostTensor>;

/// The shape of a ranked tensor type whose dims are all static.
llvm::Expected<Shape> staticShape(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked || !ranked.hasStaticShape())
    return kernelError("a constant needs a static shape");
  return Shape(ranked.getShape().begin(), ranked.getShape().end());
}

llvm::Expected<HostTensor> constant(ConstantOp op) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!dense)
    return kernelError("only dense constants are supported");
  auto shape = staticShape(dense.getType());
  if (!shape)
    return shape.takeError();
  auto kind = dtypeOfType(dense.getElementType());
  if (!kind)
    return kind.takeError();
  HostTensor out(*shape, *kind);
  auto fill = [&](auto values) {
    if (dense.isSplat()) {
      std::fill(out.data.begin(), out.data.end(),
                static_cast<double>(*values.begin()));
      return;
    }
    int64_t i = 0;
    for (auto v : values)
      out.data[i++] = static_cast<double>(v);
  };
  switch (*kind) {
  case DType::F32:
    fill(dense.getValues<float>());
    break;
  case DType::F64:
    fill(dense.getValues<double>());
    break;
  case DType::I1:
    fill(dense.getValues<bool>());
    break;
  case DType::I32:
    fill(dense.getValues<int32_t>());
    break;
  case DType::I64:
    fill(dense.getValues<int64_t>());
    break;
  case DType::F16:
  case DType::BF16: {
    int64_t i = 0;
    for (APFloat v : dense.getValues<APFloat>()) {
      bool lost;
      v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
      if (dense.isSplat()) {
        std::fill(out.data.begin(), out.data.end(), v.convertToDouble());
        break;
      }
      out.data[i++] = v.convertToDouble();
    }
    break;
  }
  }
  return out;
}

llvm::Expected<DType> resultKind(Operation *op) {
  if (op->getNumResults() != 1)
    return kernelError("expected one result");
  auto ranked = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!ranked)
    return kernelError("the result is not a ranked tensor");
  return dtypeOfType(ranked.getElementType());
}

CompareFn compareFn(ComparePredicate p) {
  switch (p) {
  case ComparePredicate::eq:
    return CompareFn::Eq;
  case ComparePredicate::ne:
    return CompareFn::Ne;
  case ComparePredicate::lt:
    return CompareFn::Lt;
  case ComparePredicate::le:
    return CompareFn::Le;
  case ComparePredicate::gt:
    return CompareFn::Gt;
  case ComparePredicate::ge:
    return CompareFn::Ge;
  }
  return CompareFn::Eq;
}

int64_t i64(uint64_t attr) { return static_cast<int64_t>(attr); }

} // namespace

std::optional<BinaryFn> loom::interp::binaryFnOf(Operation *op) {
  using R = std::optional<BinaryFn>;
  return llvm::TypeSwitch<Operation *, R>(op)
      .Case<AddOp>([](auto) { return BinaryFn::Add; })
      .Case<SubOp>([](auto) { return BinaryFn::Sub; })
      .Case<MulOp>([](auto) { return BinaryFn::Mul; })
      .Case<DivOp>([](auto) { return BinaryFn::Div; })
      .Case<MaximumOp>([](auto) { return BinaryFn::Max; })
      .Case<MinimumOp>([](auto) { return BinaryFn::Min; })
      .Case<PowOp>([](auto) { return BinaryFn::Pow; })
      .Default([](auto) { return std::nullopt; });
}

std::optional<UnaryFn> loom::interp::unaryFnOf(Operation *op) {
  using R = std::optional<UnaryFn>;
  return llvm::TypeSwitch<Operation *, R>(op)
      .Case<NegOp>([](auto) { return UnaryFn::Neg; })
      .Case<AbsOp>([](auto) { return UnaryFn::Abs; })
      .Case<ExpOp>([](auto) { return UnaryFn::Exp; })
      .Case<LogOp>([](auto) { return UnaryFn::Log; })
      .Case<SqrtOp>([](auto) { return UnaryFn::Sqrt; })
      .Case<RsqrtOp>([](auto) { return UnaryFn::Rsqrt; })
      .Case<TanhOp>([](auto) { return UnaryFn::Tanh; })
      .Case<SigmoidOp>([](auto) { return UnaryFn::Sigmoid; })
      .Case<ReluOp>([](auto) { return UnaryFn::Relu; })
      .Case<GeluOp>([](auto) { return UnaryFn::Gelu; })
      .Case<ErfOp>([](auto) { return UnaryFn::Erf; })
      .Case<SinOp>([](auto) { return UnaryFn::Sin; })
      .Case<CosOp>([](auto) { return UnaryFn::Cos; })
      .Default([](auto) { return std::nullopt; });
}

namespace {

/// The single-result ops: returns their value, or an error without the op
/// prefix (added by the caller).
llvm::Expected<HostTensor> evaluateSingle(Operation *op,
                                          llvm::ArrayRef<const HostTensor *> in,
                                          DType kind) {
  auto unaryOp = [&](UnaryFn fn) -> llvm::Expected<HostTensor> {
    return unary(fn, *in[0], kind);
  };
  auto binaryOp = [&](BinaryFn fn) -> llvm::Expected<HostTensor> {
    return binary(fn, *in[0], *in[1], kind);
  };
  using R = llvm::Expected<HostTensor>;
  if (std::optional<BinaryFn> fn = binaryFnOf(op))
    return binaryOp(*fn);
  if (std::optional<UnaryFn> fn = unaryFnOf(op))
    return unaryOp(*fn);
  return llvm::TypeSwitch<Operation *, R>(op)
      // Elementwise.
      .Case<CompareOp>([&](CompareOp c) -> R {
        return compare(compareFn(c.getPredicate()), *in[0], *in[1]);
      })
      .Case<SelectOp>(
          [&](auto) { return select(*in[0], *in[1], *in[2], kind); })
      .Case<CastOp>([&](auto) -> R { return cast(*in[0], kind); })
      .Case<ConstantOp>([&](ConstantOp c) { return constant(c); })
      .Case<IotaOp>(
          [&](IotaOp o) { return iota(*in[0], i64(o.getDim()), kind); })
      // Contractions, reductions, NN.
      .Case<MatmulOp>([&](MatmulOp o) {
        return matmul(*in[0], *in[1], o.getTransposeLhs(), o.getTransposeRhs(),
                      kind);
      })
      .Case<ReduceSumOp>([&](ReduceSumOp o) {
        return reduce(ReduceFn::Sum, *in[0], o.getDims(), o.getKeepDims(),
                      kind);
      })
      .Case<ReduceMeanOp>([&](ReduceMeanOp o) {
        return reduce(ReduceFn::Mean, *in[0], o.getDims(), o.getKeepDims(),
                      kind);
      })
      .Case<ReduceMaxOp>([&](ReduceMaxOp o) {
        return reduce(ReduceFn::Max, *in[0], o.getDims(), o.getKeepDims(),
                      kind);
      })
      .Case<SoftmaxOp>([&](SoftmaxOp o) {
        return softmax(*in[0], i64(o.getAxis()), /*log=*/false, kind);
      })
      .Case<LogSoftmaxOp>([&](LogSoftmaxOp o) {
        return softmax(*in[0], i64(o.getAxis()), /*log=*/true, kind);
      })
      .Case<LayerNormOp>([&](LayerNormOp o) {
        return layerNorm(*in[0], *in[1], *in[2],
                         o.getEpsilon().convertToDouble(), kind);
      })
      .Case<DropoutOp>([&](DropoutOp o) {
        return dropout(*in[0], *in[1], o.getRate().convertToDouble(),
                       i64(o.getOffset()), kind);
      })
      .Case<CausalMaskOp>([&](CausalMaskOp o) {
        return causalMask(*in[0], i64(o.getDim()), kind);
      })
      .Case<PaddingMaskOp>([&](PaddingMaskOp o) {
        return paddingMask(*in[0], i64(o.getPad()), kind);
      })
      .Case<CrossEntropyOp>([&](CrossEntropyOp o) {
        return crossEntropy(*in[0], *in[1],
                            o.getLabelSmoothing().convertToDouble(),
                            i64(o.getIgnoreIndex()), kind);
      })
      .Case<CrossEntropyGradOp>([&](CrossEntropyGradOp o) {
        return crossEntropyGrad(*in[0], *in[1], *in[2],
                                o.getLabelSmoothing().convertToDouble(),
                                i64(o.getIgnoreIndex()), kind);
      })
      // Shape and data movement.
      .Case<ReshapeOp>(
          [&](ReshapeOp o) { return reshape(*in[0], o.getShape()); })
      .Case<ReshapeAsOp>([&](auto) { return reshapeTo(*in[0], in[1]->shape); })
      .Case<ExpandDimsOp>(
          [&](ExpandDimsOp o) { return expandDims(*in[0], o.getDims()); })
      .Case<TransposeOp>(
          [&](TransposeOp o) { return transpose(*in[0], o.getPerm()); })
      .Case<SliceOp>([&](SliceOp o) {
        return slice(*in[0], i64(o.getDim()), i64(o.getStart()),
                     i64(o.getEnd()));
      })
      .Case<SliceGradOp>([&](SliceGradOp o) {
        return sliceGrad(*in[0], *in[1], i64(o.getDim()), i64(o.getStart()),
                         i64(o.getEnd()), kind);
      })
      .Case<ConcatOp>(
          [&](ConcatOp o) { return concat(in, i64(o.getDim()), kind); })
      .Case<BroadcastAsOp>(
          [&](auto) { return broadcastTo(*in[0], in[1]->shape); })
      .Case<SumToOp>([&](auto) { return sumTo(*in[0], in[1]->shape); })
      .Case<GatherOp>([&](auto) { return gather(*in[0], *in[1]); })
      .Case<ScatterAddOp>(
          [&](auto) { return scatterAdd(*in[0], *in[1], *in[2], kind); })
      .Case<OneHotOp>(
          [&](OneHotOp o) { return oneHot(*in[0], i64(o.getDepth()), kind); })
      .Default([&](Operation *) -> R {
        return kernelError("the interpreter does not know this op");
      });
}

/// The fused ops with several results or a region; nullopt for other ops.
std::optional<llvm::Expected<Results>>
evaluateFused(Operation *op, llvm::ArrayRef<const HostTensor *> operands,
              Callee &callee) {
  auto prefixed = [&](llvm::Expected<Results> r) -> llvm::Expected<Results> {
    if (!r)
      return opError(op, llvm::toString(r.takeError()));
    return r;
  };
  if (auto o = dyn_cast<AttentionOp>(op))
    return prefixed(evaluateAttention(o, operands));
  if (auto o = dyn_cast<AttentionGradOp>(op))
    return prefixed(evaluateAttentionGrad(o, operands));
  if (auto o = dyn_cast<LinearOp>(op))
    return prefixed(evaluateLinear(o, operands));
  if (auto o = dyn_cast<AddLayerNormOp>(op))
    return prefixed(evaluateAddLayerNorm(o, operands));
  if (auto o = dyn_cast<FusionOp>(op))
    return prefixed(evaluateFusion(o, operands, callee, callee.f64()));
  if (isa<AllReduceOp>(op))
    return prefixed(callee.allReduce(operands));
  return std::nullopt;
}

} // namespace

llvm::Expected<std::vector<HostTensor>>
interp::evaluateOp(Operation *op, llvm::ArrayRef<const HostTensor *> operands,
                   Callee &callee) {
  if (auto call = dyn_cast<func::CallOp>(op)) {
    auto results = callee.call(call.getCallee(), operands);
    if (!results)
      return opError(op, llvm::toString(results.takeError()));
    return results;
  }
  if (op->getName().getDialectNamespace() != LoomDialect::getDialectNamespace())
    return opError(op, "the interpreter does not know this op");
  if (auto fused = evaluateFused(op, operands, callee))
    return std::move(*fused);
  auto kind = resultKind(op);
  if (!kind)
    return opError(op, llvm::toString(kind.takeError()));
  auto result = evaluateSingle(op, operands, *kind);
  if (!result)
    return opError(op, llvm::toString(result.takeError()));
  Results results;
  results.push_back(std::move(*result));
  return results;
}
