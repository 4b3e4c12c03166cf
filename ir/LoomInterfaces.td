//===- LoomInterfaces.td - Gradient rules ------------------*- tablegen -*-===//

#ifndef LOOM_INTERFACES_TD
#define LOOM_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Loom_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::loom";
  let description = [{
    The reverse-mode gradient rule of a differentiable op. Given the gradient
    of the loss with respect to each result (never null: the autodiff pass
    passes zeros for a result nobody used), it builds ops at the builder's
    insertion point that compute the gradient with respect to each operand,
    and appends one value per operand to `operandGrads`: the gradient, which
    has the operand's type, or a null Value where the operand has none
    (integer operands, or operands the op is constant in).
  }];
  let methods = [
    InterfaceMethod<"Builds the operands' gradients.", "::mlir::LogicalResult",
      "buildGradients", (ins "::mlir::OpBuilder &":$builder,
                             "::mlir::ValueRange":$resultGrads,
                             "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

def Loom_ProductOpInterface : OpInterface<"ProductOpInterface"> {
  let cppNamespace = "::loom";
  let description = [{
    An op some of whose operands enter only products, whose sums are kept in
    the result's element type: a GEMM's two factors, not its bias or
    residual. Mixed-precision compilation (loom-mixed-precision) may round
    those operands to a narrower float type: the products then read half the
    bytes and run on the narrow multipliers, while every sum, and so the
    result, stays as wide as before. The op accepts the narrow operands with
    its wide result type.
  }];
  let methods = [
    InterfaceMethod<"The indices of the operands that enter only products.",
      "::llvm::SmallVector<unsigned>", "getProductOperands", (ins)>
  ];
}

#endif // LOOM_INTERFACES_TD
