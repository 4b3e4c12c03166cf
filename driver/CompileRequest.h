//===- CompileRequest.h - What `loom compile` is asked, as a library -*- C++
//-*-===//
//
// Everything a compile takes besides where its output goes: the model (a
// config, or an ONNX file and the loss to train it with), the target, the
// batch bounds, the training schedule compiled into @train_step. `loom
// compile` and the Python module's `loom.compile` both fill one in and
// call compileRequest(), so that a model compiled from either is the same
// executable for the same request.
//
//   CompileRequest request;
//   request.config = presetConfig("tiny").get();   // or request.onnx =
//   "m.onnx" request.target = "cpu"; if (llvm::Error err =
//   checkCompileRequest(request)) ... mlir::MLIRContext ctx; auto compiled =
//   compileRequest(ctx, request);   // module + executable
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DRIVER_COMPILEREQUEST_H
#define LOOM_DRIVER_COMPILEREQUEST_H

#include "driver/CompileDriver.h"

#include "mlir/IR/OwningOpRef.h"

#include <optional>

namespace loom::driver {

struct CompileRequest {
  /// The model: a config (Loom's own Transformer), or an ONNX file imported
  /// as @forward; exactly one.
  std::optional<TransformerConfig> config;
  std::string onnx;
  /// An ONNX model's loss ("cross-entropy", or empty: compiled for
  /// inference alone), the output it is taken on, and its settings.
  std::string loss;
  std::string lossOutput;
  double labelSmoothing = 0.0;
  int64_t ignoreIndex = -100;
  /// An ONNX model's width, for the learning-rate schedule (with a loss).
  int64_t dModel = 0;

  /// "ir" (the compiled module, no executable), "cpu" or "cuda".
  std::string target = "cpu";
  /// The CPU level ("native" or a portable x86-64 level), with "cpu".
  std::string cpu = "native";
  /// The GPU architecture, with "cuda".
  std::string cudaArch = "sm_90";
  /// The CUDA executable's layouts in a CPU (or IR) compile.
  bool cudaLayouts = false;
  /// "fp32", "bf16" (training and decoding), "int8" (decoding).
  std::string precision = "fp32";

  /// The schedule and clipping compiled into @train_step.
  int64_t warmup = 4000;
  double lrScale = 1.0;
  double clipNorm = 0.0;
  /// The batch bounds the memory plan is made for.
  int64_t maxTokens = 4096;
  int64_t maxLen = 256;
  int64_t maxBatch = 256;
  /// Fusion remarks to the diagnostics.
  bool remarks = false;
  /// A rank of a data-parallel job: gradients all-reduced in buckets.
  bool dataParallel = false;
  double bucketMb = 25;
  /// Keep the module after every pass here (empty: nowhere).
  std::string dumpDir;

  bool imported() const { return !onnx.empty(); }
  /// Whether an executable is written (not the IR alone).
  bool writesExecutable() const { return target != "ir"; }
};

/// The part of checkCompileRequest about the target: its name, CPU level,
/// architecture, layouts and precision (what a tool checks before its
/// output files).
llvm::Error checkCompileTarget(const CompileRequest &request);

/// Refuses what compileRequest cannot do, before anything runs: unknown
/// targets, CPU levels and architectures, options of the wrong target, a
/// model given twice or not at all, bounds and schedules out of range. The
/// messages name the option as `loom compile` spells it ("--max-len").
llvm::Error checkCompileRequest(const CompileRequest &request);

/// The pipeline options and code target of a checked request.
CompilePipelineOptions pipelineOf(const CompileRequest &request);
CodeTarget codeTargetOf(const CompileRequest &request);

/// The request's model as a module, nothing compiled yet: built from its
/// config, or imported from its ONNX file.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildRequestModule(mlir::MLIRContext &ctx, const CompileRequest &request);

struct CompiledRequest {
  /// The module after the whole pipeline.
  mlir::OwningOpRef<mlir::ModuleOp> module;
  /// The executable, when the request's target writes one.
  std::optional<runtime::Executable> executable;
  double seconds = 0; // building and the pipeline, not the code generation
};

/// Checks the request, builds its module, runs the compile pipeline on it
/// and writes its executable. Diagnostics go to `ctx`'s handlers.
llvm::Expected<CompiledRequest> compileRequest(mlir::MLIRContext &ctx,
                                               const CompileRequest &request);

} // namespace loom::driver

#endif // LOOM_DRIVER_COMPILEREQUEST_H
