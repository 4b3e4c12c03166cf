//===- LibraryCalls.h - Ops that run as runtime library kernels -*- C++ -*-===//
//
// The compiler side of runtime/cpu/Kernels.h: how a top-level op of a planned
// function becomes a call of a library kernel. Each encoder documents the
// `ints` and `floats` it writes; the kernel of the same name reads them.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_CPU_LIBRARYCALLS_H
#define LOOM_CODEGEN_CPU_LIBRARYCALLS_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom {

struct LibraryCall {
  std::string kernel;            // a name runtime/cpu/Kernels.h registers
  std::vector<mlir::Value> args; // present operands, then results
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

/// The library call that computes `op`, or failure with an error on `op`
/// when no library kernel does (a loom.fusion is generated code, not a call).
mlir::FailureOr<LibraryCall> encodeLibraryCall(mlir::Operation *op);

/// loom.attention ("attention") and loom.attention_grad ("attention_grad");
/// encodeLibraryCall forwards to it (AttentionCalls.cpp).
mlir::FailureOr<LibraryCall> encodeAttentionCall(mlir::Operation *op);

} // namespace loom

#endif // LOOM_CODEGEN_CPU_LIBRARYCALLS_H
