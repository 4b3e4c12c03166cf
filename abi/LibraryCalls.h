//===- LibraryCalls.h - The library-kernel calling convention ---*- C++ -*-===//
//
// Every op of a planned function that is not generated code runs as a call
// of a library kernel that each device provides ("linear", "attention", ...).
// A call is the kernel's name, its tensors (the op's present operands in
// order, then its results) and what the kernel cannot see from the tensors:
// integer and float attributes. The executable stores those attributes as
// two flat lists; this header is the only place that knows their layout.
// Codegen builds one of the structs below from an op and encodes it; a
// device's kernel decodes the same struct, which checks the counts and the
// ranges, so a damaged or mismatched executable is refused with a message
// naming the kernel instead of read out of bounds.
//
//   kernel              tensors                                ints / floats
//   linear              x, weight, [bias], [residual], out     LinearCall
//   matmul              lhs, rhs, out                          MatmulCall
//   copy                in, out                                -
//   transpose           in, out                                TransposeCall
//   slice, slice_grad   in|grad, [like], out                   SliceCall
//   concat              inputs..., out                         ConcatCall
//   broadcast_as        in, like, out                          -
//   sum_to              in, like, out                          -
//   gather              table, ids, out                        -
//   scatter_add         grad, ids, like, out                   -
//   one_hot             ids, out                               OneHotCall
//   padding_mask        ids, out                               PaddingMaskCall
//   causal_mask         like, out                              AxisCall
//   iota                like, out                              AxisCall
//   cross_entropy       logits, targets, out                   CrossEntropyCall
//   cross_entropy_grad  logits, targets, dloss, out            CrossEntropyCall
//   attention           q, k, v, [mask], [seed], out, lse      AttentionCall
//   attention_grad      q, k, v, out, lse, dout, [mask], [seed],
//                       dq, dk, dv                             AttentionCall
//
// Generated kernels (loom.fusion regions) have a calling convention of their
// own, `GeneratedKernelFn` below.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_ABI_LIBRARYCALLS_H
#define LOOM_ABI_LIBRARYCALLS_H

#include "abi/DType.h"
#include "abi/Error.h"

#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace loom::abi {

/// A generated kernel: `args` are the buffers (operands, then results),
/// `dims` every buffer's shape concatenated in that order, and the call
/// computes the rows [rowBegin, rowEnd) of the broadcast domain (every dim
/// but the last, flattened), so that a device may split rows over threads.
using GeneratedKernelFn = void (*)(void *const *args, const int64_t *dims,
                                   int64_t rowBegin, int64_t rowEnd);

/// The attributes of one call as the executable stores them.
struct CallAttrs {
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

/// The names of every library kernel, sorted; every device provides each.
const std::vector<std::string> &libraryKernelNames();

/// An epilogue activation; the values are loom::Activation's.
enum class Activation : int64_t { None = 0, Relu = 1, Gelu = 2 };

struct LinearCall {
  bool hasBias = false, hasResidual = false;
  Activation activation = Activation::None;
  CallAttrs encode() const;
  static ErrorOr<LinearCall> decode(const CallAttrs &attrs);
};

struct MatmulCall {
  bool transposeLhs = false, transposeRhs = false;
  CallAttrs encode() const;
  static ErrorOr<MatmulCall> decode(const CallAttrs &attrs);
};

struct TransposeCall {
  std::vector<int64_t> perm; // a permutation of [0, rank)
  CallAttrs encode() const;
  static ErrorOr<TransposeCall> decode(const CallAttrs &attrs);
};

/// slice and slice_grad: [start, end) of `dim` as the op writes them; a
/// negative start, and an end <= 0, count from the end of the run-time dim.
struct SliceCall {
  int64_t dim = 0, start = 0, end = 0;
  CallAttrs encode() const;
  static ErrorOr<SliceCall> decode(const CallAttrs &attrs);
};

struct ConcatCall {
  int64_t dim = 0;
  CallAttrs encode() const;
  static ErrorOr<ConcatCall> decode(const CallAttrs &attrs);
};

struct OneHotCall {
  int64_t depth = 0; // > 0
  CallAttrs encode() const;
  static ErrorOr<OneHotCall> decode(const CallAttrs &attrs);
};

struct PaddingMaskCall {
  int64_t pad = 0; // the id that marks padding
  CallAttrs encode() const;
  static ErrorOr<PaddingMaskCall> decode(const CallAttrs &attrs);
};

/// causal_mask and iota: the dim of `like` whose size they take.
struct AxisCall {
  int64_t dim = 0;
  CallAttrs encode() const;
  static ErrorOr<AxisCall> decode(const CallAttrs &attrs);
};

/// cross_entropy and cross_entropy_grad.
struct CrossEntropyCall {
  int64_t ignoreIndex = 0;
  double labelSmoothing = 0; // in [0, 1)
  CallAttrs encode() const;
  static ErrorOr<CrossEntropyCall> decode(const CallAttrs &attrs);
};

/// attention and attention_grad. The flags say which optional tensors are
/// present, since the kernel sees only a list of tensors.
struct AttentionCall {
  bool hasMask = false, hasSeed = false, causal = false;
  /// k and v are [Sk, ..., D] (loom.attention's keys_position_major).
  bool keysPositionMajor = false;
  uint64_t dropoutOffset = 0;
  double scale = 1, dropoutRate = 0; // rate in [0, 1)
  CallAttrs encode() const;
  static ErrorOr<AttentionCall> decode(const CallAttrs &attrs);
};

/// Refuses attributes on a kernel that takes none (copy, gather, ...).
Status decodeNoAttrs(const char *kernel, const CallAttrs &attrs);

/// Decodes `attrs` with the struct of `kernel` (or decodeNoAttrs), so that
/// a loader can refuse attributes no device would accept before any call.
/// A kernel without a signature (librarySignature) is not checked.
Status checkLibraryAttrs(std::string_view kernel, const CallAttrs &attrs);

//===----------------------------------------------------------------------===//
// Signatures
//===----------------------------------------------------------------------===//
//
// What each library kernel takes, as data: the runtime's loader checks every
// call of an executable against it (the dtype and rank of each tensor, which
// ones the kernel writes), and codegen asserts its calls against it. Extents
// (sizes that must agree, attributes against shapes) are each kernel's own
// checks, made before it reads or writes anything.

/// A set of element types: bit `1 << int(dtype)` for each.
using DTypeSet = uint32_t;
constexpr DTypeSet dtypeBit(DType dtype) {
  return DTypeSet(1) << static_cast<int>(dtype);
}
inline constexpr DTypeSet kAnyDType = (DTypeSet(1) << std::size(kDTypes)) - 1;
inline constexpr DTypeSet kF32Only = dtypeBit(DType::F32);
inline constexpr DTypeSet kIdDTypes =
    dtypeBit(DType::I32) | dtypeBit(DType::I64);

/// No upper bound on a tensor's rank.
inline constexpr int kAnyRank = -1;

/// How many tensors of a call one argument of a signature stands for.
enum class ArgCount : uint8_t {
  One,      // exactly one
  Flagged,  // one when integer attribute `flag` is 1, else none
  Optional, // none or one, whichever makes the call's count fit
  Run,      // one or more (concat's inputs)
};

struct LibraryArg {
  const char *name;
  DTypeSet dtypes = kAnyDType;
  int minRank = 0;
  int maxRank = kAnyRank;
  /// Written by the kernel (a result); the others are only read.
  bool written = false;
  ArgCount count = ArgCount::One;
  int flag = -1; // ArgCount::Flagged: the index into CallAttrs::ints
  /// A read tensor the result may occupy exactly (in place): the kernel
  /// reads each element, or each row, before it writes it there.
  bool mayShareWithResult = false;
};

struct LibrarySignature {
  const char *kernel;
  std::vector<LibraryArg> args; // in call order; at most one not `One`
};

/// Every library kernel's signature, sorted by name: the kernels of
/// libraryKernelNames(), one each.
const std::vector<LibrarySignature> &librarySignatures();
/// The signature of `kernel`, or nullptr when no library kernel has that
/// name.
const LibrarySignature *librarySignature(std::string_view kernel);

/// The argument of `signature` that each of the `numArgs` tensors of a call
/// with `attrs` is, in call order; a Corrupt failure when `numArgs` does
/// not fit (a flagged tensor missing or extra, a run empty).
ErrorOr<std::vector<const LibraryArg *>>
libraryCallArgs(const LibrarySignature &signature, const CallAttrs &attrs,
                size_t numArgs);

} // namespace loom::abi

#endif // LOOM_ABI_LIBRARYCALLS_H
