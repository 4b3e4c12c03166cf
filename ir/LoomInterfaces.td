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

#endif // LOOM_INTERFACES_TD
