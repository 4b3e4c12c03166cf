//===- GradientCheck.h - Finite-difference checks of gradients --*- C++ -*-===//
//
// A check builds `loss(args) = reduce_sum(y * w)` around a snippet that
// computes `%y`, with `w` a fixed random constant (so every element of `y`
// matters with a different weight), runs `loom-autodiff`, and holds the
// gradients `@loss_grad` returns against central differences of `@loss`, both
// evaluated by the reference interpreter in double precision.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TESTS_UNIT_GRADIENTCHECK_H
#define LOOM_TESTS_UNIT_GRADIENTCHECK_H

#include "TestUtil.h"

#include "ir/Interpreter.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace loom::test {

/// `tensor<2x3xf32>` for shape {2, 3}; a negative size prints as `?`.
inline std::string tensorType(const std::vector<int64_t> &shape,
                              const std::string &element = "f32") {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s + element + ">";
}

class GradientCheck {
public:
  /// `seed` fixes the random arguments and weights of this check.
  explicit GradientCheck(unsigned seed) : rng(seed) {}

  /// A float argument with elements uniform in [lo, hi].
  GradientCheck &uniform(const std::string &name, std::vector<int64_t> shape,
                         double lo = -1.0, double hi = 1.0,
                         DType kind = DType::F32) {
    std::uniform_real_distribution<double> dist(lo, hi);
    std::vector<double> data(shapeNumel(shape));
    for (double &v : data)
      v = dist(rng);
    return values(name, std::move(shape), std::move(data), kind);
  }

  /// A float argument with magnitudes in [lo, hi] and random signs: inputs
  /// kept away from a kink at 0 (relu, abs).
  GradientCheck &awayFromZero(const std::string &name,
                              std::vector<int64_t> shape, double lo,
                              double hi) {
    std::uniform_real_distribution<double> dist(lo, hi);
    std::bernoulli_distribution negative(0.5);
    std::vector<double> data(shapeNumel(shape));
    for (double &v : data)
      v = negative(rng) ? -dist(rng) : dist(rng);
    return values(name, std::move(shape), std::move(data));
  }

  /// An argument with the given elements. `typeShape` overrides the shape
  /// written in the signature (to declare dynamic dims).
  GradientCheck &values(const std::string &name, std::vector<int64_t> shape,
                        std::vector<double> data, DType kind = DType::F32,
                        std::vector<int64_t> typeShape = {}) {
    Arg arg{name, HostTensor(shape, kind, std::move(data)),
            typeShape.empty() ? shape : typeShape};
    args.push_back(std::move(arg));
    return *this;
  }

  /// A line of the snippet; the snippet must define `%y` (and may not use
  /// names starting with `%check_`).
  GradientCheck &op(const std::string &line) {
    body += "  " + line + "\n";
    return *this;
  }

  /// Builds the loss around `%y` of shape `shape` (static) written as
  /// `yType` (defaults to the static type), differentiates it and compares.
  void check(const std::vector<int64_t> &shape, std::string element = "f32",
             std::string yType = "");

private:
  struct Arg {
    std::string name;
    HostTensor value;
    std::vector<int64_t> typeShape;
  };

  std::string moduleText(const std::vector<int64_t> &shape,
                         const std::string &element, const std::string &yType);
  std::string denseLiteral(const std::vector<int64_t> &shape,
                           const std::vector<double> &data);

  std::mt19937 rng;
  std::vector<Arg> args;
  std::string body;
};

inline std::string
GradientCheck::denseLiteral(const std::vector<int64_t> &shape,
                            const std::vector<double> &data) {
  // Nested brackets, one level per dim; %.17e keeps every double exact.
  std::string s;
  size_t next = 0;
  auto emit = [&](auto &&self, size_t dim) -> void {
    if (dim == shape.size()) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.17e", data[next++]);
      s += buf;
      return;
    }
    s += "[";
    for (int64_t i = 0; i < shape[dim]; ++i) {
      if (i)
        s += ", ";
      self(self, dim + 1);
    }
    s += "]";
  };
  emit(emit, 0);
  return s;
}

inline std::string GradientCheck::moduleText(const std::vector<int64_t> &shape,
                                             const std::string &element,
                                             const std::string &yType) {
  std::string y = yType.empty() ? tensorType(shape, element) : yType;
  std::string w = tensorType(shape, element);
  std::string loss = tensorType({}, element);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> weights(shapeNumel(shape));
  for (double &v : weights)
    v = dist(rng);

  std::string text = "func.func @loss(";
  for (size_t i = 0; i < args.size(); ++i)
    text += (i ? ", %" : "%") + args[i].name + ": " +
            tensorType(args[i].typeShape, dtypeName(args[i].value.kind));
  text += ") -> " + loss + " attributes {loom.differentiable} {\n" + body;
  text += "  %check_w = loom.constant dense<" + denseLiteral(shape, weights) +
          "> : " + w + "\n";
  // The product takes the static shape of `w`.
  text += "  %check_p = loom.mul %y, %check_w : (" + y + ", " + w + ") -> " +
          w + "\n";
  if (shape.empty()) {
    text += "  return %check_p : " + loss + "\n}\n";
    return text;
  }
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i)
    dims += (i ? ", " : "") + std::to_string(i);
  text += "  %check_l = loom.reduce_sum %check_p [" + dims + "] : (" + w +
          ") -> " + loss + "\n  return %check_l : " + loss + "\n}\n";
  return text;
}

inline double norm(const std::vector<double> &v) {
  double s = 0;
  for (double x : v)
    s += x * x;
  return std::sqrt(s);
}

inline void GradientCheck::check(const std::vector<int64_t> &shape,
                                 std::string element, std::string yType) {
  std::string text = moduleText(shape, element, yType);
  SCOPED_TRACE(text);
  auto ctx = makeContext();
  auto module = parse(*ctx, text);
  ASSERT_TRUE(module);
  mlir::PassManager pm(ctx.get());
  pm.addPass(createLoomAutodiff());
  ASSERT_TRUE(mlir::succeeded(pm.run(*module))) << "loom-autodiff failed";

  InterpreterOptions options;
  options.f64 = true;
  Interpreter interp(*module, options);
  std::vector<HostTensor> inputs;
  for (const Arg &a : args)
    inputs.push_back(a.value);
  auto evalLoss = [&](const std::vector<HostTensor> &in) -> double {
    auto out = interp.run("loss", in);
    if (!out) {
      ADD_FAILURE() << "@loss: " << llvm::toString(out.takeError());
      return NAN;
    }
    return out->at(0).data.at(0);
  };

  auto grads = interp.run("loss_grad", inputs);
  ASSERT_TRUE(!!grads) << "@loss_grad: " << llvm::toString(grads.takeError());
  double loss = evalLoss(inputs);
  ASSERT_FALSE(grads->empty());
  EXPECT_NEAR(grads->front().data.at(0), loss, 1e-12 * (1 + std::fabs(loss)))
      << "@loss_grad's loss differs from @loss";

  size_t next = 1;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!isFloatDType(args[i].value.kind))
      continue;
    ASSERT_LT(next, grads->size()) << "no gradient for %" << args[i].name;
    const HostTensor &grad = (*grads)[next++];
    ASSERT_EQ(grad.shape, args[i].value.shape)
        << "gradient of %" << args[i].name << " has the wrong shape";
    std::vector<double> fd(grad.numel()), diff(grad.numel());
    for (int64_t j = 0; j < grad.numel(); ++j) {
      std::vector<HostTensor> in = inputs;
      double x = inputs[i].data[j];
      double h = 1e-6 * std::max(1.0, std::fabs(x));
      double up = x + h, down = x - h;
      in[i].data[j] = up;
      double fUp = evalLoss(in);
      in[i].data[j] = down;
      double fDown = evalLoss(in);
      fd[j] = (fUp - fDown) / (up - down);
      diff[j] = grad.data[j] - fd[j];
    }
    // Norm-wise relative error; the floor only matters for an all-zero
    // gradient, which differences reproduce exactly.
    double err = norm(diff) / std::max(norm(fd), 1e-12);
    std::string detail;
    for (int64_t j = 0; j < grad.numel() && j < 64; ++j) {
      char line[96];
      std::snprintf(line, sizeof(line),
                    "  [%lld] autodiff %.10g, differences %.10g\n",
                    static_cast<long long>(j), grad.data[j], fd[j]);
      detail += line;
    }
    EXPECT_LT(err, 1e-6) << "gradient of %" << args[i].name
                         << ": relative error " << err << "\n"
                         << detail;
  }
  EXPECT_EQ(next, grads->size()) << "@loss_grad returns extra results";
}

} // namespace loom::test

#endif // LOOM_TESTS_UNIT_GRADIENTCHECK_H
