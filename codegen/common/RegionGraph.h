//===- RegionGraph.h - A loom.fusion region, scheduled ----------*- C++ -*-===//
//
// The first half of region codegen: a loom.fusion body becomes a graph of
// scalar nodes, each placed where a row-by-row kernel computes it. Fused ops
// are taken apart into primitives first (softmax is a row max, an exp, a row
// sum and a division; layer_norm a mean, a variance and an affine map), so
// scheduling and emission deal with a dozen node kinds, not with every op.
//
// Each node has a level, from where its value varies in the iteration domain
// (rows = every dim but the last flattened, columns = the last dim):
//
//   Global  one value for the whole call: rank-0 or all-ones operands,
//           splat constants, and reductions over every element;
//   Row     one value per row: last dim 1 (a row reduction with keep_dims,
//           an operand [..., 1]);
//   Column  one value per element: computed in the column loops.
//
// and, for Row and Column nodes, a phase: the number of row reductions on
// its longest path from the operands. A row runs column loop p for every
// phase p it needs; the reductions of loop p give the row values of phase
// p + 1. Reductions over every element split the call into stages: stage s
// walks all rows to finish the reductions that the values of stage s + 1
// read (a region with one is not parallel over rows).
//
// Shapes are known only at run time; a ShapeExpr says, per dim, the static
// size or which entries of the kernel's `dims` array broadcast into it.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_COMMON_REGIONGRAPH_H
#define LOOM_CODEGEN_COMMON_REGIONGRAPH_H

#include "ir/InterpreterKernels.h"
#include "ir/LoomDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace loom::codegen {

/// One dim of a run-time shape: `size` when `sources` is empty, else the
/// NumPy broadcast of the `dims` entries listed.
struct DimExpr {
  int64_t size = 1;
  llvm::SmallVector<unsigned, 2> sources;

  bool isStatic() const { return sources.empty(); }
  bool isStaticOne() const { return isStatic() && size == 1; }
  bool operator==(const DimExpr &o) const {
    return size == o.size && sources == o.sources;
  }
};
using ShapeExpr = llvm::SmallVector<DimExpr, 4>;

enum class Level : uint8_t { Global, Row, Column };

enum class NodeKind : uint8_t {
  /// An operand (or a view of one) or a constant array, read from memory.
  Leaf,
  /// A scalar constant (a splat of any shape).
  Splat,
  Unary,
  Binary,
  Compare,
  Select,
  Cast,
  Dropout,
  /// The value of its input under another shape (broadcast_as, views of
  /// computed values, reductions over a dim of size 1).
  PassThrough,
  /// A reduction over the last dim of a Column input.
  RowReduce,
  /// A reduction of a Row input over every row (one value per call).
  FullReduce,
};

// Unary and binary functions are the interpreter's (ir/InterpreterKernels.h),
// so a node names the same operation the oracle computes.
using interp::BinaryFn;
using interp::UnaryFn;
enum class ReduceFn : uint8_t { Sum, Mean, Max };

struct Node {
  NodeKind kind;
  Level level = Level::Global;
  unsigned stage = 0;
  unsigned phase = 0;
  /// The type computations use (f16 and bf16 compute in f32).
  mlir::Type computeType;
  /// The element type as stored (Leaf).
  mlir::Type memoryType;
  /// f16 or bf16 when the node is an op's result of that type: rounded to
  /// it, as the interpreter rounds each op's result.
  mlir::Type roundTo;
  ShapeExpr shape;
  llvm::SmallVector<unsigned, 3> inputs;
  /// UnaryFn, BinaryFn, ComparePredicate or ReduceFn.
  unsigned fn = 0;
  /// Leaf: the block argument read, or -1 for `array`.
  int operand = -1;
  mlir::DenseElementsAttr array;
  /// Splat: the value, of `computeType`.
  mlir::TypedAttr scalar;
  /// Dropout.
  double rate = 0;
  int64_t offset = 0;
  /// Reductions: the shape of the reduced input (its element count divides
  /// a mean; a FullReduce sums only the rows it does not broadcast over).
  ShapeExpr reducedShape;
  /// Where errors point.
  mlir::Operation *origin = nullptr;
};

struct RegionGraph {
  std::vector<Node> nodes;
  llvm::SmallVector<mlir::RankedTensorType> operandTypes, resultTypes;
  /// Where each operand's, then each result's, sizes start in `dims`.
  llvm::SmallVector<unsigned> operandDims, resultDims;
  /// The node each result yields.
  llvm::SmallVector<unsigned> results;
  /// The iteration domain (rank R).
  ShapeExpr domain;
  /// Results written only on the last row that maps to each of their
  /// elements: they may share storage with an operand that later rows read.
  llvm::SmallVector<bool> guardedResults;
  /// Stages: 1 + the longest chain of FullReduce nodes.
  unsigned numStages = 1;
  bool parallel = true;

  unsigned rank() const { return domain.size(); }
};

/// Builds the graph of `fusion`'s body; on failure, an error on `fusion`
/// names the op that cannot be compiled and why.
mlir::FailureOr<RegionGraph> buildRegionGraph(FusionOp fusion);

/// Equal keys, equal kernels: everything the kernel computes from, except
/// the dropout sites' offsets (kernels that differ only there share code).
std::string structuralKey(const RegionGraph &graph);

/// The `offset` of each Dropout node, in node order.
llvm::SmallVector<int64_t> dropoutOffsets(const RegionGraph &graph);

/// The shape of `type` with dynamic dims read from `dims` at `firstDim`.
ShapeExpr shapeOfType(mlir::RankedTensorType type, unsigned firstDim);

/// NumPy broadcast of two shapes (right-aligned).
ShapeExpr broadcastShapes(const ShapeExpr &a, const ShapeExpr &b);

} // namespace loom::codegen

#endif // LOOM_CODEGEN_COMMON_REGIONGRAPH_H
