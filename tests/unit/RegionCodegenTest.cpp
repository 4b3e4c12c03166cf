//===- RegionCodegenTest.cpp - Generated CPU kernels, region by region ----===//
//
// Hand-written regions compiled into a shared object, loaded, and held
// against the interpreter (1e-5 relative to the element and the tensor's
// RMS) over all rows, over two row ranges (identical when the kernel is
// parallel), and with results written over operands of the same shape:
// masked softmax broadcasting its mask, layer norms and log-softmax on odd
// row lengths, reductions over every element (stages), dropout bit for bit,
// compare/select/casts and integers, every math op, broadcasts known only
// at run time, results smaller than the domain, f16, bf16 casts, unsupported
// ops.
// RegionCodegenModelTest.cpp does the same for every region of the models.
//
//===----------------------------------------------------------------------===//

#include "RegionCodegenTestUtil.h"

#include <regex>

using namespace mlir;
using namespace loom;
using namespace loom::regiontest;

namespace {

TEST(RegionCodegen, MaskedSoftmaxBroadcastsTheMask) {
  // Scores [B, H, T, S] plus a padding mask [B, 1, 1, S] (-1e9 where
  // masked, one batch entry fully masked), softmax over S = 37 (a vector
  // loop and a remainder), and the probabilities times 2 as a second result.
  std::mt19937_64 rng(1);
  HostTensor scores = randomTensor(rng, {2, 3, 5, 37}, DType::F32, 3.0);
  HostTensor mask({2, 1, 1, 37}, DType::F32);
  for (int64_t s = 0; s < 37; ++s) {
    mask.data[s] = s % 5 == 0 ? -1e9 : 0.0;
    mask.data[37 + s] = -1e9;
  }
  checkText(R"mlir(
    func.func @f(%x: tensor<?x3x?x?xf32>, %m: tensor<?x1x1x?xf32>) -> (tensor<?x3x?x?xf32>, tensor<?x3x?x?xf32>) {
      %r:2 = loom.fusion(%x, %m) : (tensor<?x3x?x?xf32>, tensor<?x1x1x?xf32>) -> (tensor<?x3x?x?xf32>, tensor<?x3x?x?xf32>) {
      ^bb0(%a: tensor<?x3x?x?xf32>, %b: tensor<?x1x1x?xf32>):
        %s = loom.add %a, %b : (tensor<?x3x?x?xf32>, tensor<?x1x1x?xf32>) -> tensor<?x3x?x?xf32>
        %p = loom.softmax %s {axis = 3 : i64} : (tensor<?x3x?x?xf32>) -> tensor<?x3x?x?xf32>
        %two = loom.constant dense<2.0> : tensor<f32>
        %q = loom.mul %p, %two : (tensor<?x3x?x?xf32>, tensor<f32>) -> tensor<?x3x?x?xf32>
        loom.yield %p, %q : tensor<?x3x?x?xf32>, tensor<?x3x?x?xf32>
      }
      return %r#0, %r#1 : tensor<?x3x?x?xf32>, tensor<?x3x?x?xf32>
    })mlir",
            {{scores, mask}});
}

TEST(RegionCodegen, LayerNormsAndLogSoftmax) {
  std::mt19937_64 rng(2);
  HostTensor x = randomTensor(rng, {4, 7, 45}, DType::F32, 2.0);
  HostTensor r = randomTensor(rng, {4, 7, 45});
  HostTensor g = randomTensor(rng, {45}), b = randomTensor(rng, {45});
  for (double &v : x.data)
    v += 3.0; // A mean far from 0, as residual streams have.
  checkText(R"mlir(
    func.func @f(%x: tensor<?x?x45xf32>, %r: tensor<?x?x45xf32>, %g: tensor<45xf32>, %b: tensor<45xf32>) {
      %0 = loom.fusion(%x, %g, %b) : (tensor<?x?x45xf32>, tensor<45xf32>, tensor<45xf32>) -> tensor<?x?x45xf32> {
      ^bb0(%a: tensor<?x?x45xf32>, %ga: tensor<45xf32>, %ba: tensor<45xf32>):
        %y = loom.layer_norm %a, %ga, %ba {epsilon = 1.0e-5 : f64} : (tensor<?x?x45xf32>, tensor<45xf32>, tensor<45xf32>) -> tensor<?x?x45xf32>
        loom.yield %y : tensor<?x?x45xf32>
      }
      %1:2 = loom.fusion(%x, %r, %g, %b) : (tensor<?x?x45xf32>, tensor<?x?x45xf32>, tensor<45xf32>, tensor<45xf32>) -> (tensor<?x?x45xf32>, tensor<?x?x45xf32>) {
      ^bb0(%a: tensor<?x?x45xf32>, %ra: tensor<?x?x45xf32>, %ga: tensor<45xf32>, %ba: tensor<45xf32>):
        %s, %y = loom.add_layer_norm %a, %ra, %ga, %ba {epsilon = 1.0e-5 : f64} : (tensor<?x?x45xf32>, tensor<?x?x45xf32>, tensor<45xf32>, tensor<45xf32>) -> (tensor<?x?x45xf32>, tensor<?x?x45xf32>)
        loom.yield %s, %y : tensor<?x?x45xf32>, tensor<?x?x45xf32>
      }
      %2 = loom.fusion(%x) : (tensor<?x?x45xf32>) -> tensor<?x?x45xf32> {
      ^bb0(%a: tensor<?x?x45xf32>):
        %y = loom.log_softmax %a {axis = 2 : i64} : (tensor<?x?x45xf32>) -> tensor<?x?x45xf32>
        loom.yield %y : tensor<?x?x45xf32>
      }
      return
    })mlir",
            {{x, g, b}, {x, r, g, b}, {x}});
}

TEST(RegionCodegen, ReductionsOverEveryElementRunInStages) {
  // A mean over every element, used by the elements again (a second pass
  // over the rows), and a masked sum as the loss regions compute it.
  std::mt19937_64 rng(3);
  HostTensor x = randomTensor(rng, {3, 5, 11});
  HostTensor ids({3, 7}, DType::I32);
  for (double &v : ids.data)
    v = double(rng() % 4);
  HostTensor loss = randomTensor(rng, {3, 7});
  checkText(R"mlir(
    func.func @f(%x: tensor<?x?x11xf32>, %ids: tensor<?x?xi32>, %l: tensor<?x?xf32>) {
      %0:3 = loom.fusion(%x) : (tensor<?x?x11xf32>) -> (tensor<f32>, tensor<?x?x11xf32>, tensor<1x1x1xf32>) {
      ^bb0(%a: tensor<?x?x11xf32>):
        %m = loom.reduce_mean %a [0, 1, 2] : (tensor<?x?x11xf32>) -> tensor<f32>
        %c = loom.sub %a, %m : (tensor<?x?x11xf32>, tensor<f32>) -> tensor<?x?x11xf32>
        %sq = loom.mul %c, %c : (tensor<?x?x11xf32>, tensor<?x?x11xf32>) -> tensor<?x?x11xf32>
        %v = loom.reduce_max %sq [0, 1, 2] keep_dims : (tensor<?x?x11xf32>) -> tensor<1x1x1xf32>
        loom.yield %m, %c, %v : tensor<f32>, tensor<?x?x11xf32>, tensor<1x1x1xf32>
      }
      %1:2 = loom.fusion(%ids, %l) : (tensor<?x?xi32>, tensor<?x?xf32>) -> (tensor<f32>, tensor<?x?xf32>) {
      ^bb0(%i: tensor<?x?xi32>, %la: tensor<?x?xf32>):
        %zero = loom.constant dense<0> : tensor<i32>
        %keep = loom.compare ne, %i, %zero : (tensor<?x?xi32>, tensor<i32>) -> tensor<?x?xi1>
        %w = loom.cast %keep : tensor<?x?xi1> to tensor<?x?xf32>
        %n = loom.reduce_sum %w [0, 1] : (tensor<?x?xf32>) -> tensor<f32>
        %one = loom.constant dense<1.0> : tensor<f32>
        %d = loom.maximum %n, %one : (tensor<f32>, tensor<f32>) -> tensor<f32>
        %wl = loom.mul %la, %w : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
        %s = loom.reduce_sum %wl [0, 1] : (tensor<?x?xf32>) -> tensor<f32>
        %mean = loom.div %s, %d : (tensor<f32>, tensor<f32>) -> tensor<f32>
        %inv = loom.div %one, %d : (tensor<f32>, tensor<f32>) -> tensor<f32>
        %g = loom.broadcast_as %inv, %la : (tensor<f32>, tensor<?x?xf32>) -> tensor<?x?xf32>
        loom.yield %mean, %g : tensor<f32>, tensor<?x?xf32>
      }
      return
    })mlir",
            {{x}, {ids, loss}});
}

TEST(RegionCodegen, DropoutMatchesTheInterpreterBitForBit) {
  std::mt19937_64 rng(4);
  HostTensor x = randomTensor(rng, {6, 4, 19});
  HostTensor y = randomTensor(rng, {6, 4, 1});
  HostTensor seed = HostTensor::scalar(-123456789, DType::I64);
  auto ctx = test::makeContext();
  auto module = test::parse(*ctx, R"mlir(
    func.func @f(%x: tensor<?x4x19xf32>, %y: tensor<?x4x1xf32>, %seed: tensor<i64>) {
      %0:2 = loom.fusion(%x, %y, %seed) : (tensor<?x4x19xf32>, tensor<?x4x1xf32>, tensor<i64>) -> (tensor<?x4x19xf32>, tensor<?x4x1xf32>) {
      ^bb0(%a: tensor<?x4x19xf32>, %b: tensor<?x4x1xf32>, %s: tensor<i64>):
        %d = loom.dropout %a, %s {rate = 0.5 : f64, offset = 7 : i64} : (tensor<?x4x19xf32>, tensor<i64>) -> tensor<?x4x19xf32>
        %e = loom.dropout %b, %s {rate = 0.5 : f64, offset = 9 : i64} : (tensor<?x4x1xf32>, tensor<i64>) -> tensor<?x4x1xf32>
        loom.yield %d, %e : tensor<?x4x19xf32>, tensor<?x4x1xf32>
      }
      return
    })mlir");
  ASSERT_TRUE(module);
  CpuRegionCodegen codegen(ctx.get());
  FusionOp op = fusionsOf(*module).front();
  auto kernel = codegen.addRegion(op);
  ASSERT_TRUE(succeeded(kernel));
  std::string error;
  auto so = codegen.emitSharedObject(error);
  ASSERT_TRUE(succeeded(so)) << error;
  LoadedKernels loaded(*so);
  ASSERT_TRUE(loaded.handle) << loaded.error;
  std::vector<HostTensor> operands = {x, y, seed};
  std::vector<HostTensor> expected = reference(op, operands);
  std::vector<HostTensor> actual =
      runKernel(loaded.get(kernel->symbol), operands, expected);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_TRUE(identical(actual[k], expected[k])) << "result #" << k;
    int64_t zeros = 0;
    for (double v : actual[k].data)
      zeros += v == 0;
    // Rate 0.5: some of each kept and dropped.
    EXPECT_GT(zeros, 0);
    EXPECT_LT(zeros, actual[k].numel());
  }
}

TEST(RegionCodegen, CompareSelectCastAndIntegers) {
  std::mt19937_64 rng(5);
  HostTensor x = randomTensor(rng, {5, 23}), y = randomTensor(rng, {23});
  HostTensor ids({5, 23}, DType::I64);
  for (double &v : ids.data)
    v = double(int64_t(rng() % 9) - 4);
  checkText(R"mlir(
    func.func @f(%x: tensor<?x23xf32>, %y: tensor<23xf32>, %ids: tensor<?x23xi64>) {
      %0:4 = loom.fusion(%x, %y, %ids) : (tensor<?x23xf32>, tensor<23xf32>, tensor<?x23xi64>) -> (tensor<?x23xf32>, tensor<?x23xi1>, tensor<?x23xi64>, tensor<?x23xi32>) {
      ^bb0(%a: tensor<?x23xf32>, %b: tensor<23xf32>, %i: tensor<?x23xi64>):
        %c = loom.compare gt, %a, %b : (tensor<?x23xf32>, tensor<23xf32>) -> tensor<?x23xi1>
        %zero = loom.constant dense<0.0> : tensor<f32>
        %s = loom.select %c, %a, %zero : (tensor<?x23xi1>, tensor<?x23xf32>, tensor<f32>) -> tensor<?x23xf32>
        %f = loom.cast %c : tensor<?x23xi1> to tensor<?x23xf32>
        %t = loom.add %s, %f : (tensor<?x23xf32>, tensor<?x23xf32>) -> tensor<?x23xf32>
        %three = loom.constant dense<3> : tensor<i64>
        %p = loom.mul %i, %three : (tensor<?x23xi64>, tensor<i64>) -> tensor<?x23xi64>
        %big = loom.constant dense<1.0e10> : tensor<f32>
        %scaled = loom.mul %a, %big : (tensor<?x23xf32>, tensor<f32>) -> tensor<?x23xf32>
        %n = loom.cast %scaled : tensor<?x23xf32> to tensor<?x23xi32>
        loom.yield %t, %c, %p, %n : tensor<?x23xf32>, tensor<?x23xi1>, tensor<?x23xi64>, tensor<?x23xi32>
      }
      return
    })mlir",
            {{x, y, ids}});
}

TEST(RegionCodegen, MathMatchesTheInterpreter) {
  // Every unary op over a wide range, including what sits near the edges
  // of the polynomial approximations.
  std::mt19937_64 rng(6);
  HostTensor x = randomTensor(rng, {9, 29}, DType::F32, 4.0);
  HostTensor pos = x;
  for (double &v : pos.data)
    v = std::fabs(v) + 1e-3;
  x.data[0] = -100;
  x.data[1] = 100;
  x.data[2] = 0;
  x.data[3] = -90;
  x.data[4] = 88;
  x.data[5] = 1e-20;
  std::string body;
  std::string results, types;
  const char *ops[] = {"neg",  "abs",  "exp", "tanh", "sigmoid",
                       "relu", "gelu", "erf", "sin",  "cos"};
  for (const char *op : ops) {
    body += std::string("%") + op + " = loom." + op +
            " %a : (tensor<9x29xf32>) -> tensor<9x29xf32>\n";
    results += std::string(results.empty() ? "" : ", ") + "%" + op;
    types += std::string(types.empty() ? "" : ", ") + "tensor<9x29xf32>";
  }
  for (const char *op : {"log", "sqrt", "rsqrt"}) {
    body += std::string("%") + op + " = loom." + op +
            " %p : (tensor<9x29xf32>) -> tensor<9x29xf32>\n";
    results += std::string(", %") + op;
    types += ", tensor<9x29xf32>";
  }
  body += "%pow = loom.pow %p, %a : (tensor<9x29xf32>, tensor<9x29xf32>) -> "
          "tensor<9x29xf32>\n";
  results += ", %pow";
  types += ", tensor<9x29xf32>";
  checkText(
      "func.func @f(%x: tensor<9x29xf32>, %y: tensor<9x29xf32>) {\n"
      "%0:14 = loom.fusion(%x, %y) : (tensor<9x29xf32>, "
      "tensor<9x29xf32>) -> (" +
          types + ") {\n^bb0(%a: tensor<9x29xf32>, %p: tensor<9x29xf32>):\n" +
          body + "loom.yield " + results + " : " + types + "\n}\nreturn\n}",
      {{x, pos}});
}

TEST(RegionCodegen, GpuMathMatchesTheInterpreterOnTheCpu) {
  // GPU kernels link nothing: sin, cos and pow are arithmetic there
  // (codegen/common/MathExpansion.h), which the CPU computes too when its
  // kernels do not call the C library. Sinusoidal positions reach arguments of
  // a thousand and more, where a reduction by one float's 2*pi would be off by
  // 3e-5.
  std::mt19937_64 rng(7);
  HostTensor x = randomTensor(rng, {16, 33}, DType::F32, 4.0);
  HostTensor wide = x;
  for (size_t i = 0; i < wide.data.size(); ++i)
    wide.data[i] = float((double(i) - 200.0) * 7.77); // -1554 .. 2548
  HostTensor pos = x;
  for (double &v : pos.data)
    v = std::fabs(v) * 3 + 1e-3;
  pos.data[0] = 0;
  pos.data[1] = 10000; // the positional encoding's base
  std::string body, results, types;
  auto add = [&](const std::string &line, const std::string &name) {
    body += line + "\n";
    results += std::string(results.empty() ? "" : ", ") + "%" + name;
    types += std::string(types.empty() ? "" : ", ") + "tensor<16x33xf32>";
  };
  const std::string t = " : (tensor<16x33xf32>) -> tensor<16x33xf32>";
  add("%sin = loom.sin %w" + t, "sin");
  add("%cos = loom.cos %w" + t, "cos");
  add("%sinx = loom.sin %a" + t, "sinx");
  add("%cosx = loom.cos %a" + t, "cosx");
  add("%exp = loom.exp %a" + t, "exp");
  add("%tanh = loom.tanh %a" + t, "tanh");
  add("%erf = loom.erf %a" + t, "erf");
  add("%log = loom.log %p" + t, "log");
  add("%pow = loom.pow %p, %a : (tensor<16x33xf32>, tensor<16x33xf32>) -> "
      "tensor<16x33xf32>",
      "pow");
  cpu::CodegenTarget target = cpu::hostTarget();
  target.libm = false;
  checkText("func.func @f(%x: tensor<16x33xf32>, %y: tensor<16x33xf32>, "
            "%z: tensor<16x33xf32>) {\n"
            "%0:9 = loom.fusion(%x, %y, %z) : (tensor<16x33xf32>, "
            "tensor<16x33xf32>, tensor<16x33xf32>) -> (" +
                types +
                ") {\n^bb0(%a: tensor<16x33xf32>, %w: tensor<16x33xf32>, "
                "%p: tensor<16x33xf32>):\n" +
                body + "loom.yield " + results + " : " + types +
                "\n}\nreturn\n}",
            {{x, wide, pos}}, 1e-5, nullptr, target);
}

TEST(RegionCodegen, DoublePrecisionMath) {
  // f64 has no polynomial approximations: exp and log become LLVM's
  // intrinsics, tanh and erf libm calls.
  std::mt19937_64 rng(10);
  HostTensor x = randomTensor(rng, {3, 11}, DType::F64, 2.0);
  HostTensor pos = x;
  for (double &v : pos.data)
    v = std::fabs(v) + 0.1;
  checkText(R"mlir(
    func.func @f(%x: tensor<?x11xf64>, %p: tensor<?x11xf64>) {
      %0:6 = loom.fusion(%x, %p) : (tensor<?x11xf64>, tensor<?x11xf64>) -> (tensor<?x11xf64>, tensor<?x11xf64>, tensor<?x11xf64>, tensor<?x11xf64>, tensor<?x11xf64>, tensor<?x1xf64>) {
      ^bb0(%a: tensor<?x11xf64>, %b: tensor<?x11xf64>):
        %t = loom.tanh %a : (tensor<?x11xf64>) -> tensor<?x11xf64>
        %e = loom.erf %a : (tensor<?x11xf64>) -> tensor<?x11xf64>
        %g = loom.gelu %a : (tensor<?x11xf64>) -> tensor<?x11xf64>
        %s = loom.sigmoid %a : (tensor<?x11xf64>) -> tensor<?x11xf64>
        %l = loom.log %b : (tensor<?x11xf64>) -> tensor<?x11xf64>
        %ls = loom.log_softmax %a {axis = 1 : i64} : (tensor<?x11xf64>) -> tensor<?x11xf64>
        %m = loom.reduce_mean %ls [1] keep_dims : (tensor<?x11xf64>) -> tensor<?x1xf64>
        loom.yield %t, %e, %g, %s, %l, %m : tensor<?x11xf64>, tensor<?x11xf64>, tensor<?x11xf64>, tensor<?x11xf64>, tensor<?x11xf64>, tensor<?x1xf64>
      }
      return
    })mlir",
            {{x, pos}}, 1e-12);
}

TEST(RegionCodegen, BroadcastsKnownOnlyAtRunTime) {
  // The same region twice: once with every operand as wide as the domain,
  // once with %z of size 1 along columns (its type says `?`), which sends
  // the rows through the strided scalar loop. %x broadcasts over rows at
  // run time, %y is one value per row, %w one row for all.
  std::mt19937_64 rng(7);
  HostTensor x = randomTensor(rng, {4, 1, 13}),
             y = randomTensor(rng, {4, 6, 1});
  HostTensor wide = randomTensor(rng, {4, 6, 13}),
             narrow = randomTensor(rng, {4, 6, 1});
  HostTensor w = randomTensor(rng, {13});
  std::string region = R"mlir(
      %NAME:2 = loom.fusion(%x, %y, %z, %w) : (tensor<?x?x13xf32>, tensor<?x?x1xf32>, tensor<?x?x?xf32>, tensor<13xf32>) -> (tensor<?x?x13xf32>, tensor<?x?x13xf32>) {
      ^bb0(%a: tensor<?x?x13xf32>, %b: tensor<?x?x1xf32>, %c: tensor<?x?x?xf32>, %d: tensor<13xf32>):
        %p = loom.mul %a, %b : (tensor<?x?x13xf32>, tensor<?x?x1xf32>) -> tensor<?x?x13xf32>
        %q = loom.add %p, %c : (tensor<?x?x13xf32>, tensor<?x?x?xf32>) -> tensor<?x?x13xf32>
        %r = loom.sub %q, %d : (tensor<?x?x13xf32>, tensor<13xf32>) -> tensor<?x?x13xf32>
        %m = loom.reduce_max %r [2] keep_dims : (tensor<?x?x13xf32>) -> tensor<?x?x1xf32>
        %t = loom.div %r, %m : (tensor<?x?x13xf32>, tensor<?x?x1xf32>) -> tensor<?x?x13xf32>
        loom.yield %r, %t : tensor<?x?x13xf32>, tensor<?x?x13xf32>
      })mlir";
  std::vector<RegionKernel> kernels;
  checkText("func.func @f(%x: tensor<?x?x13xf32>, %y: tensor<?x?x1xf32>, "
            "%z: tensor<?x?x?xf32>, %w: tensor<13xf32>) {" +
                std::regex_replace(region, std::regex("NAME"), "0") +
                std::regex_replace(region, std::regex("NAME"), "1") +
                "\nreturn\n}",
            {{x, y, wide, w}, {x, y, narrow, w}}, 1e-5, &kernels);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].symbol, kernels[1].symbol);
  EXPECT_TRUE(kernels[0].parallel);
}

TEST(RegionCodegen, ResultsSmallerThanTheDomainMayBeWrittenInPlace) {
  // %c is [B, 1, 8] in a [B, 5, 8] domain: five rows compute each of its
  // elements. Written over %a, only the last of them may write it, and the
  // kernel may not split rows.
  std::mt19937_64 rng(8);
  HostTensor a = randomTensor(rng, {3, 1, 8}), b = randomTensor(rng, {3, 5, 8});
  std::vector<RegionKernel> kernels;
  checkText(R"mlir(
    func.func @f(%a: tensor<?x1x8xf32>, %b: tensor<?x5x8xf32>) {
      %0:2 = loom.fusion(%a, %b) : (tensor<?x1x8xf32>, tensor<?x5x8xf32>) -> (tensor<?x1x8xf32>, tensor<?x5x8xf32>) {
      ^bb0(%x: tensor<?x1x8xf32>, %y: tensor<?x5x8xf32>):
        %two = loom.constant dense<2.0> : tensor<f32>
        %c = loom.mul %x, %two : (tensor<?x1x8xf32>, tensor<f32>) -> tensor<?x1x8xf32>
        %d = loom.add %c, %y : (tensor<?x1x8xf32>, tensor<?x5x8xf32>) -> tensor<?x5x8xf32>
        loom.yield %c, %d : tensor<?x1x8xf32>, tensor<?x5x8xf32>
      }
      return
    })mlir",
            {{a, b}}, 1e-5, &kernels);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_FALSE(kernels[0].parallel);
}

TEST(RegionCodegen, HalfPrecisionRoundsLikeTheInterpreter) {
  std::mt19937_64 rng(9);
  HostTensor x = randomTensor(rng, {5, 12}, DType::F16);
  checkText(R"mlir(
    func.func @f(%x: tensor<?x12xf16>) {
      %0:2 = loom.fusion(%x) : (tensor<?x12xf16>) -> (tensor<?x12xf16>, tensor<?x1xf32>) {
      ^bb0(%a: tensor<?x12xf16>):
        %e = loom.exp %a : (tensor<?x12xf16>) -> tensor<?x12xf16>
        %c = loom.cast %e : tensor<?x12xf16> to tensor<?x12xf32>
        %s = loom.reduce_sum %c [1] keep_dims : (tensor<?x12xf32>) -> tensor<?x1xf32>
        loom.yield %e, %s : tensor<?x12xf16>, tensor<?x1xf32>
      }
      return
    })mlir",
            {{x}});
}

TEST(RegionCodegen, Bf16CastsRoundToNearestEven) {
  // What mixed-precision training does before every product: an f32
  // activation rounded to bf16 (ties to even, NaN kept, overflow to inf)
  // in the kernel that produced it, and a bf16 value widened back.
  std::mt19937_64 rng(10);
  HostTensor x = randomTensor(rng, {6, 37}, DType::F32, 4.0);
  x.data[0] = 1.0 + 1.0 / 256;       // a tie: rounds to even (1.0)
  x.data[1] = 1.0 + 3.0 / 256;       // a tie: rounds to even (1 + 4/256)
  x.data[2] = 3.3895313892515355e38; // rounds up past bf16's largest: inf
  x.data[3] = -0.0;
  x.data[4] = 1e-40; // subnormal in f32
  x.data[5] = std::numeric_limits<double>::quiet_NaN();
  checkText(R"mlir(
    func.func @f(%x: tensor<?x37xf32>) {
      %0:2 = loom.fusion(%x) : (tensor<?x37xf32>) -> (tensor<?x37xbf16>, tensor<?x37xf32>) {
      ^bb0(%a: tensor<?x37xf32>):
        %r = loom.relu %a : (tensor<?x37xf32>) -> tensor<?x37xf32>
        %h = loom.cast %a : tensor<?x37xf32> to tensor<?x37xbf16>
        %w = loom.cast %h : tensor<?x37xbf16> to tensor<?x37xf32>
        %s = loom.add %w, %r : (tensor<?x37xf32>, tensor<?x37xf32>) -> tensor<?x37xf32>
        loom.yield %h, %s : tensor<?x37xbf16>, tensor<?x37xf32>
      }
      return
    })mlir",
            {{x}});
}

TEST(RegionCodegen, UnsupportedOpsAreNamed) {
  auto ctx = test::makeContext();
  auto module = test::parse(*ctx, R"mlir(
    func.func @f(%x: tensor<?x5x7xf32>, %w: tensor<7x3xf32>) {
      %0 = loom.fusion(%x) : (tensor<?x5x7xf32>) -> tensor<?x1x1xf32> {
      ^bb0(%a: tensor<?x5x7xf32>):
        %s = loom.reduce_sum %a [1, 2] keep_dims : (tensor<?x5x7xf32>) -> tensor<?x1x1xf32>
        loom.yield %s : tensor<?x1x1xf32>
      }
      %1 = loom.fusion(%x, %w) : (tensor<?x5x7xf32>, tensor<7x3xf32>) -> tensor<?x5x3xf32> {
      ^bb0(%a: tensor<?x5x7xf32>, %b: tensor<7x3xf32>):
        %m = loom.matmul %a, %b : (tensor<?x5x7xf32>, tensor<7x3xf32>) -> tensor<?x5x3xf32>
        loom.yield %m : tensor<?x5x3xf32>
      }
      return
    })mlir");
  ASSERT_TRUE(module);
  std::string messages;
  ScopedDiagnosticHandler handler(ctx.get(), [&](Diagnostic &d) {
    messages += d.str() + "\n";
    return success();
  });
  CpuRegionCodegen codegen(ctx.get());
  std::vector<FusionOp> ops = fusionsOf(*module);
  EXPECT_TRUE(failed(codegen.addRegion(ops[0])));
  EXPECT_NE(messages.find("'loom.reduce_sum'"), std::string::npos) << messages;
  messages.clear();
  EXPECT_TRUE(failed(codegen.addRegion(ops[1])));
  EXPECT_NE(messages.find("'loom.matmul'"), std::string::npos) << messages;
}

//===----------------------------------------------------------------------===//

} // namespace
