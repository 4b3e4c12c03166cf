//===- KernelChecks.h - What every device's kernels check ----*- C++ -*-===//
//
// A library kernel checks its call on the host before it touches memory:
// the number of tensors, their element types, shapes that must agree. The
// CPU and CUDA kernels of one op make the same checks with the same words
// (the conformance suite holds every device to the messages), so the checks
// live here, free of any device. Shapes print as the interpreter writes
// them ("2x3x4", "scalar"), unlike runtime::shapeString ("[2, 3, 4]").
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_KERNELCHECKS_H
#define LOOM_RUNTIME_KERNELCHECKS_H

#include "abi/LibraryCalls.h"
#include "runtime/Device.h"
#include "runtime/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::kernels {

using runtime::TensorRef;

/// "2x3x4" ("scalar" for rank 0).
std::string shapeString(const std::vector<int64_t> &shape);

/// Row-major strides of `shape`, in elements.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape);

/// Product of shape[begin, end).
int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end);

/// Success when there are `count` tensors, else a message naming `kernel`.
Status checkArgCount(const std::vector<TensorRef> &args, size_t count,
                     const char *kernel);
/// Success when `t` holds `dtype`, else a message naming `what`.
Status checkDType(const TensorRef &t, DType dtype, const char *what);
/// Success when `ids` is i32 or i64, else a message naming `what`.
Status checkIdType(const TensorRef &ids, const char *what);
/// Success when `a` and `b` hold the same element type.
Status checkSameDType(const TensorRef &a, const TensorRef &b,
                      const char *kernel);
/// Success when result `out` has `shape`.
Status checkShape(const TensorRef &out, const std::vector<int64_t> &shape,
                  const char *kernel);

//===-- Decoding primitives (Device::gatherRows, moveRows, argmax, topK) ===//

/// Success when `dst` holds rows.size() rows of `src` and every row lies
/// in `src`.
Status checkGatherRows(const TensorRef &src, const std::vector<int64_t> &rows,
                       const TensorRef &dst);
/// Success when `from` and `to` are as long, every row lies in `t` and no
/// row is written twice or both written and read (Device::moveRows).
Status checkMoveRows(const TensorRef &t, const std::vector<int64_t> &from,
                     const std::vector<int64_t> &to);
/// Success when `scores` are f32 [rows, n] with n >= 1.
Status checkScores(const TensorRef &scores, const char *what);
/// checkScores, and every edit's cell within `scores`.
Status checkScoreEdits(const TensorRef &scores,
                       const std::vector<runtime::Device::ScoreEdit> &edits);
/// checkScores, and every cell within `scores` (readScores).
Status checkScoreCells(const TensorRef &scores,
                       const std::vector<int64_t> &cells);
/// checkScores, and k in [1, n].
Status checkTopK(const TensorRef &scores, int64_t k);

//===-- Shape, index and mask kernels ---------------------------------===//
//
// Each check*Call below makes one kernel's checks of its call, tensors and
// attributes, in the order the kernel makes them, and gives back what the
// kernel needs to run it. Only a check that reads the tensors' data is left
// to the kernel: an id outside the table, which checkIdInRange words.

/// The additive score that masks a position out (loom::kMaskedScore, which
/// the runtime cannot include): finite, so a fully masked row stays NaN-free.
inline constexpr float kMaskedScore = -1e9f;

/// Resolves [start, end) of `slice` against the run-time `shape` as
/// loom.slice defines them.
Status sliceRange(const char *kernel, const abi::SliceCall &slice,
                  const std::vector<int64_t> &shape, int64_t &start,
                  int64_t &end);

/// transpose: in, out. The result `shape` reads `in` at `strides` (elements
/// per step of each dim of `shape`).
Status checkTransposeCall(const std::vector<TensorRef> &args,
                          const abi::CallAttrs &attrs,
                          std::vector<int64_t> &shape,
                          std::vector<int64_t> &strides);
/// slice: in, out; [start, end) of `dim` of `in`.
Status checkSliceCall(const std::vector<TensorRef> &args,
                      const abi::CallAttrs &attrs, int64_t &dim, int64_t &start,
                      int64_t &end);
/// slice_grad: grad, like, out; `grad` goes to [start, end) of `dim`.
Status checkSliceGradCall(const std::vector<TensorRef> &args,
                          const abi::CallAttrs &attrs, int64_t &dim,
                          int64_t &start, int64_t &end);
/// concat: inputs..., out; joined along `dim`.
Status checkConcatCall(const std::vector<TensorRef> &args,
                       const abi::CallAttrs &attrs, int64_t &dim);
/// broadcast_as: in, like, out. The result (like's shape) reads `in` at
/// `strides`, 0 along broadcast dims.
Status checkBroadcastAsCall(const std::vector<TensorRef> &args,
                            const abi::CallAttrs &attrs,
                            std::vector<int64_t> &strides);
/// sum_to: in, like, out (f32).
Status checkSumToCall(const std::vector<TensorRef> &args,
                      const abi::CallAttrs &attrs);
/// gather: table, ids, out; the ids' range is the kernel's to check.
Status checkGatherCall(const std::vector<TensorRef> &args,
                       const abi::CallAttrs &attrs);
/// scatter_add: updates, ids, like, out; the ids' range is the kernel's.
Status checkScatterAddCall(const std::vector<TensorRef> &args,
                           const abi::CallAttrs &attrs);
/// one_hot: ids, out (f32 or f64); rows of `depth`.
Status checkOneHotCall(const std::vector<TensorRef> &args,
                       const abi::CallAttrs &attrs, int64_t &depth);
/// padding_mask: ids [batch, length], out [batch, 1, 1, length] (f32).
Status checkPaddingMaskCall(const std::vector<TensorRef> &args,
                            const abi::CallAttrs &attrs, int64_t &pad);
/// causal_mask: like, out [n, n] (f32), n the size of like's dim.
Status checkCausalMaskCall(const std::vector<TensorRef> &args,
                           const abi::CallAttrs &attrs, int64_t &n);
/// iota: like, out [n] (f32, f64, i32 or i64), n the size of like's dim.
Status checkIotaCall(const std::vector<TensorRef> &args,
                     const abi::CallAttrs &attrs, int64_t &n);

/// Success when `id` is in [0, rows), else the message gather and
/// scatter_add give for the first id (in order) that is not.
Status checkIdInRange(const char *kernel, int64_t id, int64_t rows);

//===-- Losses and GEMMs ----------------------------------------------===//

/// linear's problem: x [..., K] times the transpose of weight [N, K], the
/// leading dims of x folded into M rows.
struct LinearDims {
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> outShape; // x's leading dims, then N
  /// x's and the weight's type: F32, or BF16 (a mixed-precision product:
  /// bf16 factors, f32 sums).
  DType factors = DType::F32;
};
/// linear's tensors (x, weight, [bias], [residual], out, as the decoded
/// LinearCall's flags say): their count, their types (x and the weight both
/// f32 or both bf16, the rest f32) and their shapes.
Status checkLinear(const std::vector<TensorRef> &args, bool hasBias,
                   bool hasResidual, LinearDims &dims);

/// matmul's problem: per index of the broadcast batch shape, op(lhs) [M, K]
/// times op(rhs) [K, N], each operand moved by its own matrix stride per
/// batch dim (0 where its dim is 1 or missing).
struct MatmulDims {
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> batch, strideA, strideB;
  std::vector<int64_t> outShape; // batch, then M and N
  /// lhs's and rhs's type: F32, or BF16 (f32 sums).
  DType factors = DType::F32;
};
/// matmul's tensors (lhs, rhs, out), once their count and the attributes
/// are checked: types (lhs and rhs both f32 or both bf16, an f32 result),
/// ranks, K, the batch broadcast, the result.
Status checkMatmul(const std::vector<TensorRef> &args, bool transposeLhs,
                   bool transposeRhs, MatmulDims &dims);

/// cross_entropy and cross_entropy_grad, once their attributes are decoded:
/// f32 logits [..., C] (and grad, and result `out` of `outShape`), i32 or
/// i64 targets [...], grad [...]. The target ids are data, which each device
/// checks where they lie; a bad one is refused with targetOutsideClasses.
Status checkCrossEntropy(const TensorRef &logits, const TensorRef &targets,
                         const TensorRef *grad, const TensorRef &out,
                         const std::vector<int64_t> &outShape,
                         const char *kernel);
/// The refusal of target id `target` outside [0, classes).
Status targetOutsideClasses(const char *kernel, int64_t target,
                            int64_t classes);

} // namespace loom::kernels

#endif // LOOM_RUNTIME_KERNELCHECKS_H
