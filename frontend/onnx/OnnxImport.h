//===- OnnxImport.h - What the ONNX converters share ------------*- C++ -*-===//
//
// The importer walks the nodes in order and hands each to the converter of
// its op type (ElementwiseOps.cpp, ShapeOps.cpp, NNOps.cpp) through a
// NodeContext: the node's inputs as the importer knows them, its attributes,
// a way to build loom ops that reports a shape error instead of aborting,
// and errors worded with the node's name, op type and opset.
//
// A value is known to the importer in up to three ways: as a graph tensor;
// as a constant (initializers that are not parameters, Constant nodes, and
// everything computed from constants alone, folded here); or, for the small
// integer vectors of shape arithmetic, as sizes some of which are dims of
// graph tensors known only at run time (Shape of [batch, 10] is
// [dim 0 of x, 10]). Reshape, Expand and their kin take such sizes and turn
// them into what loom's ops say (0 copies a dim, -1 infers one).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTEND_ONNX_ONNXIMPORT_H
#define LOOM_FRONTEND_ONNX_ONNXIMPORT_H

#include "frontend/Graph.h"
#include "ir/Interpreter.h"

#include "onnx/onnx.pb.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace loom::onnx_import {

/// A size of shape arithmetic: `factor` times the product of run-time dims,
/// each (tensor, dim).
struct SymbolicSize {
  int64_t factor = 1;
  llvm::SmallVector<std::pair<mlir::Value, int64_t>, 1> dims;

  static SymbolicSize of(int64_t value) { return {value, {}}; }
  /// Dim `dim` of `tensor`, as the dim of the first value that has it
  /// (DimProvenance.cpp), so that equal sizes compare equal.
  static SymbolicSize dimOf(mlir::Value tensor, int64_t dim);
  bool isConstant() const { return dims.empty(); }
  /// Equal factors and the same dims in any order.
  bool operator==(const SymbolicSize &other) const;
};

/// An ONNX value as the importer knows it (see the file comment).
struct ImportedValue {
  Tensor tensor;
  std::optional<HostTensor> constant;
  /// An i64 (or i32) scalar or vector with at least one run-time size.
  std::optional<std::vector<SymbolicSize>> sizes;
  bool sizesAreScalar = false;
  /// The ONNX element type (onnx::TensorProto::DataType) when constant or
  /// sizes, so that folding keeps it.
  int32_t onnxType = 0;

  bool known() const { return constant.has_value() || sizes.has_value(); }
};

class Importer;

/// One node being converted.
class NodeContext {
public:
  /// Node `index` of the graph (-1: no node, the graph's outputs).
  NodeContext(Importer &importer, const onnx::NodeProto &node, int64_t opset,
              int64_t index = -1)
      : importer(importer), node(node), opset(opset), index(index) {}

  const onnx::NodeProto &proto() const { return node; }
  int64_t opsetVersion() const { return opset; }
  Graph &graph();
  mlir::OpBuilder &builder() { return graph().opBuilder(); }
  mlir::MLIRContext *context() { return graph().context(); }

  /// Inputs: an empty name is an omitted optional input.
  int numInputs() const { return node.input_size(); }
  bool hasInput(int i) const {
    return i < node.input_size() && !node.input(i).empty();
  }
  const ImportedValue &input(int i) const;
  /// Input `i` as a graph tensor (a constant is materialized).
  llvm::Expected<Tensor> tensor(int i);
  /// Input `i` as constant integers; `what` names it in the error.
  llvm::Expected<std::vector<int64_t>> constantInts(int i,
                                                    llvm::StringRef what);
  /// Input `i` as sizes (constant or run time).
  llvm::Expected<std::vector<SymbolicSize>> sizes(int i, llvm::StringRef what);

  /// Tensors whose Shape the graph took, newest last: what a reshape to
  /// sizes of several run-time dims can take its shape from.
  std::vector<Tensor> &shapeSources();
  /// The newest of shapeSources() whose sizes are `sizes`, if any.
  std::optional<Tensor> tensorWithSizes(const std::vector<SymbolicSize> &sizes);

  /// For a Dropout in training mode: the `seed` input of the training step
  /// and this dropout's own offset in its random stream; an error outside a
  /// training import.
  llvm::Expected<std::pair<Tensor, int64_t>> dropoutStream();

  /// Attributes.
  const onnx::AttributeProto *attribute(llvm::StringRef name) const;
  int64_t intAttr(llvm::StringRef name, int64_t otherwise) const;
  float floatAttr(llvm::StringRef name, float otherwise) const;
  std::string stringAttr(llvm::StringRef name, llvm::StringRef otherwise) const;
  std::optional<std::vector<int64_t>> intsAttr(llvm::StringRef name) const;
  /// The error for an attribute whose value the importer does not take.
  llvm::Error unsupportedAttribute(llvm::StringRef name,
                                   const llvm::Twine &value);

  /// Outputs.
  void setOutput(int i, ImportedValue value);
  void setOutput(int i, Tensor tensor) {
    ImportedValue v;
    v.tensor = tensor;
    setOutput(i, std::move(v));
  }

  /// "node 'name' (Op, opset N): message"; an unnamed node is "node #i".
  llvm::Error error(const llvm::Twine &message) const;

  /// Builds loom op `OpTy` from `args` (as its ODS builder with explicit
  /// result types takes them) with the inferred result type; a shape the op
  /// refuses is an error carrying its diagnostic, not an abort.
  template <typename OpTy, typename... Args>
  llvm::Expected<Tensor> create(Args &&...args) {
    mlir::OpBuilder &b = builder();
    mlir::OperationState state(graph().location(), OpTy::getOperationName());
    OpTy::build(b, state, mlir::TypeRange{}, std::forward<Args>(args)...);
    llvm::SmallVector<mlir::Type, 2> types;
    startDiagnostics();
    bool inferred = mlir::succeeded(
        OpTy::inferReturnTypes(context(), state.location, state.operands,
                               state.attributes.getDictionary(context()),
                               state.getRawProperties(), state.regions, types));
    std::string diagnostics = endDiagnostics();
    if (!inferred)
      return error(diagnostics.empty()
                       ? "loom." + OpTy::getOperationName().str() +
                             " refused its operands"
                       : diagnostics);
    if (llvm::Error e = checkFits(types))
      return std::move(e);
    state.addTypes(types);
    mlir::Operation *op = b.create(state);
    // The op's own verifier (operand types, attribute ranges) speaks now,
    // while the node is known.
    startDiagnostics();
    bool valid = mlir::succeeded(mlir::verify(op, /*verifyRecursively=*/false));
    diagnostics = endDiagnostics();
    if (!valid) {
      op->erase();
      return error(diagnostics);
    }
    return Tensor(op->getResult(0), &graph());
  }

  /// An error when a static shape among `types` holds more elements than
  /// any memory (an exported graph's sizes are data an attacker controls:
  /// such a shape would otherwise reach memory planning or LLVM).
  llvm::Error checkFits(mlir::TypeRange types);

  /// A constant tensor of `value`'s kind and shape.
  llvm::Expected<Tensor> constantTensor(const HostTensor &value);
  /// The MLIR element type of `kind`.
  mlir::Type elementType(DType kind);

private:
  void startDiagnostics();
  std::string endDiagnostics();

  Importer &importer;
  const onnx::NodeProto &node;
  int64_t opset;
  int64_t index;
};

using Converter = llvm::Error (*)(NodeContext &);

/// The converters of each file, by ONNX op type.
void addElementwiseConverters(llvm::StringMap<Converter> &converters);
void addShapeConverters(llvm::StringMap<Converter> &converters);
void addIndexConverters(llvm::StringMap<Converter> &converters);
void addNNConverters(llvm::StringMap<Converter> &converters);
void addMaskConverters(llvm::StringMap<Converter> &converters);

/// An integer element, saturated: INT64_MAX (Slice's "to the end") does not
/// survive the double a HostTensor holds it in.
inline int64_t toInt64(double x) {
  if (x >= 9.2e18)
    return INT64_MAX;
  if (x <= -9.2e18)
    return INT64_MIN;
  return static_cast<int64_t>(x);
}

/// `axis` counted from the end when negative, in range or not (ONNX clamps
/// some axes and refuses others; loom::normalizeAxis refuses all).
inline int64_t countFromEnd(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// Reshapes `x` to `target`, one size per result dim (-1 allowed once):
/// loom.reshape with 0 where a size is x's own dim at that index, or the
/// shape of a tensor the graph read with Shape (ShapeOps.cpp).
llvm::Expected<Tensor> reshapeTo(NodeContext &ctx, Tensor x,
                                 const std::vector<SymbolicSize> &target);

/// Positions 0 .. n-1 along dim `dim` of `of` (loom.iota), of element type
/// `kind`.
Tensor iotaAlong(NodeContext &ctx, mlir::Value of, int64_t dim, DType kind);

/// The sizes of `t`'s dims.
std::vector<SymbolicSize> sizesOf(Tensor t);

/// Elements past which a tensor fits in no memory (2^40, 4 TiB of f32).
inline constexpr int64_t kMaxTensorElements = int64_t(1) << 40;
/// The product of `shape`'s static dims, or nothing when it passes
/// kMaxTensorElements (dynamic dims count as 1).
std::optional<int64_t> elementCountWithin(llvm::ArrayRef<int64_t> shape);

/// `t` as a constant value.
ImportedValue constantValue(HostTensor t);
/// `sizes` as a value: a constant when every size is known, a scalar when
/// `scalar`, of ONNX element type `onnxType` (INT64 or INT32).
ImportedValue sizesValue(std::vector<SymbolicSize> sizes, bool scalar,
                         int32_t onnxType = onnx::TensorProto::INT64);

/// The Loom kind of ONNX element type `type`, or an error naming it.
llvm::Expected<DType> dtypeOfOnnx(int32_t type);
/// The ONNX element type of `kind`.
int32_t onnxTypeOf(DType kind);
/// ONNX's name of element type `type` ("FLOAT").
std::string onnxTypeName(int32_t type);

/// `f` applied elementwise to `a` and `b` broadcast together, of `kind`.
std::optional<HostTensor>
foldBinary(const HostTensor &a, const HostTensor &b, DType kind,
           const std::function<double(double, double)> &f);

} // namespace loom::onnx_import

#endif // LOOM_FRONTEND_ONNX_ONNXIMPORT_H
