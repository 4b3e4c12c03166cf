//===- InterpreterLinear.cpp - Linear and add_layer_norm kernels ----------===//
//
// Both fused ops are evaluated as the op sequences they replace, through the
// same kernels (matmul, the elementwise ops, layer norm), so a fused and an
// unfused graph agree exactly in f64. What fusion changes is rounding: the
// epilogue runs on the exact product and only the op's results are rounded
// to the element type, as a GEMM epilogue or a fused kernel keeps its
// intermediates in registers.
//
//===----------------------------------------------------------------------===//

#include "ir/InterpreterFused.h"
#include "ir/InterpreterKernels.h"

using namespace loom;
using namespace loom::interp;

/// The element kind of result `index` of `op`.
static llvm::Expected<DType> resultKind(mlir::Operation *op, unsigned index) {
  auto type =
      llvm::cast<mlir::RankedTensorType>(op->getResult(index).getType());
  return dtypeOfType(type.getElementType());
}

llvm::Expected<Results> interp::evaluateLinear(LinearOp op, Operands operands) {
  auto kind = resultKind(op, 0);
  if (!kind)
    return kind.takeError();
  // Operands come in op order; the optional ones only when present.
  const HostTensor &x = *operands[0], &w = *operands[1];
  size_t next = 2;
  const HostTensor *bias = op.getBias() ? operands[next++] : nullptr;
  const HostTensor *residual = op.getResidual() ? operands[next++] : nullptr;

  if (x.rank() < 1 || w.rank() != 2)
    return kernelError("needs input [..., K] and weight [N, K], got " +
                       shapeString(x.shape) + " and " + shapeString(w.shape));
  int64_t k = x.shape.back(), n = w.shape[0];
  if (w.shape[1] != k)
    return kernelError("input " + shapeString(x.shape) + " and weight " +
                       shapeString(w.shape) + " differ in K");
  Shape outShape(x.shape.begin(), x.shape.end() - 1);
  outShape.push_back(n);
  if (bias && bias->shape != Shape{n})
    return kernelError("bias must be " + shapeString({n}) + ", got " +
                       shapeString(bias->shape));
  if (residual && residual->shape != outShape)
    return kernelError("residual must be " + shapeString(outShape) + ", got " +
                       shapeString(residual->shape));

  // The rows of x as one [M, K] matrix times W^T.
  int64_t rows = shapeNumel(Shape(x.shape.begin(), x.shape.end() - 1));
  auto flat = reshapeTo(x, {rows, k});
  if (!flat)
    return flat.takeError();
  auto product = matmul(*flat, w, /*transposeLhs=*/false,
                        /*transposeRhs=*/true, *kind);
  if (!product)
    return product.takeError();
  auto y = reshapeTo(std::move(*product), outShape);
  if (!y)
    return y.takeError();
  if (bias) {
    y = binary(BinaryFn::Add, *y, *bias, *kind);
    if (!y)
      return y.takeError();
  }
  switch (op.getActivation()) {
  case Activation::none:
    break;
  case Activation::relu:
    *y = unary(UnaryFn::Relu, *y, *kind);
    break;
  case Activation::gelu:
    *y = unary(UnaryFn::Gelu, *y, *kind);
    break;
  }
  if (residual) {
    y = binary(BinaryFn::Add, *y, *residual, *kind);
    if (!y)
      return y.takeError();
  }
  Results results;
  results.push_back(std::move(*y));
  return results;
}

llvm::Expected<Results> interp::evaluateAddLayerNorm(AddLayerNormOp op,
                                                     Operands operands) {
  auto kind = resultKind(op, 0);
  if (!kind)
    return kind.takeError();
  const HostTensor &x = *operands[0], &r = *operands[1];
  // The op does not broadcast: a shape mismatch found at run time (dynamic
  // dims) is an error rather than a silent broadcast.
  if (x.shape != r.shape)
    return kernelError("input " + shapeString(x.shape) + " and residual " +
                       shapeString(r.shape) + " differ in shape");
  auto sum = binary(BinaryFn::Add, x, r, *kind);
  if (!sum)
    return sum.takeError();
  auto normed = layerNorm(*sum, *operands[2], *operands[3],
                          op.getEpsilon().convertToDouble(), *kind);
  if (!normed)
    return normed.takeError();
  Results results;
  results.push_back(std::move(*sum));
  results.push_back(std::move(*normed));
  return results;
}
