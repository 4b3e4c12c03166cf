//===- InterpreterTestUtil.h - Interpreter test helpers ---------*- C++ -*-===//

#ifndef LOOM_TESTS_UNIT_INTERPRETERTESTUTIL_H
#define LOOM_TESTS_UNIT_INTERPRETERTESTUTIL_H

#include "TestUtil.h"

#include "ir/Interpreter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace loom::test {

using Values = std::vector<double>;

inline HostTensor f32(std::vector<int64_t> shape, Values data) {
  return HostTensor(std::move(shape), DType::F32, std::move(data));
}
inline HostTensor f64(std::vector<int64_t> shape, Values data) {
  return HostTensor(std::move(shape), DType::F64, std::move(data));
}
inline HostTensor i64(std::vector<int64_t> shape, Values data) {
  return HostTensor(std::move(shape), DType::I64, std::move(data));
}
inline HostTensor i32(std::vector<int64_t> shape, Values data) {
  return HostTensor(std::move(shape), DType::I32, std::move(data));
}

/// Parses `text` and runs `@main` on `args`.
inline llvm::Expected<std::vector<HostTensor>>
interpret(const std::string &text, std::vector<HostTensor> args,
          bool f64Mode = false, const char *name = "main") {
  auto ctx = makeContext();
  ctx->allowUnregisteredDialects();
  auto module = parse(*ctx, text);
  if (!module)
    return llvm::createStringError("does not parse");
  InterpreterOptions options;
  options.f64 = f64Mode;
  return Interpreter(*module, options).run(name, args);
}

/// Runs `@main` and expects it to succeed with one result.
inline HostTensor runOne(const std::string &text, std::vector<HostTensor> args,
                         bool f64Mode = false) {
  auto results = interpret(text, std::move(args), f64Mode);
  if (!results) {
    ADD_FAILURE() << llvm::toString(results.takeError());
    return HostTensor();
  }
  EXPECT_EQ(results->size(), 1u);
  return results->empty() ? HostTensor() : std::move(results->front());
}

/// Runs `@main` and expects it to fail; returns the message.
inline std::string runError(const std::string &text,
                            std::vector<HostTensor> args) {
  auto results = interpret(text, std::move(args));
  if (results) {
    ADD_FAILURE() << "expected an error";
    return "";
  }
  return llvm::toString(results.takeError());
}

/// Expects `t` to have `shape` and values within `tol` of `expected`.
inline void expectValues(const HostTensor &t, std::vector<int64_t> shape,
                         const Values &expected, double tol = 1e-12) {
  EXPECT_EQ(t.shape, shape);
  ASSERT_EQ(t.data.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i]))
      EXPECT_TRUE(std::isnan(t.data[i])) << "at " << i;
    else
      EXPECT_NEAR(t.data[i], expected[i], tol) << "at " << i;
  }
}

/// Row-major values 0.1*(i+1)*(-1)^i scaled by `scale`: distinct, signed.
inline Values ramp(int64_t n, double scale = 1.0) {
  Values v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = scale * 0.1 * (i + 1) * (i % 2 ? -1 : 1);
  return v;
}

} // namespace loom::test

#endif // LOOM_TESTS_UNIT_INTERPRETERTESTUTIL_H
