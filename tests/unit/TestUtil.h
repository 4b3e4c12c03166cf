//===- TestUtil.h - Helpers shared by Loom's unit tests ---------*- C++ -*-===//

#ifndef LOOM_TESTS_UNIT_TESTUTIL_H
#define LOOM_TESTS_UNIT_TESTUTIL_H

#include "DeviceTestUtil.h"
#include "ir/Interpreter.h"
#include "runtime/Session.h"

#include "mlir/IR/BuiltinOps.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace loom::test {

/// A context with Loom's dialect and func loaded.
std::unique_ptr<mlir::MLIRContext> makeContext();

/// Parses `text` as a module; fails the current test (and returns null) when
/// it does not parse or verify.
mlir::OwningOpRef<mlir::ModuleOp> parse(mlir::MLIRContext &ctx,
                                        const std::string &text);

/// A [lengths.size(), width] i32 batch of ids drawn from [4, vocab), each
/// row `lengths[b]` long and padded with 0; with `withBos` each row starts
/// with bos (2).
HostTensor randomIds(std::mt19937_64 &rng, int64_t vocab,
                     const std::vector<int64_t> &lengths, int64_t width,
                     bool withBos);

/// sqrt(sum (a - b)^2) / sqrt(sum b^2): how far `actual` is from
/// `expected`, relative to its size.
double relativeError(const HostTensor &actual, const HostTensor &expected);

} // namespace loom::test

#endif // LOOM_TESTS_UNIT_TESTUTIL_H
