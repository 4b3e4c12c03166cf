//===- TestUtil.h - Helpers shared by Loom's unit tests ---------*- C++ -*-===//

#ifndef LOOM_TESTS_UNIT_TESTUTIL_H
#define LOOM_TESTS_UNIT_TESTUTIL_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace loom::test {

/// A context with Loom's dialect and func loaded.
std::unique_ptr<mlir::MLIRContext> makeContext();

/// Parses `text` as a module; fails the current test (and returns null) when
/// it does not parse or verify.
mlir::OwningOpRef<mlir::ModuleOp> parse(mlir::MLIRContext &ctx,
                                        const std::string &text);

} // namespace loom::test

#endif // LOOM_TESTS_UNIT_TESTUTIL_H
