//===- LoomDialect.td - The loom dialect -------------------*- tablegen -*-===//
//
// Loom's tensor-level dialect: value-semantics ops on builtin tensor types that
// describe a Transformer, its gradients and its optimizer.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECT_TD
#define LOOM_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Loom_Dialect : Dialect {
  let name = "loom";
  let summary = "Tensor-level ops for compiling Transformers";
  let description = [{
    Ops with value semantics on builtin `tensor<...>` types. Dims may be
    dynamic (`?`) for batch and sequence length. Binary elementwise ops
    broadcast their operands as NumPy does.
  }];
  let cppNamespace = "::loom";
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let hasConstantMaterializer = 1;
}

def Loom_FloatElement : AnyTypeOf<[F16, BF16, F32, F64]>;
def Loom_IntElement : AnyTypeOf<[I1, I32, I64]>;
def Loom_FloatTensor : TensorOf<[F16, BF16, F32, F64]>;
def Loom_IndexTensor : TensorOf<[I32, I64]>;
def Loom_AnyTensor : TensorOf<[F16, BF16, F32, F64, I1, I32, I64]>;
def Loom_BoolTensor : TensorOf<[I1]>;

def Loom_ComparePredicate : I64EnumAttr<"ComparePredicate", "comparison",
    [I64EnumAttrCase<"eq", 0>, I64EnumAttrCase<"ne", 1>,
     I64EnumAttrCase<"lt", 2>, I64EnumAttrCase<"le", 3>,
     I64EnumAttrCase<"gt", 4>, I64EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::loom";
}

def Loom_Activation : I64EnumAttr<"Activation", "epilogue activation",
    [I64EnumAttrCase<"none", 0>, I64EnumAttrCase<"relu", 1>,
     I64EnumAttrCase<"gelu", 2>]> {
  let cppNamespace = "::loom";
}

#endif // LOOM_DIALECT_TD
