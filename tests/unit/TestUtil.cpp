//===- TestUtil.cpp - Helpers shared by Loom's unit tests -----------------===//

#include "TestUtil.h"

#include "ir/LoomDialect.h"
#include "runtime/Executable.h"

#include "mlir/Parser/Parser.h"
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

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

HostTensor randomIds(std::mt19937_64 &rng, int64_t vocab,
                     const std::vector<int64_t> &lengths, int64_t width,
                     bool withBos) {
  HostTensor t({int64_t(lengths.size()), width}, DType::I32);
  std::uniform_int_distribution<int64_t> id(4, vocab - 1);
  for (size_t b = 0; b < lengths.size(); ++b)
    for (int64_t j = 0; j < lengths[b]; ++j)
      t.data[b * width + j] = (withBos && j == 0) ? 2 : double(id(rng));
  return t;
}

double relativeError(const HostTensor &actual, const HostTensor &expected) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < actual.data.size(); ++i) {
    diff += (actual.data[i] - expected.data[i]) *
            (actual.data[i] - expected.data[i]);
    norm += expected.data[i] * expected.data[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

} // namespace loom::test
