//===- RegionCodegenModelTest.cpp - Generated CPU kernels of the models ---===//
//
// Every loom.fusion region of the compiled `tiny` and `small` models (small
// with its dropout) is compiled into one shared object, loaded, and run on
// the operands the region sees when its function runs on the interpreter;
// each result must match the interpreter's reading of the region, as in
// RegionCodegenTest.cpp. The `base` model must compile; its kernel count
// and compile time are printed, as is the throughput of two kernels.
//
//===----------------------------------------------------------------------===//

#include "RegionCodegenTestUtil.h"

#include "frontend/Config.h"
#include "frontend/InterpretedModel.h"
#include "frontend/Transformer.h"
#include "passes/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <ctime>
#include <iostream>
#include <map>
#include <set>
#include <unordered_map>

using namespace mlir;
using namespace loom;
using namespace loom::regiontest;

namespace {

/// Runs functions op by op, as the interpreter does (f32 rounding), and
/// keeps the operands each loom.fusion sees first.
class Recorder : public interp::Callee {
public:
  explicit Recorder(ModuleOp module) : module(module) {}

  llvm::Expected<std::vector<HostTensor>>
  call(llvm::StringRef name, llvm::ArrayRef<const HostTensor *> args) override {
    auto fn = module.lookupSymbol<func::FuncOp>(name);
    if (!fn)
      return llvm::createStringError("no function " + name.str());
    std::unordered_map<void *, HostTensor> values;
    Block &body = fn.getBody().front();
    for (auto [arg, t] : llvm::zip(body.getArguments(), args))
      values[arg.getAsOpaquePointer()] = *t;
    for (Operation &op : body) {
      std::vector<const HostTensor *> operands;
      for (Value v : op.getOperands())
        operands.push_back(&values.at(v.getAsOpaquePointer()));
      if (isa<func::ReturnOp>(op)) {
        std::vector<HostTensor> results;
        for (const HostTensor *t : operands)
          results.push_back(*t);
        return results;
      }
      if (isa<FusionOp>(op) && !captured.count(&op)) {
        auto &copy = captured[&op];
        for (const HostTensor *t : operands)
          copy.push_back(*t);
      }
      auto results = interp::evaluateOp(&op, operands, *this);
      if (!results)
        return results.takeError();
      for (auto [r, t] : llvm::zip(op.getResults(), *results)) {
        interp::roundInPlace(t);
        values[r.getAsOpaquePointer()] = std::move(t);
      }
    }
    return llvm::createStringError("no return");
  }
  bool f64() const override { return false; }

  /// Binds arguments by name, as InterpretedModel does.
  llvm::Expected<std::vector<HostTensor>> run(llvm::StringRef name,
                                              const NamedTensors &params,
                                              const NamedTensors &inputs) {
    auto fn = module.lookupSymbol<func::FuncOp>(name);
    std::vector<HostTensor> args;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      const NamedTensors &from = fn.getArgAttr(i, kParamAttr) ? params : inputs;
      StringAttr key = fn.getArgAttrOfType<StringAttr>(i, kParamAttr);
      if (!key)
        key = fn.getArgAttrOfType<StringAttr>(i, kOptStateAttr);
      if (!key)
        key = fn.getArgAttrOfType<StringAttr>(i, kInputAttr);
      auto it = key ? from.find(key.str()) : from.end();
      if (it == from.end())
        return llvm::createStringError("@" + name.str() + " argument " +
                                       std::to_string(i) + " not given");
      args.push_back(it->second);
    }
    std::vector<const HostTensor *> ptrs;
    for (const HostTensor &t : args)
      ptrs.push_back(&t);
    auto results = call(name, ptrs);
    if (results)
      for (unsigned i = 0; i < fn.getNumResults(); ++i)
        if (auto key = fn.getResultAttrOfType<StringAttr>(i, kOutputAttr))
          outputs[key.str()] = (*results)[i];
    return results;
  }

  ModuleOp module;
  std::map<Operation *, std::vector<HostTensor>> captured;
  NamedTensors outputs;
};

// The models
//===----------------------------------------------------------------------===//

class ModelRegions : public ::testing::TestWithParam<const char *> {};

TEST_P(ModelRegions, EveryRegionMatchesTheInterpreter) {
  auto ctx = test::makeContext();
  auto config = presetConfig(GetParam());
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  CompilePipelineOptions options;
  options.training.dModel = config->d_model();
  options.training.warmup = 10;
  options.maxTokens = 64;
  options.maxLen = 16;
  options.maxBatch = 8;
  auto module = buildModelModule(*ctx, *config);
  ASSERT_TRUE(module);
  ASSERT_TRUE(succeeded(runCompilePipeline(*module, options)));

  CpuRegionCodegen codegen(ctx.get());
  std::vector<FusionOp> ops = fusionsOf(*module);
  std::map<Operation *, RegionKernel> kernels;
  std::set<std::string> symbols;
  for (FusionOp op : ops) {
    auto kernel = codegen.addRegion(op);
    ASSERT_TRUE(succeeded(kernel));
    kernels[op] = *kernel;
    symbols.insert(kernel->symbol);
  }
  std::string error;
  auto so = codegen.emitSharedObject(error);
  ASSERT_TRUE(succeeded(so)) << error;
  LoadedKernels loaded(*so);
  ASSERT_TRUE(loaded.handle) << loaded.error;
  std::cout << GetParam() << ": " << ops.size() << " regions, "
            << symbols.size() << " kernels\n";

  // Operands as the regions see them: every entry point on the
  // interpreter, with a batch of 3 sources (5 wide) and targets (6 wide).
  InterpretedModel model(*module);
  model.initParameters(3);
  std::mt19937_64 rng(11);
  int64_t vocab = std::min(config->src_vocab(), config->tgt_vocab());
  HostTensor src = test::randomIds(rng, vocab, {5, 3, 4}, 5, false);
  HostTensor tgt = test::randomIds(rng, vocab, {6, 4, 2}, 6, true);
  NamedTensors inputs = {{"src", src},
                         {"tgt", tgt},
                         {"seed", HostTensor::scalar(1234, DType::I64)},
                         {"step", HostTensor::scalar(3, DType::I64)}};
  for (auto &[name, value] : model.parameters()) {
    inputs["exp_avg." + name] = randomTensor(rng, value.shape);
    HostTensor v = randomTensor(rng, value.shape);
    for (double &x : v.data)
      x = roundToKind(x * x * 1e-3, DType::F32);
    inputs["exp_avg_sq." + name] = v;
  }
  Recorder recorder(*module);
  for (const char *fn :
       {"loss", "loss_grad", "train_step", "token_log_probs", "encode"}) {
    auto results = recorder.run(fn, model.parameters(), inputs);
    ASSERT_TRUE(bool(results))
        << fn << ": " << llvm::toString(results.takeError());
  }
  NamedTensors step = recorder.outputs;
  step["src"] = src;
  for (auto &[name, value] : recorder.outputs) {
    if (llvm::StringRef(name).starts_with("cross_")) {
      // [N, H, S, Dh] -> [T = 2, N, 2, H, Dh]: two positions of two
      // hypotheses each, position first.
      std::vector<int64_t> shape = {2, value.shape[0], 2, value.shape[1],
                                    value.shape[3]};
      step["self_" + name.substr(std::string("cross_").size())] =
          randomTensor(rng, shape);
    }
  }
  step["tokens"] = test::randomIds(rng, vocab, {2, 2, 2}, 2, false);
  step["position"] = HostTensor::scalar(2, DType::I64);
  // The second sentence joined after the first position: it reads only
  // the second and its own.
  step["start"] = HostTensor({3}, DType::I64);
  step["start"].data = {0, 1, 0};
  for (const char *fn :
       {"decode_step", "decode_step_logits", "decode_step_align"}) {
    auto decoded = recorder.run(fn, model.parameters(), step);
    ASSERT_TRUE(bool(decoded))
        << fn << ": " << llvm::toString(decoded.takeError());
  }

  size_t checked = 0;
  for (FusionOp op : ops) {
    auto it = recorder.captured.find(op);
    if (it == recorder.captured.end())
      continue;
    auto fn = op->getParentOfType<func::FuncOp>();
    std::string what;
    llvm::raw_string_ostream os(what);
    os << "@" << fn.getSymName() << " " << op.getLoc();
    checkRegion(op, kernels[op], loaded, it->second, what);
    ++checked;
  }
  EXPECT_EQ(checked, ops.size()) << "regions never reached";
}

INSTANTIATE_TEST_SUITE_P(Presets, ModelRegions,
                         ::testing::Values("tiny", "small"));

TEST(RegionCodegen, BaseModelCompiles) {
  auto ctx = test::makeContext();
  auto config = presetConfig("base");
  ASSERT_TRUE(bool(config));
  CompilePipelineOptions options;
  options.training.dModel = config->d_model();
  auto module = buildModelModule(*ctx, *config);
  ASSERT_TRUE(module);
  ASSERT_TRUE(succeeded(runCompilePipeline(*module, options)));

  auto start = std::chrono::steady_clock::now();
  std::clock_t cpuStart = std::clock();
  CpuRegionCodegen codegen(ctx.get());
  std::vector<FusionOp> ops = fusionsOf(*module);
  std::set<std::string> symbols;
  for (FusionOp op : ops) {
    auto kernel = codegen.addRegion(op);
    ASSERT_TRUE(succeeded(kernel));
    symbols.insert(kernel->symbol);
  }
  auto added = std::chrono::steady_clock::now();
  std::string error;
  auto so = codegen.emitSharedObject(error);
  ASSERT_TRUE(succeeded(so)) << error;
  auto done = std::chrono::steady_clock::now();
  double cpuSeconds = double(std::clock() - cpuStart) / CLOCKS_PER_SEC;
  LoadedKernels loaded(*so);
  ASSERT_TRUE(loaded.handle) << loaded.error;
  for (const std::string &s : symbols)
    EXPECT_NE(loaded.get(s), nullptr) << s;
  // Entry points that differ only in dropout offsets share a body: count
  // the functions that are not just a call to one.
  auto lowered = codegen.lowerToLLVMDialect();
  ASSERT_TRUE(succeeded(lowered));
  size_t bodies = 0;
  (*lowered)->walk([&](LLVM::LLVMFuncOp fn) {
    bool forwards = false;
    fn.walk([&](LLVM::CallOp call) {
      forwards |=
          call.getCallee() && call.getCallee()->starts_with("loom_body_");
    });
    bodies += !fn.isExternal() && !forwards;
  });
  auto seconds = [](auto a, auto b) {
    return std::chrono::duration<double>(b - a).count();
  };
  std::cout << "base: " << ops.size() << " regions, " << symbols.size()
            << " kernels over " << bodies << " compiled bodies, "
            << seconds(start, added) << " s to build, " << seconds(added, done)
            << " s to compile and link, " << cpuSeconds << " s of CPU in all ("
            << so->size() / 1024 << " KiB)\n";
  // Dedup works: far fewer kernels than regions, fewer bodies still.
  EXPECT_LT(symbols.size(), ops.size() / 2);
  EXPECT_LT(bodies, symbols.size() / 2);
}

//===----------------------------------------------------------------------===//
// Throughput (printed, not asserted: machines differ)
//===----------------------------------------------------------------------===//

TEST(RegionCodegen, Throughput) {
  auto ctx = test::makeContext();
  auto module = test::parse(*ctx, R"mlir(
    func.func @f(%x: tensor<?x512xf32>, %r: tensor<?x512xf32>, %g: tensor<512xf32>, %b: tensor<512xf32>) {
      %0:2 = loom.fusion(%x, %r, %g, %b) : (tensor<?x512xf32>, tensor<?x512xf32>, tensor<512xf32>, tensor<512xf32>) -> (tensor<?x512xf32>, tensor<?x512xf32>) {
      ^bb0(%a: tensor<?x512xf32>, %ra: tensor<?x512xf32>, %ga: tensor<512xf32>, %ba: tensor<512xf32>):
        %s, %y = loom.add_layer_norm %a, %ra, %ga, %ba {epsilon = 1.0e-5 : f64} : (tensor<?x512xf32>, tensor<?x512xf32>, tensor<512xf32>, tensor<512xf32>) -> (tensor<?x512xf32>, tensor<?x512xf32>)
        loom.yield %s, %y : tensor<?x512xf32>, tensor<?x512xf32>
      }
      %1 = loom.fusion(%x, %r) : (tensor<?x512xf32>, tensor<?x512xf32>) -> tensor<?x512xf32> {
      ^bb0(%a: tensor<?x512xf32>, %ra: tensor<?x512xf32>):
        %c = loom.constant dense<0.5> : tensor<f32>
        %m = loom.mul %a, %c : (tensor<?x512xf32>, tensor<f32>) -> tensor<?x512xf32>
        %s = loom.add %m, %ra : (tensor<?x512xf32>, tensor<?x512xf32>) -> tensor<?x512xf32>
        loom.yield %s : tensor<?x512xf32>
      }
      return
    })mlir");
  ASSERT_TRUE(module);
  CpuRegionCodegen codegen(ctx.get());
  std::vector<FusionOp> ops = fusionsOf(*module);
  auto ln = codegen.addRegion(ops[0]);
  auto add = codegen.addRegion(ops[1]);
  ASSERT_TRUE(succeeded(ln) && succeeded(add));
  std::string error;
  auto so = codegen.emitSharedObject(error);
  ASSERT_TRUE(succeeded(so)) << error;
  LoadedKernels loaded(*so);
  ASSERT_TRUE(loaded.handle) << loaded.error;

  const int64_t rows = 4096, cols = 512, n = rows * cols;
  std::vector<float> x(n, 1.0f), r(n, 0.5f), g(cols, 1.0f), b(cols, 0.0f), s(n),
      y(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = float(i % 97) * 0.01f;
  auto time = [&](KernelFn fn, std::vector<void *> args,
                  std::vector<int64_t> dims) {
    fn(args.data(), dims.data(), 0, rows); // Warm up.
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      fn(args.data(), dims.data(), 0, rows);
      auto t1 = std::chrono::steady_clock::now();
      best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
    }
    return best;
  };
  double tLn =
      time(loaded.get(ln->symbol),
           {x.data(), r.data(), g.data(), b.data(), s.data(), y.data()},
           {rows, cols, rows, cols, cols, cols, rows, cols, rows, cols});
  double tAdd = time(loaded.get(add->symbol), {x.data(), r.data(), s.data()},
                     {rows, cols, rows, cols, rows, cols});
  double bytes = double(n) * 4;
  std::cout << "add_layer_norm [4096, 512] f32: " << tLn * 1e3 << " ms, "
            << 4 * bytes / tLn / 1e9 << " GB/s (2 reads, 2 writes)\n"
            << "x * 0.5 + r [4096, 512] f32: " << tAdd * 1e3 << " ms, "
            << 3 * bytes / tAdd / 1e9 << " GB/s (2 reads, 1 write)\n";
  // The results are right, too.
  float mean = 0;
  for (int64_t j = 0; j < cols; ++j)
    mean += y[j];
  EXPECT_NEAR(mean / cols, 0.0f, 1e-4);
  EXPECT_FLOAT_EQ(s[5], x[5] * 0.5f + 0.5f);
}

} // namespace
