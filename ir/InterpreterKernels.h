//===- InterpreterKernels.h - The interpreter's kernels ---------*- C++ -*-===//
//
// The naive host kernels behind the reference interpreter, one per op family.
// They take plain values, not ops: the interpreter reads an op's attributes
// and calls these. Shapes here are run-time shapes (no dynamic
// dims), and a kernel that finds them inconsistent returns an error naming the
// shapes; the interpreter prefixes the op and its location. Results are exact
// in double; rounding to the element type is the interpreter's business.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_IR_INTERPRETERKERNELS_H
#define LOOM_IR_INTERPRETERKERNELS_H

#include "ir/Interpreter.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace loom::interp {

using Shape = std::vector<int64_t>;

/// An error carrying `message`, for a kernel's complaint about its inputs.
llvm::Error kernelError(const llvm::Twine &message);

/// `2x3` (`scalar` for rank 0), for messages about run-time shapes.
std::string shapeString(llvm::ArrayRef<int64_t> shape);

/// `tensor<2x3xf32>`, for messages about a run-time value.
std::string typeString(const HostTensor &t);

/// An id or other integral value for a message (`7`, or `nan` and the like).
std::string valueString(double value);

/// Row-major strides of `shape`.
Shape stridesOf(llvm::ArrayRef<int64_t> shape);

/// The NumPy broadcast of two run-time shapes, or an error naming both.
llvm::Expected<Shape> broadcastPair(llvm::ArrayRef<int64_t> a,
                                    llvm::ArrayRef<int64_t> b);

//===----------------------------------------------------------------------===//
// Elementwise (InterpreterKernels.cpp)
//===----------------------------------------------------------------------===//

enum class BinaryFn { Add, Sub, Mul, Div, Max, Min, Pow };
enum class CompareFn { Eq, Ne, Lt, Le, Gt, Ge };
enum class UnaryFn {
  Neg,
  Abs,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Tanh,
  Sigmoid,
  Relu,
  Gelu,
  Erf,
  Sin,
  Cos
};

llvm::Expected<HostTensor> binary(BinaryFn fn, const HostTensor &lhs,
                                  const HostTensor &rhs, DType kind);
llvm::Expected<HostTensor> compare(CompareFn fn, const HostTensor &lhs,
                                   const HostTensor &rhs);
llvm::Expected<HostTensor> select(const HostTensor &cond,
                                  const HostTensor &onTrue,
                                  const HostTensor &onFalse, DType kind);
HostTensor unary(UnaryFn fn, const HostTensor &input, DType kind);
HostTensor cast(const HostTensor &input, DType kind);

//===----------------------------------------------------------------------===//
// Contractions, reductions and NN ops (InterpreterNN.cpp)
//===----------------------------------------------------------------------===//

llvm::Expected<HostTensor> matmul(const HostTensor &lhs, const HostTensor &rhs,
                                  bool transposeLhs, bool transposeRhs,
                                  DType kind);

enum class ReduceFn { Sum, Mean, Max };
llvm::Expected<HostTensor> reduce(ReduceFn fn, const HostTensor &input,
                                  llvm::ArrayRef<int64_t> dims, bool keepDims,
                                  DType kind);

llvm::Expected<HostTensor> softmax(const HostTensor &input, int64_t axis,
                                   bool log, DType kind);
llvm::Expected<HostTensor> layerNorm(const HostTensor &input,
                                     const HostTensor &gamma,
                                     const HostTensor &beta, double epsilon,
                                     DType kind);
llvm::Expected<HostTensor> dropout(const HostTensor &input,
                                   const HostTensor &seed, double rate,
                                   int64_t offset, DType kind);
llvm::Expected<HostTensor> causalMask(const HostTensor &like, int64_t dim,
                                      DType kind);
llvm::Expected<HostTensor> paddingMask(const HostTensor &ids, int64_t pad,
                                       DType kind);
llvm::Expected<HostTensor> crossEntropy(const HostTensor &logits,
                                        const HostTensor &targets,
                                        double smoothing, int64_t ignoreIndex,
                                        DType kind);
llvm::Expected<HostTensor> crossEntropyGrad(const HostTensor &logits,
                                            const HostTensor &targets,
                                            const HostTensor &grad,
                                            double smoothing,
                                            int64_t ignoreIndex, DType kind);

//===----------------------------------------------------------------------===//
// Shape and data movement (InterpreterShapeKernels.cpp)
//===----------------------------------------------------------------------===//

llvm::Expected<HostTensor> iota(const HostTensor &like, int64_t dim,
                                DType kind);
llvm::Expected<HostTensor> reshape(HostTensor input,
                                   llvm::ArrayRef<int64_t> spec);
llvm::Expected<HostTensor> reshapeTo(HostTensor input,
                                     llvm::ArrayRef<int64_t> shape);
llvm::Expected<HostTensor> expandDims(HostTensor input,
                                      llvm::ArrayRef<int64_t> dims);
llvm::Expected<HostTensor> transpose(const HostTensor &input,
                                     llvm::ArrayRef<int64_t> perm);
llvm::Expected<HostTensor> slice(const HostTensor &input, int64_t dim,
                                 int64_t start, int64_t end);
llvm::Expected<HostTensor> sliceGrad(const HostTensor &input,
                                     const HostTensor &like, int64_t dim,
                                     int64_t start, int64_t end, DType kind);
llvm::Expected<HostTensor> concat(llvm::ArrayRef<const HostTensor *> inputs,
                                  int64_t dim, DType kind);
llvm::Expected<HostTensor> broadcastTo(const HostTensor &input,
                                       llvm::ArrayRef<int64_t> shape);
llvm::Expected<HostTensor> sumTo(const HostTensor &input,
                                 llvm::ArrayRef<int64_t> shape);
llvm::Expected<HostTensor> gather(const HostTensor &table,
                                  const HostTensor &ids);
llvm::Expected<HostTensor> scatterAdd(const HostTensor &updates,
                                      const HostTensor &ids,
                                      const HostTensor &like, DType kind);
llvm::Expected<HostTensor> oneHot(const HostTensor &ids, int64_t depth,
                                  DType kind);

//===----------------------------------------------------------------------===//
// Strided loops shared by the kernels
//===----------------------------------------------------------------------===//

/// Walks `shape` in row-major order one innermost row at a time. For each
/// row it calls `row(offsets, n, innerStrides)` where `offsets[k]` is
/// `sum_d idx[d] * strides[k][d]` at the row's first element, `n` the row's
/// length and `innerStrides[k]` operand k's stride along the row. Keeping the
/// per-element work in the caller's inner loop (a lambda the compiler
/// inlines) is what makes broadcasting cheap.
template <size_t N, typename RowFn>
void forEachRow(llvm::ArrayRef<int64_t> shape,
                const std::array<const int64_t *, N> &strides, RowFn row) {
  std::array<int64_t, N> offsets{}, inner{};
  int64_t rank = static_cast<int64_t>(shape.size());
  for (int64_t d : shape)
    if (d == 0)
      return;
  if (rank == 0) {
    row(offsets, int64_t(1), inner);
    return;
  }
  for (size_t k = 0; k < N; ++k)
    inner[k] = strides[k][rank - 1];
  int64_t n = shape[rank - 1];
  std::vector<int64_t> idx(rank - 1, 0);
  while (true) {
    row(offsets, n, inner);
    int64_t d = rank - 2;
    for (; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k)
        offsets[k] += strides[k][d];
      if (++idx[d] < shape[d])
        break;
      for (size_t k = 0; k < N; ++k)
        offsets[k] -= strides[k][d] * shape[d];
      idx[d] = 0;
    }
    if (d < 0)
      return;
  }
}

/// Fills the row-major buffer `dst` of `outShape`, reading element `idx` of
/// the output from `src[sum_d idx[d] * srcStrides[d]]`. A stride of 0
/// broadcasts; permuted strides transpose.
void stridedCopy(llvm::ArrayRef<int64_t> outShape,
                 llvm::ArrayRef<int64_t> srcStrides, const double *src,
                 double *dst);

/// Adds every element of `src` (row-major, `srcShape`) into
/// `dst[sum_d idx[d] * dstStrides[d]]`: with a 0 stride on a dim, that dim
/// is summed away.
void stridedAccumulate(llvm::ArrayRef<int64_t> srcShape, const double *src,
                       llvm::ArrayRef<int64_t> dstStrides, double *dst);

/// The strides with which `in` (right-aligned against `out`, as NumPy does)
/// is read when broadcast to `out`: 0 on dims where `in` has size 1 or no dim.
Shape broadcastStrides(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out);

} // namespace loom::interp

#endif // LOOM_IR_INTERPRETERKERNELS_H
