//===- OnnxImporter.h - ONNX models as loom functions -----------*- C++ -*-===//
//
// Reads an ONNX model (the protobuf of onnx.proto, opsets 13 to 17 of the
// default domain) and builds its graph as one loom function:
//
//   func.func @forward(%p0 {loom.param = "encoder.layers.0.linear1.weight"},
//                      ..., %src {loom.input = "src",
//                                 loom.dims = ["batch", "src_len", ""]})
//       -> (... {loom.output = "out"})
//
// Float initializers become parameters under their ONNX names (what
// `state_dict` calls them when PyTorch exported the model), so the weights
// of the file load by name; other initializers, Constant nodes and the shape
// arithmetic of an exported graph (Shape, Gather, Concat, ... on sizes) are
// folded while importing. A dim that ONNX names (`dim_param`) stays dynamic
// and keeps its name, so equal names bound the same size when memory is
// planned. Anything the importer cannot take (an op, an attribute value, an
// element type, a size computed from data) is an error that names the node,
// its op type and the opset.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTEND_ONNX_ONNXIMPORTER_H
#define LOOM_FRONTEND_ONNX_ONNXIMPORTER_H

#include "ir/Interpreter.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
class TensorProto;
} // namespace onnx

namespace loom {

/// A loss on one output of the graph, to train the imported model: the
/// function becomes `@loss` (marked differentiable, for loom-autodiff), with
/// one more input, `targets` (i64, the output's shape without its last dim),
/// and one output, `loss`: the mean over targets other than `ignoreIndex` of
/// the cross entropy of output [..., C] (label-smoothed as
/// torch.nn.functional.cross_entropy smooths it).
struct OnnxLoss {
  std::string output;
  double labelSmoothing = 0.0;
  int64_t ignoreIndex = -100;
};

struct OnnxImportOptions {
  /// The name of the function the graph becomes (`loss` with a loss).
  std::string function = "forward";
  std::optional<OnnxLoss> loss;
  /// Values for graph inputs, by position among the inputs that are not
  /// initializers: an input given one is a constant of the import, not an
  /// argument (a shape or axes that ONNX's node tests pass as data).
  std::vector<std::optional<HostTensor>> inputValues;
};

/// What an import produced besides the function.
struct OnnxImport {
  /// The values of the initializers made parameters, by parameter name.
  std::map<std::string, HostTensor> parameters;
  /// The function's inputs (those not bound to inputValues) and outputs, in
  /// order, by their ONNX names.
  std::vector<std::string> inputs, outputs;
  /// The opset of the default domain the model was exported with.
  int64_t opset = 0;
};

/// The op types of ONNX's default domain the importer converts, sorted.
std::vector<std::string> onnxImportedOps();

/// Builds `model`'s graph as a function of `module`.
llvm::Expected<OnnxImport> importOnnxModel(mlir::ModuleOp module,
                                           const onnx::ModelProto &model,
                                           const OnnxImportOptions &options);
/// Reads the ONNX model file at `path` and imports it.
llvm::Expected<OnnxImport> importOnnxFile(mlir::ModuleOp module,
                                          llvm::StringRef path,
                                          const OnnxImportOptions &options);

/// The element values of an ONNX tensor (typed fields or raw little-endian
/// data); fails on element types Loom has no kind for and on data stored
/// outside the file.
llvm::Expected<HostTensor> hostTensorOf(const onnx::TensorProto &tensor);
/// Reads a serialized TensorProto file, as ONNX's test data stores each
/// input and output.
llvm::Expected<HostTensor> readOnnxTensorFile(llvm::StringRef path);

} // namespace loom

#endif // LOOM_FRONTEND_ONNX_ONNXIMPORTER_H
