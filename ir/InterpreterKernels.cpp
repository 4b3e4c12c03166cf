//===- InterpreterKernels.cpp - Elementwise kernels and strided loops -----===//
//
// Broadcasting is done with precomputed strides (0 on a broadcast dim) and a
// row-by-row walk, so the innermost loop is a plain strided loop around an
// inlined lambda: no per-element index arithmetic beyond a multiply-add and no
// per-element dispatch.
//
//===----------------------------------------------------------------------===//

#include "ir/InterpreterKernels.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>

using namespace loom;
using namespace loom::interp;

llvm::Error interp::kernelError(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

std::string interp::shapeString(llvm::ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += "x";
    s += std::to_string(shape[i]);
  }
  return s;
}

std::string interp::typeString(const HostTensor &t) {
  std::string s = "tensor<";
  for (int64_t d : t.shape)
    s += std::to_string(d) + "x";
  return s + dtypeName(t.kind) + ">";
}

std::string interp::valueString(double value) {
  if (std::isfinite(value) && std::trunc(value) == value &&
      std::fabs(value) < 9.2e18)
    return std::to_string(static_cast<int64_t>(value));
  std::string s;
  llvm::raw_string_ostream(s) << value;
  return s;
}

Shape interp::stridesOf(llvm::ArrayRef<int64_t> shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

llvm::Expected<Shape> interp::broadcastPair(llvm::ArrayRef<int64_t> a,
                                            llvm::ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return kernelError("cannot broadcast " + shapeString(a) + " with " +
                         shapeString(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape interp::broadcastStrides(llvm::ArrayRef<int64_t> in,
                               llvm::ArrayRef<int64_t> out) {
  Shape inStrides = stridesOf(in);
  Shape strides(out.size(), 0);
  size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    strides[lead + i] = in[i] == 1 ? 0 : inStrides[i];
  return strides;
}

void interp::stridedCopy(llvm::ArrayRef<int64_t> outShape,
                         llvm::ArrayRef<int64_t> srcStrides, const double *src,
                         double *dst) {
  Shape dstStrides = stridesOf(outShape);
  forEachRow<2>(outShape, {dstStrides.data(), srcStrides.data()},
                [&](const std::array<int64_t, 2> &o, int64_t n,
                    const std::array<int64_t, 2> &s) {
                  double *d = dst + o[0];
                  const double *p = src + o[1];
                  for (int64_t i = 0; i < n; ++i)
                    d[i] = p[i * s[1]];
                });
}

void interp::stridedAccumulate(llvm::ArrayRef<int64_t> srcShape,
                               const double *src,
                               llvm::ArrayRef<int64_t> dstStrides,
                               double *dst) {
  Shape srcStrides = stridesOf(srcShape);
  forEachRow<2>(srcShape, {srcStrides.data(), dstStrides.data()},
                [&](const std::array<int64_t, 2> &o, int64_t n,
                    const std::array<int64_t, 2> &s) {
                  const double *p = src + o[0];
                  double *d = dst + o[1];
                  if (s[1] == 0) {
                    double sum = 0;
                    for (int64_t i = 0; i < n; ++i)
                      sum += p[i];
                    *d += sum;
                    return;
                  }
                  for (int64_t i = 0; i < n; ++i)
                    d[i * s[1]] += p[i];
                });
}

//===----------------------------------------------------------------------===//
// Binary, compare, select
//===----------------------------------------------------------------------===//

/// out = f(lhs, rhs) with NumPy broadcasting.
template <typename F>
static llvm::Expected<HostTensor>
broadcastBinary(const HostTensor &lhs, const HostTensor &rhs, DType kind, F f) {
  auto shape = broadcastPair(lhs.shape, rhs.shape);
  if (!shape)
    return shape.takeError();
  HostTensor out(*shape, kind);
  const double *a = lhs.data.data(), *b = rhs.data.data();
  double *dst = out.data.data();
  if (lhs.shape == rhs.shape) {
    for (int64_t i = 0, n = out.numel(); i < n; ++i)
      dst[i] = f(a[i], b[i]);
    return out;
  }
  Shape so = stridesOf(*shape), sa = broadcastStrides(lhs.shape, *shape),
        sb = broadcastStrides(rhs.shape, *shape);
  forEachRow<3>(*shape, {so.data(), sa.data(), sb.data()},
                [&](const std::array<int64_t, 3> &o, int64_t n,
                    const std::array<int64_t, 3> &s) {
                  double *d = dst + o[0];
                  const double *x = a + o[1], *y = b + o[2];
                  for (int64_t i = 0; i < n; ++i)
                    d[i] = f(x[i * s[1]], y[i * s[2]]);
                });
  return out;
}

static double nanMax(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  return a < b ? b : a;
}

static double nanMin(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  return b < a ? b : a;
}

llvm::Expected<HostTensor> interp::binary(BinaryFn fn, const HostTensor &lhs,
                                          const HostTensor &rhs, DType kind) {
  bool integer = !isFloatDType(kind);
  switch (fn) {
  case BinaryFn::Add:
    return broadcastBinary(lhs, rhs, kind,
                           [](double x, double y) { return x + y; });
  case BinaryFn::Sub:
    return broadcastBinary(lhs, rhs, kind,
                           [](double x, double y) { return x - y; });
  case BinaryFn::Mul:
    return broadcastBinary(lhs, rhs, kind,
                           [](double x, double y) { return x * y; });
  case BinaryFn::Div:
    if (integer) {
      // Integer division truncates, as in C; a zero divisor is an error
      // rather than an infinity in an integer tensor.
      for (double y : rhs.data)
        if (y == 0)
          return kernelError("integer division by zero");
      return broadcastBinary(
          lhs, rhs, kind, [](double x, double y) { return std::trunc(x / y); });
    }
    return broadcastBinary(lhs, rhs, kind,
                           [](double x, double y) { return x / y; });
  case BinaryFn::Max:
    return broadcastBinary(lhs, rhs, kind, nanMax);
  case BinaryFn::Min:
    return broadcastBinary(lhs, rhs, kind, nanMin);
  case BinaryFn::Pow:
    return broadcastBinary(lhs, rhs, kind,
                           [](double x, double y) { return std::pow(x, y); });
  }
  return kernelError("unknown binary function");
}

llvm::Expected<HostTensor> interp::compare(CompareFn fn, const HostTensor &lhs,
                                           const HostTensor &rhs) {
  DType k = DType::I1;
  switch (fn) {
  case CompareFn::Eq:
    return broadcastBinary(lhs, rhs, k,
                           [](double x, double y) { return double(x == y); });
  case CompareFn::Ne:
    return broadcastBinary(lhs, rhs, k,
                           [](double x, double y) { return double(x != y); });
  case CompareFn::Lt:
    return broadcastBinary(lhs, rhs, k,
                           [](double x, double y) { return double(x < y); });
  case CompareFn::Le:
    return broadcastBinary(lhs, rhs, k,
                           [](double x, double y) { return double(x <= y); });
  case CompareFn::Gt:
    return broadcastBinary(lhs, rhs, k,
                           [](double x, double y) { return double(x > y); });
  case CompareFn::Ge:
    return broadcastBinary(lhs, rhs, k,
                           [](double x, double y) { return double(x >= y); });
  }
  return kernelError("unknown comparison");
}

llvm::Expected<HostTensor> interp::select(const HostTensor &cond,
                                          const HostTensor &onTrue,
                                          const HostTensor &onFalse,
                                          DType kind) {
  auto partial = broadcastPair(cond.shape, onTrue.shape);
  if (!partial)
    return partial.takeError();
  auto shape = broadcastPair(*partial, onFalse.shape);
  if (!shape)
    return kernelError("cannot broadcast " + shapeString(cond.shape) + ", " +
                       shapeString(onTrue.shape) + " and " +
                       shapeString(onFalse.shape) + " together (" +
                       llvm::toString(shape.takeError()) + ")");
  HostTensor out(*shape, kind);
  Shape so = stridesOf(*shape), sc = broadcastStrides(cond.shape, *shape),
        st = broadcastStrides(onTrue.shape, *shape),
        sf = broadcastStrides(onFalse.shape, *shape);
  const double *c = cond.data.data(), *t = onTrue.data.data(),
               *f = onFalse.data.data();
  double *dst = out.data.data();
  forEachRow<4>(*shape, {so.data(), sc.data(), st.data(), sf.data()},
                [&](const std::array<int64_t, 4> &o, int64_t n,
                    const std::array<int64_t, 4> &s) {
                  for (int64_t i = 0; i < n; ++i)
                    dst[o[0] + i] = c[o[1] + i * s[1]] != 0
                                        ? t[o[2] + i * s[2]]
                                        : f[o[3] + i * s[3]];
                });
  return out;
}

//===----------------------------------------------------------------------===//
// Unary and cast
//===----------------------------------------------------------------------===//

template <typename F>
static HostTensor map(const HostTensor &in, DType kind, F f) {
  HostTensor out(in.shape, kind);
  for (int64_t i = 0, n = in.numel(); i < n; ++i)
    out.data[i] = f(in.data[i]);
  return out;
}

static double sigmoid(double x) {
  // Evaluated on the side where exp cannot overflow.
  if (x >= 0)
    return 1.0 / (1.0 + std::exp(-x));
  double e = std::exp(x);
  return e / (1.0 + e);
}

HostTensor interp::unary(UnaryFn fn, const HostTensor &in, DType kind) {
  switch (fn) {
  case UnaryFn::Neg:
    return map(in, kind, [](double x) { return -x; });
  case UnaryFn::Abs:
    return map(in, kind, [](double x) { return std::fabs(x); });
  case UnaryFn::Exp:
    return map(in, kind, [](double x) { return std::exp(x); });
  case UnaryFn::Log:
    return map(in, kind, [](double x) { return std::log(x); });
  case UnaryFn::Sqrt:
    return map(in, kind, [](double x) { return std::sqrt(x); });
  case UnaryFn::Rsqrt:
    return map(in, kind, [](double x) { return 1.0 / std::sqrt(x); });
  case UnaryFn::Tanh:
    return map(in, kind, [](double x) { return std::tanh(x); });
  case UnaryFn::Sigmoid:
    return map(in, kind, sigmoid);
  case UnaryFn::Relu:
    // NaN stays NaN, as torch.relu keeps it.
    return map(in, kind, [](double x) { return x < 0 ? 0.0 : x; });
  case UnaryFn::Gelu:
    return map(in, kind, [](double x) {
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    });
  case UnaryFn::Erf:
    return map(in, kind, [](double x) { return std::erf(x); });
  case UnaryFn::Sin:
    return map(in, kind, [](double x) { return std::sin(x); });
  case UnaryFn::Cos:
    return map(in, kind, [](double x) { return std::cos(x); });
  }
  return in;
}

/// Float to integer: truncate toward zero, saturating at the type's range;
/// NaN becomes 0 so an integer tensor never holds a non-integer.
static double toInteger(double x, double lo, double hi) {
  if (std::isnan(x))
    return 0;
  return std::min(std::max(std::trunc(x), lo), hi);
}

HostTensor interp::cast(const HostTensor &in, DType kind) {
  switch (kind) {
  case DType::I1:
    return map(in, kind, [](double x) { return x != 0 ? 1.0 : 0.0; });
  case DType::I32:
    return map(in, kind, [](double x) {
      return toInteger(x, -2147483648.0, 2147483647.0);
    });
  case DType::I64:
    // The largest double below 2^63, so the value stays a valid int64.
    return map(in, kind, [](double x) {
      return toInteger(x, -9223372036854775808.0, 9223372036854774784.0);
    });
  default:
    // Float targets: the interpreter rounds to the element type afterwards.
    return map(in, kind, [](double x) { return x; });
  }
}
