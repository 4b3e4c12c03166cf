//===- KernelEmitter.h - Emits one kernel function --------------*- C++ -*-===//
//
// The state of emitting one kernel, shared by RegionLowering.cpp (planning,
// set-up, the function) and KernelLoops.cpp (values, row and column loops).
// Internal to CPU codegen.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_CPU_KERNELEMITTER_H
#define LOOM_CODEGEN_CPU_KERNELEMITTER_H

#include "codegen/common/KernelMath.h"
#include "codegen/common/RegionGraph.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <map>
#include <string>

namespace loom::cpu {

using mlir::Value;
// The region graph and its arithmetic are shared with the CUDA target
// (codegen/common); the CPU's kernels are written in its terms.
using codegen::BinaryFn;
using codegen::DimExpr;
using codegen::KernelMath;
using codegen::Level;
using codegen::Node;
using codegen::NodeKind;
using codegen::ReduceFn;
using codegen::RegionGraph;
using codegen::ShapeExpr;
using codegen::UnaryFn;

/// Vectors per iteration of a column loop that reduces, each with its own
/// accumulators: a row that stays in L1 between phases is otherwise bound
/// by the latency of one chain of adds.
constexpr unsigned kReductionUnroll = 4;

/// How the rows of one stage are computed (planned before emission).
struct StagePlan {
  unsigned stage = 0;
  llvm::SmallVector<unsigned> fullReduces;
  bool writesResults = false;
  llvm::DenseSet<unsigned> needed;
  int lastLoop = -1;
  llvm::SmallVector<llvm::SmallVector<unsigned>> reductions, scratchStores;
  llvm::DenseSet<unsigned> scratch;
};

/// How a dense tensor is addressed from the domain: per row dim its stride
/// (null: 0, the tensor broadcasts there), and along columns.
struct Access {
  Value ptr;
  llvm::SmallVector<Value> rowStrides;
  Value colStride;
  bool unitColumn = false;
};

/// One body of a column loop: its loop (phase), width, column index, and
/// the column values computed in it so far.
struct ColumnCtx {
  const StagePlan *plan;
  unsigned loop;
  unsigned lanes;
  Value col;
  llvm::DenseMap<unsigned, Value> memo;
};

/// Emits the kernel of one RegionGraph into a module.
class KernelEmitter {
public:
  KernelEmitter(const RegionGraph &g, mlir::ModuleOp module,
                llvm::StringRef symbol, unsigned lanes, bool libm)
      : g(g), module(module), symbol(symbol), lanes(lanes),
        b(module.getContext()), loc(module.getLoc()), m(b, loc, module, libm) {}

  void emit();

private:
  // Planning.
  void plan();
  void collect(unsigned n, StagePlan &p);
  int cost(unsigned n);
  void planScratch(StagePlan &p);

  // Set-up code in the entry block.
  void setUp();
  Value dimValue(const DimExpr &d);
  Access accessFor(const ShapeExpr &shape, Value ptr);
  void allocateScratch();
  Value rowOffset(const Access &a);
  Value columnOffset(const Access &a, Value rowOff, const ColumnCtx &ctx);

  // Values.
  Value scalarOf(unsigned n);
  Value constantOf(const Node &node, unsigned lanes);
  Value apply(const Node &node, llvm::ArrayRef<Value> in);
  Value computeScalar(unsigned n, bool inRow);
  Value rounded(const Node &node, Value v);
  Value computeUnrounded(unsigned n, bool inRow);
  /// `n`'s value in the current column, its inputs' first (iteratively).
  Value columnValue(unsigned n, ColumnCtx &ctx);
  /// `n`'s value once its column-level inputs are in ctx.memo.
  Value columnNodeValue(unsigned n, ColumnCtx &ctx);
  /// The inputs whose column values computing `n` reads: none once `n` is
  /// computed, loaded from scratch or not per column.
  llvm::ArrayRef<unsigned> columnInputs(unsigned n, const ColumnCtx &ctx) const;
  bool loadedFromScratch(unsigned n, const ColumnCtx &ctx) const;
  void emitGlobals(unsigned stage);
  void emitRowNodes(const StagePlan &p, unsigned phase);
  void emitRowLoop(const StagePlan &p);
  void emitColumnLoop(const StagePlan &p, unsigned q);
  void emitGlobalResults();

  template <typename BodyFn>
  mlir::scf::ForOp emitFor(Value lb, Value ub, Value step,
                           mlir::ValueRange inits, BodyFn body);
  static ReduceFn accumulation(const Node &r) {
    return ReduceFn(r.fn) == ReduceFn::Max ? ReduceFn::Max : ReduceFn::Sum;
  }

  const RegionGraph &g;
  mlir::ModuleOp module;
  std::string symbol;
  unsigned lanes;
  mlir::OpBuilder b;
  mlir::Location loc;
  KernelMath m;

  std::map<unsigned, StagePlan> plans;
  std::vector<int> costs;

  Value argsPtr, dimsPtr, rowBegin, rowEnd, offsetsPtr;
  llvm::SmallVector<Value> basePtrs, dims, domain;
  Value cols, vecEnd, unrolledEnd, scratchBase;
  llvm::DenseMap<unsigned, Access> leafAccess, dropoutAccess;
  llvm::SmallVector<Access> resultAccess;
  llvm::DenseMap<unsigned, Value> counts, scratchPtr, globals, dropoutOffset;
  llvm::DenseMap<unsigned, llvm::SmallVector<std::pair<unsigned, Value>>>
      fullGuards;
  llvm::SmallVector<llvm::SmallVector<unsigned>> resultGuards;
  llvm::SmallVector<Value> redirectPtr;

  // Per row.
  llvm::SmallVector<Value> idx;
  llvm::DenseMap<unsigned, Value> rowValues, rowOffsets;
  llvm::SmallVector<Value> resultPtr, resultOffset;
};

} // namespace loom::cpu

#endif // LOOM_CODEGEN_CPU_KERNELEMITTER_H
