//===- ArenaPlan.h - Memory plans as attributes and their arena -*- C++ -*-===//
//
// `loom-plan-memory` records where every temporary of a function lives as
// attributes on the IR, so the plan travels with any dump and is checked by
// whoever reads it:
//
//   func.func @f(%x: tensor<?x8xf32> {loom.dims = ["batch", ""]}) -> ...
//       attributes {loom.arena_bytes = 4096 : i64, ...} {
//     %0 = loom.exp %x {loom.offsets = array<i64: 0>} : ...
//     %1:2 = loom.attention ... {loom.offsets = array<i64: 2048, -1>} : ...
//
// `loom.offsets` has one entry per result: its byte offset in the function's
// arena, or -1 for a result that lives elsewhere (a function output, a
// constant, a view of an argument). `ByteArena` is the interpreter's side of
// the contract: it stores each planned result in its element type's bytes
// at its offset and reads it back at every use, so a plan that lets two live
// values overlap changes what the function computes.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_IR_ARENAPLAN_H
#define LOOM_IR_ARENAPLAN_H

#include "ir/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"

#include <cstdint>
#include <vector>

namespace loom {

/// On an argument: the name of each dim (an array of strings, "" for a
/// static dim). Equal names are equal sizes; the planner bounds each name.
constexpr const char *kDimsAttr = "loom.dims";
/// On an op: the arena offset of each result (-1: not in the arena).
constexpr const char *kOffsetsAttr = "loom.offsets";
/// On a function: the arena's size, the most bytes live at once in its
/// schedule, the sum of all its temporaries, and the bytes of its arguments
/// and outputs (persistent buffers), all at the planned bounds.
constexpr const char *kArenaBytesAttr = "loom.arena_bytes";
constexpr const char *kLiveLowerBoundAttr = "loom.live_lower_bound_bytes";
constexpr const char *kNaiveBytesAttr = "loom.naive_bytes";
constexpr const char *kPersistentBytesAttr = "loom.persistent_bytes";
/// Of the naive bytes, those of 16-bit float temporaries: the rounded
/// copies of weights and activations that mixed precision adds beside the
/// f32 ones (absent where there are none).
constexpr const char *kNarrowCopyBytesAttr = "loom.narrow_copy_bytes";

/// Every arena buffer starts at a multiple of this.
constexpr int64_t kArenaAlignment = 64;

/// Bytes of one element of `type` in memory (i1 takes a byte); 0 for an
/// element type buffers cannot hold.
int64_t elementByteWidth(mlir::Type type);

/// The arena of one planned function during interpretation.
class ByteArena {
public:
  /// The arena of `fn`'s plan: an empty one (`hasPlan` false) when `fn` has
  /// no plan; an error when the plan is malformed.
  static llvm::Expected<ByteArena> forFunction(mlir::func::FuncOp fn);

  bool hasPlan() const { return planned; }
  /// The offset of `v` in the arena, or -1 when it is not there.
  int64_t offsetOf(mlir::Value v) const;

  /// Writes `t`, the value of `v`, at `v`'s offset in its element type.
  llvm::Error store(mlir::Value v, const HostTensor &t);
  /// Replaces the elements of `t` (whose shape and kind are `v`'s) by what
  /// `v`'s bytes in the arena hold now.
  llvm::Error load(mlir::Value v, HostTensor &t) const;

private:
  /// `v`'s offset, checked to hold `t` inside the arena.
  llvm::Expected<int64_t> placeOf(mlir::Value v, const HostTensor &t) const;

  bool planned = false;
  std::vector<uint8_t> bytes;
};

} // namespace loom

#endif // LOOM_IR_ARENAPLAN_H
