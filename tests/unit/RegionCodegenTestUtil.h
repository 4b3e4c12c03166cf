//===- RegionCodegenTestUtil.h - Generated kernels under test ---*- C++ -*-===//
//
// Shared by the region codegen tests: load a shared object, call a kernel
// on HostTensors through the kernel ABI (whole, in row ranges, with results
// over operands), and hold it against the interpreter's reading of its
// region.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TESTS_UNIT_REGIONCODEGENTESTUTIL_H
#define LOOM_TESTS_UNIT_REGIONCODEGENTESTUTIL_H

#include "TestUtil.h"

#include "codegen/cpu/RegionCodegen.h"
#include "ir/InterpreterFused.h"
#include "ir/InterpreterKernels.h"

#include "llvm/Support/FileSystem.h"
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <random>
#include <unistd.h>

namespace loom::regiontest {

using namespace mlir;

using KernelFn = void (*)(void *const *, const int64_t *, int64_t, int64_t);

//===----------------------------------------------------------------------===//
// Loading and calling kernels
//===----------------------------------------------------------------------===//

/// The shared object, written to a temporary file and loaded.
class LoadedKernels {
public:
  explicit LoadedKernels(const std::string &bytes) {
    llvm::SmallString<128> path;
    int fd;
    if (llvm::sys::fs::createTemporaryFile("region-codegen-test", "so", fd,
                                           path))
      return;
    ::close(fd);
    this->path = path.str().str();
    std::ofstream(this->path, std::ios::binary) << bytes;
    // LOOM_KEEP_SO=file keeps a copy to disassemble.
    if (const char *keep = std::getenv("LOOM_KEEP_SO"))
      std::ofstream(keep, std::ios::binary) << bytes;
    handle = dlopen(this->path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      error = dlerror();
  }
  ~LoadedKernels() {
    if (handle)
      dlclose(handle);
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
  KernelFn get(const std::string &symbol) const {
    return handle ? reinterpret_cast<KernelFn>(dlsym(handle, symbol.c_str()))
                  : nullptr;
  }
  void *handle = nullptr;
  std::string error, path;
};

inline size_t elementBytes(DType kind) {
  switch (kind) {
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I1:
    return 1;
  }
  return 4;
}

inline std::vector<uint8_t> toBytes(const HostTensor &t) {
  std::vector<uint8_t> bytes(t.numel() * elementBytes(t.kind));
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.data[i];
    uint8_t *p = bytes.data() + i * elementBytes(t.kind);
    switch (t.kind) {
    case DType::F32: {
      float f = float(v);
      std::memcpy(p, &f, 4);
      break;
    }
    case DType::F64:
      std::memcpy(p, &v, 8);
      break;
    case DType::I32: {
      int32_t x = int32_t(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case DType::I64: {
      int64_t x = int64_t(v);
      std::memcpy(p, &x, 8);
      break;
    }
    case DType::I1:
      *p = v != 0;
      break;
    case DType::F16:
    case DType::BF16: {
      llvm::APFloat f(v);
      bool lost;
      f.convert(t.kind == DType::F16 ? llvm::APFloat::IEEEhalf()
                                     : llvm::APFloat::BFloat(),
                llvm::APFloat::rmNearestTiesToEven, &lost);
      uint16_t bits = f.bitcastToAPInt().getZExtValue();
      std::memcpy(p, &bits, 2);
      break;
    }
    }
  }
  return bytes;
}

inline HostTensor fromBytes(const std::vector<uint8_t> &bytes,
                            std::vector<int64_t> shape, DType kind) {
  HostTensor t(std::move(shape), kind);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const uint8_t *p = bytes.data() + i * elementBytes(kind);
    switch (kind) {
    case DType::F32: {
      float f;
      std::memcpy(&f, p, 4);
      t.data[i] = f;
      break;
    }
    case DType::F64:
      std::memcpy(&t.data[i], p, 8);
      break;
    case DType::I32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      t.data[i] = x;
      break;
    }
    case DType::I64: {
      int64_t x;
      std::memcpy(&x, p, 8);
      t.data[i] = double(x);
      break;
    }
    case DType::I1:
      t.data[i] = *p;
      break;
    case DType::F16:
    case DType::BF16: {
      uint16_t bits;
      std::memcpy(&bits, p, 2);
      llvm::APFloat f(kind == DType::F16 ? llvm::APFloat::IEEEhalf()
                                         : llvm::APFloat::BFloat(),
                      llvm::APInt(16, bits));
      bool lost;
      f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
                &lost);
      t.data[i] = f.convertToDouble();
      break;
    }
    }
  }
  return t;
}

/// Rows of the iteration domain as the runtime counts them: per dim (right-
/// aligned) the largest size, every dim but the last.
inline int64_t domainRows(const std::vector<const HostTensor *> &tensors) {
  size_t rank = 0;
  for (const HostTensor *t : tensors)
    rank = std::max(rank, t->shape.size());
  std::vector<int64_t> domain(rank, 1);
  for (const HostTensor *t : tensors)
    for (size_t d = 0; d < t->shape.size(); ++d)
      domain[rank - t->shape.size() + d] =
          std::max(domain[rank - t->shape.size() + d], t->shape[d]);
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d)
    rows *= domain[d];
  return rows;
}

struct RunOptions {
  /// Row ranges, in order; empty: all rows in one call.
  std::vector<std::pair<int64_t, int64_t>> ranges;
  /// Per result: the operand whose buffer it is written over, or -1.
  std::vector<int> alias;
};

/// Calls `fn` on `operands`; results take the shapes and kinds of
/// `expected`. Unwritten result bytes stay 0xff (NaN for floats).
inline std::vector<HostTensor>
runKernel(KernelFn fn, const std::vector<HostTensor> &operands,
          const std::vector<HostTensor> &expected,
          const RunOptions &options = {}) {
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<int64_t> dims;
  for (const HostTensor &t : operands) {
    buffers.push_back(toBytes(t));
    dims.insert(dims.end(), t.shape.begin(), t.shape.end());
  }
  for (const HostTensor &t : expected) {
    buffers.emplace_back(std::max<size_t>(1, t.numel() * elementBytes(t.kind)),
                         0xff);
    dims.insert(dims.end(), t.shape.begin(), t.shape.end());
  }
  std::vector<void *> args;
  for (auto &b : buffers)
    args.push_back(b.data());
  for (size_t k = 0; k < options.alias.size(); ++k)
    if (options.alias[k] >= 0)
      args[operands.size() + k] = args[options.alias[k]];
  dims.push_back(-1); // Never read.

  std::vector<const HostTensor *> all;
  for (const HostTensor &t : operands)
    all.push_back(&t);
  for (const HostTensor &t : expected)
    all.push_back(&t);
  int64_t rows = domainRows(all);
  if (options.ranges.empty())
    fn(args.data(), dims.data(), 0, rows);
  for (auto [begin, end] : options.ranges)
    fn(args.data(), dims.data(), begin, end);

  std::vector<HostTensor> results;
  for (size_t k = 0; k < expected.size(); ++k) {
    size_t buffer = operands.size() + k;
    if (k < options.alias.size() && options.alias[k] >= 0)
      buffer = options.alias[k];
    results.push_back(
        fromBytes(buffers[buffer], expected[k].shape, expected[k].kind));
  }
  return results;
}

/// Elementwise agreement to `rtol`, relative to the element and to the RMS
/// of the expected tensor (sums that cancel have no relative accuracy of
/// their own); NaN and infinities must match exactly. Integers exactly.
inline ::testing::AssertionResult close(const HostTensor &actual,
                                        const HostTensor &expected,
                                        double rtol = 1e-5) {
  if (actual.shape != expected.shape)
    return ::testing::AssertionFailure() << "shapes differ";
  double sum = 0;
  int64_t finite = 0;
  for (double e : expected.data)
    if (std::isfinite(e)) {
      sum += e * e;
      ++finite;
    }
  double rms = finite ? std::sqrt(sum / finite) : 0;
  bool exact = !isFloatDType(expected.kind);
  int64_t bad = 0;
  std::string first;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double a = actual.data[i], e = expected.data[i];
    bool ok;
    if (std::isnan(e) || std::isinf(e) || exact)
      ok = (std::isnan(a) && std::isnan(e)) || a == e;
    else
      ok = std::fabs(a - e) <= rtol * (std::fabs(e) + rms);
    if (!ok && bad++ < 3)
      first += " [" + std::to_string(i) + "] " + std::to_string(a) +
               " != " + std::to_string(e);
  }
  if (bad)
    return ::testing::AssertionFailure()
           << bad << " of " << expected.numel() << " elements differ:" << first;
  return ::testing::AssertionSuccess();
}

inline bool identical(const HostTensor &a, const HostTensor &b) {
  if (a.shape != b.shape)
    return false;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (!(a.data[i] == b.data[i] ||
          (std::isnan(a.data[i]) && std::isnan(b.data[i]))))
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// The interpreter's side
//===----------------------------------------------------------------------===//

/// Never called: regions call no functions.
class NoCallee : public interp::Callee {
public:
  llvm::Expected<std::vector<HostTensor>>
  call(llvm::StringRef, llvm::ArrayRef<const HostTensor *>) override {
    return llvm::createStringError("no calls in a region");
  }
  bool f64() const override { return false; }
};

inline std::vector<HostTensor>
reference(FusionOp op, const std::vector<HostTensor> &operands) {
  std::vector<const HostTensor *> ptrs;
  for (const HostTensor &t : operands)
    ptrs.push_back(&t);
  NoCallee callee;
  auto results = interp::evaluateFusion(op, ptrs, callee, /*f64=*/false);
  EXPECT_TRUE(bool(results)) << llvm::toString(results.takeError());
  return results ? *results : std::vector<HostTensor>{};
}

/// Checks one region's kernel against the interpreter: whole, split, in
/// place.
inline void checkRegion(FusionOp op, const RegionKernel &kernel,
                        const LoadedKernels &so,
                        const std::vector<HostTensor> &operands,
                        const std::string &what, double rtol = 1e-5) {
  KernelFn fn = so.get(kernel.symbol);
  ASSERT_NE(fn, nullptr) << what << ": no symbol " << kernel.symbol;
  std::vector<HostTensor> expected = reference(op, operands);
  ASSERT_EQ(expected.size(), op.getNumResults()) << what;

  std::vector<HostTensor> whole = runKernel(fn, operands, expected);
  for (size_t k = 0; k < expected.size(); ++k)
    EXPECT_TRUE(close(whole[k], expected[k], rtol))
        << what << " result #" << k << " (" << kernel.symbol << ")";

  std::vector<const HostTensor *> all;
  for (const HostTensor &t : operands)
    all.push_back(&t);
  for (const HostTensor &t : expected)
    all.push_back(&t);
  int64_t rows = domainRows(all);
  if (kernel.parallel && rows >= 2) {
    RunOptions split;
    split.ranges = {{rows / 3, rows}, {0, rows / 3}};
    std::vector<HostTensor> parts = runKernel(fn, operands, expected, split);
    for (size_t k = 0; k < expected.size(); ++k)
      EXPECT_TRUE(identical(parts[k], whole[k]))
          << what << " result #" << k << " differs when rows are split";
  }

  // Each result over a distinct operand of its type and shape.
  RunOptions inPlace;
  std::vector<bool> taken(operands.size(), false);
  bool any = false;
  for (size_t k = 0; k < expected.size(); ++k) {
    int alias = -1;
    for (size_t i = 0; i < operands.size() && alias < 0; ++i)
      if (!taken[i] &&
          op.getOperand(i).getType() == op.getResult(k).getType() &&
          operands[i].shape == expected[k].shape)
        alias = int(i);
    if (alias >= 0)
      taken[alias] = any = true;
    inPlace.alias.push_back(alias);
  }
  if (any) {
    std::vector<HostTensor> over = runKernel(fn, operands, expected, inPlace);
    for (size_t k = 0; k < expected.size(); ++k)
      EXPECT_TRUE(close(over[k], expected[k], rtol))
          << what << " result #" << k << " written over operand #"
          << inPlace.alias[k];
  }
}

inline HostTensor randomTensor(std::mt19937_64 &rng, std::vector<int64_t> shape,
                               DType kind = DType::F32, double scale = 1.0) {
  HostTensor t(std::move(shape), kind);
  std::normal_distribution<double> normal(0.0, scale);
  for (double &x : t.data)
    x = kind == DType::I1 ? double(rng() & 1) : roundToKind(normal(rng), kind);
  return t;
}

inline std::vector<FusionOp> fusionsOf(ModuleOp module) {
  std::vector<FusionOp> ops;
  module.walk([&](FusionOp op) { ops.push_back(op); });
  return ops;
}

//===----------------------------------------------------------------------===//
// Hand-written regions
//===----------------------------------------------------------------------===//

/// Compiles every fusion of `text`, runs each on `operands` (one list per
/// fusion, in order) and checks it; `kernels` gets what addRegion returned.
inline void checkText(const std::string &text,
                      const std::vector<std::vector<HostTensor>> &operands,
                      double rtol = 1e-5,
                      std::vector<RegionKernel> *kernelsOut = nullptr,
                      const cpu::CodegenTarget &target = cpu::hostTarget()) {
  auto ctx = test::makeContext();
  auto module = test::parse(*ctx, text);
  ASSERT_TRUE(module);
  CpuRegionCodegen codegen(ctx.get(), target);
  std::vector<FusionOp> ops = fusionsOf(*module);
  ASSERT_EQ(ops.size(), operands.size());
  std::vector<RegionKernel> kernels;
  for (FusionOp op : ops) {
    auto kernel = codegen.addRegion(op);
    ASSERT_TRUE(succeeded(kernel));
    kernels.push_back(*kernel);
  }
  if (kernelsOut)
    *kernelsOut = kernels;
  std::string error;
  auto so = codegen.emitSharedObject(error);
  ASSERT_TRUE(succeeded(so)) << error;
  LoadedKernels loaded(*so);
  ASSERT_TRUE(loaded.handle) << loaded.error;
  for (size_t i = 0; i < ops.size(); ++i)
    checkRegion(ops[i], kernels[i], loaded, operands[i],
                "region " + std::to_string(i), rtol);
}

} // namespace loom::regiontest

#endif // LOOM_TESTS_UNIT_REGIONCODEGENTESTUTIL_H
