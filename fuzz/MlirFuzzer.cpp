//===- MlirFuzzer.cpp - Fuzzing the parser and verifiers of the dialect ---===//
//
// MLIR text in, parsed with the Loom and func dialects loaded, as loom-opt
// does before any pass: the parser, the custom assembly formats of Loom's
// ops, type inference and every verifier. A module that parses and
// verifies must also round-trip: printed (in its custom form, then in the
// generic form), it parses back and prints the same, as mlir-opt's
// --verify-roundtrip demands of every dialect.
//
// Each input gets a fresh context, so that attributes and types uniqued for
// one input do not accumulate over millions of them.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzUtil.h"
#include "ir/LoomDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

using loom::fuzz::fail;

namespace {

std::string print(mlir::ModuleOp module, bool generic) {
  std::string text;
  llvm::raw_string_ostream os(text);
  mlir::OpPrintingFlags flags;
  if (generic)
    flags.printGenericOpForm();
  module->print(os, flags);
  return text;
}

/// Parses `text` again and checks that it prints as `text`.
void checkRoundTrip(mlir::MLIRContext &context, const std::string &text,
                    bool generic, const std::string &original) {
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> again =
      mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  const char *form = generic ? "generic" : "custom";
  if (!again)
    fail(std::string("the ") + form + " form of a valid module does not " +
         "parse back:\n" + diagnostics + "--- printed:\n" + text +
         "--- from:\n" + original);
  if (std::string reprinted = print(*again, generic); reprinted != text)
    fail(std::string("the ") + form + " form of a valid module prints " +
         "differently once parsed:\n--- first:\n" + text + "--- then:\n" +
         reprinted);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const mlir::DialectRegistry registry = [] {
    mlir::DialectRegistry r;
    r.insert<loom::LoomDialect, mlir::func::FuncDialect>();
    return r;
  }();
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  context.printOpOnDiagnostic(false);

  std::string text(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module;
  {
    // Diagnostics are the expected outcome for most inputs; what matters is
    // that producing them does not crash.
    mlir::ScopedDiagnosticHandler quiet(
        &context, [](mlir::Diagnostic &) { return mlir::success(); });
    module = mlir::parseSourceString<mlir::ModuleOp>(text, &context);
    if (!module || mlir::failed(mlir::verify(*module)))
      return 0;
  }
  checkRoundTrip(context, print(*module, /*generic=*/false), false, text);
  checkRoundTrip(context, print(*module, /*generic=*/true), true, text);
  return 0;
}
