//===- TestUtil.cpp - Helpers shared by Loom's unit tests -----------------===//

#include "TestUtil.h"

#include "ir/LoomDialect.h"

#include "mlir/Parser/Parser.h"
#include <gtest/gtest.h>

using namespace mlir;

namespace loom::test {

std::unique_ptr<MLIRContext> makeContext() {
  auto ctx = std::make_unique<MLIRContext>();
  ctx->loadDialect<LoomDialect, func::FuncDialect>();
  return ctx;
}

OwningOpRef<ModuleOp> parse(MLIRContext &ctx, const std::string &text) {
  std::string diag;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    diag += d.str() + "\n";
    return success();
  });
  auto module = parseSourceString<ModuleOp>(text, &ctx);
  EXPECT_TRUE(module) << "does not parse:\n" << diag << text;
  return module;
}

} // namespace loom::test
