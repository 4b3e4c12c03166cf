//===- OnnxFuzzer.cpp - Fuzzing the ONNX importer --------------------------===//
//
// Bytes in, parsed as an ONNX ModelProto and imported. Beyond not crashing
// (ops are built through their shape inference, so a refused shape is an
// error, not the builder's abort), what the importer does must hold up:
//   - a refusal carries a message, and leaves the module without @forward;
//   - an accepted model's function verifies and runs its shape
//     bookkeeping only on values it built.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/OnnxImporter.h"
#include "fuzz/FuzzUtil.h"
#include "ir/LoomDialect.h"

#include "onnx/onnx.pb.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

using loom::fuzz::fail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  onnx::ModelProto model;
  if (size > size_t(INT32_MAX) ||
      !model.ParseFromArray(data, static_cast<int>(size)))
    return 0;
  static mlir::MLIRContext *ctx = [] {
    auto *c = new mlir::MLIRContext();
    c->loadDialect<loom::LoomDialect, mlir::func::FuncDialect>();
    return c;
  }();
  // Diagnostics are the importer's to collect; none reach stderr.
  mlir::ScopedDiagnosticHandler quiet(ctx, [](mlir::Diagnostic &) {
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(mlir::UnknownLoc::get(ctx));
  llvm::Expected<loom::OnnxImport> imported =
      loom::importOnnxModel(*module, model, loom::OnnxImportOptions());
  if (!imported) {
    if (llvm::toString(imported.takeError()).empty())
      fail("a refused model without a message");
    if (module->lookupSymbol("forward"))
      fail("a refused model left @forward behind");
    return 0;
  }
  if (mlir::failed(mlir::verify(*module)))
    fail("an accepted model's function does not verify");
  return 0;
}
