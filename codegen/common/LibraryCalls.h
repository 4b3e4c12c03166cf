//===- LibraryCalls.h - Ops that run as runtime library kernels -*- C++ -*-===//
//
// The compiler side of the library-kernel calling convention
// (abi/LibraryCalls.h): how a top-level op of a planned function becomes a
// call of a library kernel. The attributes are built with the typed structs
// of that header, which every device's kernel decodes again.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_COMMON_LIBRARYCALLS_H
#define LOOM_CODEGEN_COMMON_LIBRARYCALLS_H

#include "abi/LibraryCalls.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

#include <string>
#include <vector>

namespace loom {

struct LibraryCall {
  std::string kernel;            // one of abi::libraryKernelNames()
  std::vector<mlir::Value> args; // present operands, then results
  abi::CallAttrs attrs;
};

/// The library call that computes `op`, or failure with an error on `op`
/// when no library kernel does (a loom.fusion is generated code, not a call).
mlir::FailureOr<LibraryCall> encodeLibraryCall(mlir::Operation *op);

/// loom.attention ("attention") and loom.attention_grad ("attention_grad");
/// encodeLibraryCall forwards to it (AttentionCalls.cpp).
mlir::FailureOr<LibraryCall> encodeAttentionCall(mlir::Operation *op);

} // namespace loom

#endif // LOOM_CODEGEN_COMMON_LIBRARYCALLS_H
