//===- SymbolicShapes.h - Named dynamic dims and their bounds ---*- C++ -*-===//
//
// Memory planning needs an upper bound on the size of every value, but a
// `?` says nothing about how large it gets. The frontend names the dynamic
// dims of each input (`loom.dims`), and this analysis carries the names
// through the ops, so that every dim of every value is a polynomial in the
// named sizes:
//
//   %tgt: tensor<?x?xi32> {loom.dims = ["batch", "tgt_len"]}
//   %in = loom.slice %tgt {dim = 1, start = 0, end = -1}  // batch, tgt_len - 1
//   %x = loom.gather %table, %in                          // batch, tgt_len -
//   1, 512 %k = loom.concat %cache, %new {dim = 2}               // ...,
//   cache_len + 1, ... %f = loom.reshape %x [-1, 512]                        //
//   batch*tgt_len - batch, 512
//
// An element count is bounded term by term. Names that start with "batch"
// are batch sizes, "beam" is the hypotheses of each sentence of a decode
// step (a batch times a beam counts as one batch: the step's rows), all
// others lengths; one batch times one length is at most
// `maxTokens` (a batch holds that many tokens), every other length at most
// `maxLen`, every other batch at most `maxBatch`. Negative terms are dropped,
// which only loosens the bound.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_SYMBOLICSHAPES_H
#define LOOM_PASSES_SYMBOLICSHAPES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>
#include <vector>

namespace loom {

/// A size: a polynomial with integer coefficients in named sizes (symbols).
class SizeExpr {
public:
  /// Symbol ids, sorted; a symbol appears once per power.
  using Monomial = llvm::SmallVector<unsigned, 2>;
  struct Term {
    Monomial symbols;
    int64_t coefficient;
    bool operator==(const Term &other) const {
      return symbols == other.symbols && coefficient == other.coefficient;
    }
  };

  SizeExpr() = default; // zero
  static SizeExpr constant(int64_t value);
  static SizeExpr symbol(unsigned id);

  /// The value when no symbol appears.
  std::optional<int64_t> getConstant() const;
  llvm::ArrayRef<Term> terms() const { return termList; }

  SizeExpr operator+(const SizeExpr &other) const;
  SizeExpr operator-(const SizeExpr &other) const;
  SizeExpr operator*(const SizeExpr &other) const;
  /// `this / divisor` when every coefficient is a multiple of it.
  std::optional<SizeExpr> divideExactly(int64_t divisor) const;
  bool operator==(const SizeExpr &other) const {
    return termList == other.termList;
  }
  bool operator!=(const SizeExpr &other) const { return !(*this == other); }

  /// `batch*tgt_len - batch`, with `names` indexed by symbol id.
  std::string str(llvm::ArrayRef<std::string> names) const;

private:
  void normalize();
  llvm::SmallVector<Term, 2> termList; // sorted, no zero coefficients
};

/// Upper bounds of the named sizes.
struct SizeBounds {
  int64_t maxTokens = 4096;
  int64_t maxLen = 256;
  int64_t maxBatch = 256;
};

/// The symbolic shape of every value in the body of one function. Regions
/// of ops (loom.fusion) are opaque: only values of the function's block are
/// named.
class SymbolicShapes {
public:
  /// Names every dim of `fn`'s arguments from `loom.dims` and of every op
  /// result from its operands. On failure an error names the argument, or
  /// the op and the value, whose dynamic dim it could not name.
  mlir::LogicalResult analyze(mlir::func::FuncOp fn);

  /// The dims of `v` (an argument or a result of a top-level op).
  llvm::ArrayRef<SizeExpr> dims(mlir::Value v) const;
  /// The number of elements of `v`.
  SizeExpr numel(mlir::Value v) const;
  /// Whether `a` and `b` have the same shape at any size of the symbols.
  bool sameShape(mlir::Value a, mlir::Value b) const;

  /// An upper bound of `size` under `bounds`; nullopt on overflow.
  std::optional<int64_t> bound(const SizeExpr &size,
                               const SizeBounds &bounds) const;

  /// `v`'s shape as `batch x (tgt_len - 1) x 512`, for diagnostics.
  std::string shapeString(mlir::Value v) const;
  llvm::ArrayRef<std::string> symbolNames() const { return names; }

private:
  unsigned symbolId(llvm::StringRef name);
  mlir::LogicalResult analyzeOp(mlir::Operation *op);

  llvm::StringMap<unsigned> ids;
  std::vector<std::string> names;
  llvm::DenseMap<mlir::Value, llvm::SmallVector<SizeExpr, 4>> shapes;
};

} // namespace loom

#endif // LOOM_PASSES_SYMBOLICSHAPES_H
