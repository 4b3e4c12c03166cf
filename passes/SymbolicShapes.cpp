//===- SymbolicShapes.cpp - Named dynamic dims and their bounds -----------===//
//
// Each op's rule says which operand dim (or which expression of operand dims)
// a result dim is. Static dims come from the result type, so a rule only has
// to be right where the type says `?`. Ops without a rule of their own (the
// elementwise ops, loom.fusion, any op added later) use the broadcasting
// rule: a result dim is the dim of an operand of the same rank at that
// index, else of a larger operand at that index (a reduction over trailing
// dims), else of a smaller operand aligned to the right (NumPy broadcasting).
//
//===----------------------------------------------------------------------===//

#include "passes/SymbolicShapes.h"

#include "ir/ArenaPlan.h"
#include "ir/LoomDialect.h"
#include "ir/ShapeUtils.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace loom;

//===----------------------------------------------------------------------===//
// SizeExpr
//===----------------------------------------------------------------------===//

SizeExpr SizeExpr::constant(int64_t value) {
  SizeExpr e;
  if (value != 0)
    e.termList.push_back({{}, value});
  return e;
}

SizeExpr SizeExpr::symbol(unsigned id) {
  SizeExpr e;
  e.termList.push_back({{id}, 1});
  return e;
}

std::optional<int64_t> SizeExpr::getConstant() const {
  if (termList.empty())
    return 0;
  if (termList.size() == 1 && termList[0].symbols.empty())
    return termList[0].coefficient;
  return std::nullopt;
}

void SizeExpr::normalize() {
  llvm::sort(termList, [](const Term &a, const Term &b) {
    return a.symbols < b.symbols;
  });
  SmallVector<Term, 2> merged;
  for (Term &t : termList) {
    if (!merged.empty() && merged.back().symbols == t.symbols)
      merged.back().coefficient += t.coefficient;
    else
      merged.push_back(std::move(t));
  }
  llvm::erase_if(merged, [](const Term &t) { return t.coefficient == 0; });
  termList = std::move(merged);
}

SizeExpr SizeExpr::operator+(const SizeExpr &other) const {
  SizeExpr e = *this;
  e.termList.append(other.termList.begin(), other.termList.end());
  e.normalize();
  return e;
}

SizeExpr SizeExpr::operator-(const SizeExpr &other) const {
  SizeExpr e = *this;
  for (Term t : other.termList) {
    t.coefficient = -t.coefficient;
    e.termList.push_back(std::move(t));
  }
  e.normalize();
  return e;
}

SizeExpr SizeExpr::operator*(const SizeExpr &other) const {
  SizeExpr e;
  for (const Term &a : termList)
    for (const Term &b : other.termList) {
      Monomial symbols = a.symbols;
      symbols.append(b.symbols.begin(), b.symbols.end());
      llvm::sort(symbols);
      e.termList.push_back({symbols, a.coefficient * b.coefficient});
    }
  e.normalize();
  return e;
}

std::optional<SizeExpr> SizeExpr::divideExactly(int64_t divisor) const {
  if (divisor <= 0)
    return std::nullopt;
  SizeExpr e = *this;
  for (Term &t : e.termList) {
    if (t.coefficient % divisor)
      return std::nullopt;
    t.coefficient /= divisor;
  }
  return e;
}

std::string SizeExpr::str(ArrayRef<std::string> names) const {
  if (termList.empty())
    return "0";
  // Highest degree first, constants last: `cache_len + 1`.
  SmallVector<Term, 2> ordered = termList;
  llvm::stable_sort(ordered, [](const Term &a, const Term &b) {
    return a.symbols.size() > b.symbols.size();
  });
  std::string s;
  llvm::raw_string_ostream os(s);
  for (auto [i, t] : llvm::enumerate(ordered)) {
    int64_t c = t.coefficient;
    if (i > 0)
      os << (c < 0 ? " - " : " + ");
    else if (c < 0)
      os << "-";
    int64_t magnitude = c < 0 ? -c : c;
    bool first = true;
    if (magnitude != 1 || t.symbols.empty()) {
      os << magnitude;
      first = false;
    }
    for (unsigned id : t.symbols) {
      os << (first ? "" : "*") << names[id];
      first = false;
    }
  }
  return os.str();
}

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

namespace {

using Dims = SmallVector<SizeExpr, 4>;
/// What a rule says about each result dim; nullopt where it cannot say.
using Guess = SmallVector<std::optional<SizeExpr>, 4>;

/// The broadcasting rule over `operands` for a result of `rank`.
Guess broadcastGuess(ArrayRef<ArrayRef<SizeExpr>> operands, int64_t rank) {
  Guess guess(rank);
  for (int64_t i = 0; i < rank; ++i) {
    std::optional<SizeExpr> constant;
    auto consider = [&](const SizeExpr &e) {
      if (guess[i])
        return;
      std::optional<int64_t> c = e.getConstant();
      if (!c)
        guess[i] = e;
      else if (!constant || *c > *constant->getConstant())
        constant = e;
    };
    for (ArrayRef<SizeExpr> dims : operands)
      if (static_cast<int64_t>(dims.size()) == rank)
        consider(dims[i]);
    for (ArrayRef<SizeExpr> dims : operands)
      if (static_cast<int64_t>(dims.size()) > rank)
        consider(dims[i]);
    for (ArrayRef<SizeExpr> dims : operands) {
      int64_t at = i - (rank - static_cast<int64_t>(dims.size()));
      if (static_cast<int64_t>(dims.size()) < rank && at >= 0)
        consider(dims[at]);
    }
    if (!guess[i])
      guess[i] = constant;
  }
  return guess;
}

Guess exactly(ArrayRef<SizeExpr> dims) {
  return Guess(dims.begin(), dims.end());
}

Guess sliceGuess(ArrayRef<SizeExpr> in, int64_t dim, int64_t start,
                 int64_t end) {
  Guess guess = exactly(in);
  auto axis = normalizeAxis(dim, in.size());
  if (!axis)
    return guess;
  const SizeExpr &n = in[*axis];
  SizeExpr first =
      start < 0 ? n + SizeExpr::constant(start) : SizeExpr::constant(start);
  SizeExpr last =
      end <= 0 ? n + SizeExpr::constant(end) : SizeExpr::constant(end);
  guess[*axis] = last - first;
  return guess;
}

/// Reshape: 0 copies the input dim, -1 is what the other dims leave of the
/// input's elements.
Guess reshapeGuess(ArrayRef<SizeExpr> in, ArrayRef<int64_t> shape) {
  Guess guess(shape.size());
  SmallVector<SizeExpr> pool(in.begin(), in.end());
  int64_t divisor = 1;
  std::optional<size_t> inferred;
  bool ok = true;
  auto account = [&](const SizeExpr &e) {
    if (std::optional<int64_t> c = e.getConstant()) {
      divisor *= std::max<int64_t>(*c, 1);
      return;
    }
    auto it = llvm::find(pool, e);
    if (it == pool.end())
      ok = false;
    else
      pool.erase(it);
  };
  for (auto [i, s] : llvm::enumerate(shape)) {
    if (s == 0 && i < in.size())
      guess[i] = in[i];
    else if (s > 0)
      guess[i] = SizeExpr::constant(s);
    else if (s == -1)
      inferred = i;
    if (guess[i])
      account(*guess[i]);
  }
  if (inferred && ok) {
    SizeExpr rest = SizeExpr::constant(1);
    for (const SizeExpr &e : pool)
      rest = rest * e;
    guess[*inferred] = rest.divideExactly(divisor);
  }
  return guess;
}

Guess matmulGuess(MatmulOp op, ArrayRef<SizeExpr> lhs, ArrayRef<SizeExpr> rhs,
                  int64_t rank) {
  if (lhs.size() < 2 || rhs.size() < 2 || rank < 2)
    return Guess(rank);
  Guess guess = broadcastGuess({lhs.drop_back(2), rhs.drop_back(2)}, rank - 2);
  guess.push_back(op.getTransposeLhs() ? lhs.back() : lhs[lhs.size() - 2]);
  guess.push_back(op.getTransposeRhs() ? rhs[rhs.size() - 2] : rhs.back());
  return guess;
}

Guess reduceGuess(ArrayRef<SizeExpr> in, ArrayRef<int64_t> dims,
                  bool keepDims) {
  SmallVector<bool> reduced(in.size(), false);
  for (int64_t d : dims)
    if (auto axis = normalizeAxis(d, in.size()))
      reduced[*axis] = true;
  Guess guess;
  for (auto [i, e] : llvm::enumerate(in)) {
    if (!reduced[i])
      guess.push_back(e);
    else if (keepDims)
      guess.push_back(SizeExpr::constant(1));
  }
  return guess;
}

Guess expandDimsGuess(ArrayRef<SizeExpr> in, ArrayRef<int64_t> dims,
                      int64_t rank) {
  SmallVector<bool> inserted(rank, false);
  for (int64_t d : dims)
    if (auto axis = normalizeAxis(d, rank))
      inserted[*axis] = true;
  Guess guess(rank);
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (inserted[i])
      guess[i] = SizeExpr::constant(1);
    else if (next < in.size())
      guess[i] = in[next++];
  }
  return guess;
}

} // namespace

//===----------------------------------------------------------------------===//
// The analysis
//===----------------------------------------------------------------------===//

unsigned SymbolicShapes::symbolId(StringRef name) {
  auto [it, inserted] = ids.try_emplace(name, names.size());
  if (inserted)
    names.push_back(name.str());
  return it->second;
}

ArrayRef<SizeExpr> SymbolicShapes::dims(Value v) const {
  auto it = shapes.find(v);
  if (it == shapes.end())
    return {};
  return it->second;
}

SizeExpr SymbolicShapes::numel(Value v) const {
  SizeExpr n = SizeExpr::constant(1);
  for (const SizeExpr &e : dims(v))
    n = n * e;
  return n;
}

bool SymbolicShapes::sameShape(Value a, Value b) const {
  return dims(a) == dims(b);
}

std::string SymbolicShapes::shapeString(Value v) const {
  std::string s;
  for (auto [i, e] : llvm::enumerate(dims(v))) {
    std::string one = e.str(names);
    bool compound = e.terms().size() > 1;
    s += (i ? " x " : "") + (compound ? "(" + one + ")" : one);
  }
  return s.empty() ? "scalar" : s;
}

/// `a * b`, or nullopt on overflow.
static std::optional<int64_t> mul(std::optional<int64_t> a, int64_t b) {
  int64_t r;
  if (!a || __builtin_mul_overflow(*a, b, &r))
    return std::nullopt;
  return r;
}

std::optional<int64_t> SymbolicShapes::bound(const SizeExpr &size,
                                             const SizeBounds &b) const {
  int64_t oneLength = std::min(b.maxLen, b.maxTokens);
  int64_t oneBatch = std::min(b.maxBatch, b.maxTokens);
  int64_t pair = mul(b.maxBatch, b.maxLen).value_or(b.maxTokens);
  pair = std::min(pair, b.maxTokens);
  int64_t total = 0;
  for (const SizeExpr::Term &t : size.terms()) {
    // Negative terms only make the size smaller.
    if (t.coefficient <= 0)
      continue;
    int64_t batches = llvm::count_if(t.symbols, [&](unsigned id) {
      return StringRef(names[id]).starts_with("batch");
    });
    int64_t beams = llvm::count_if(
        t.symbols, [&](unsigned id) { return names[id] == "beam"; });
    int64_t lengths = t.symbols.size() - batches - beams;
    // A beam multiplies a batch into the rows of one decode step.
    batches = std::max(batches, beams);
    std::optional<int64_t> m = t.coefficient;
    if (batches && lengths) {
      m = mul(m, pair);
      --batches;
      --lengths;
    }
    for (; m && batches; --batches)
      m = mul(m, oneBatch);
    for (; m && lengths; --lengths)
      m = mul(m, oneLength);
    if (!m || __builtin_add_overflow(total, *m, &total))
      return std::nullopt;
  }
  return total;
}

LogicalResult SymbolicShapes::analyze(func::FuncOp fn) {
  shapes.clear();
  for (BlockArgument arg : fn.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      return fn.emitError("loom-plan-memory: argument #")
             << arg.getArgNumber() << " of @" << fn.getSymName()
             << " is not a ranked tensor";
    auto names = fn.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), kDimsAttr);
    if (names && static_cast<int64_t>(names.size()) != type.getRank())
      return fn.emitError("loom-plan-memory: argument #")
             << arg.getArgNumber() << " of @" << fn.getSymName() << " has "
             << names.size() << " names in " << kDimsAttr << " for rank "
             << type.getRank();
    Dims dims;
    for (int64_t i = 0; i < type.getRank(); ++i) {
      if (!type.isDynamicDim(i)) {
        dims.push_back(SizeExpr::constant(type.getDimSize(i)));
        continue;
      }
      auto name = names ? dyn_cast<StringAttr>(names[i]) : StringAttr();
      if (!name || name.getValue().empty())
        return fn.emitError("loom-plan-memory: dim ")
               << i << " of argument #" << arg.getArgNumber() << " of @"
               << fn.getSymName() << " (" << type
               << ") is dynamic but has no name in " << kDimsAttr
               << ", so its size cannot be bounded";
      dims.push_back(SizeExpr::symbol(symbolId(name.getValue())));
    }
    shapes[arg] = std::move(dims);
  }
  for (Operation &op : fn.getBody().getOps())
    if (failed(analyzeOp(&op)))
      return failure();
  return success();
}

/// The terminator of `op`'s body when `op` is a region op whose block takes
/// one argument per operand and yields one value per result (loom.fusion).
static Operation *regionYield(Operation *op) {
  if (op->getNumRegions() != 1 || !op->getRegion(0).hasOneBlock())
    return nullptr;
  Block &block = op->getRegion(0).front();
  if (block.getNumArguments() != op->getNumOperands() ||
      !block.mightHaveTerminator())
    return nullptr;
  Operation *yield = block.getTerminator();
  return yield->getNumOperands() == op->getNumResults() ? yield : nullptr;
}

LogicalResult SymbolicShapes::analyzeOp(Operation *op) {
  // A region's ops are analyzed like the function's, from the operands.
  Operation *yield = regionYield(op);
  if (yield) {
    Block *block = yield->getBlock();
    for (auto [arg, v] : llvm::zip(block->getArguments(), op->getOperands()))
      shapes[arg] = Dims(dims(v));
    for (Operation &nested : *block)
      if (failed(analyzeOp(&nested)))
        return failure();
  }
  // Copies: adding results to `shapes` moves what it holds.
  SmallVector<Dims, 4> operandDims;
  for (Value v : op->getOperands())
    operandDims.push_back(Dims(dims(v)));
  SmallVector<ArrayRef<SizeExpr>> in(operandDims.begin(), operandDims.end());
  auto operand = [&](unsigned i) {
    return i < in.size() ? in[i] : ArrayRef<SizeExpr>();
  };
  for (OpResult r : op->getResults()) {
    auto type = dyn_cast<RankedTensorType>(r.getType());
    if (!type)
      return op->emitError("loom-plan-memory: result #")
             << r.getResultNumber() << " is not a ranked tensor";
    int64_t rank = type.getRank();
    Guess guess =
        yield ? exactly(Dims(dims(yield->getOperand(r.getResultNumber()))))
              : llvm::TypeSwitch<Operation *, Guess>(op)
                    .Case([&](MatmulOp m) {
                      return matmulGuess(m, operand(0), operand(1), rank);
                    })
                    .Case([&](ReshapeOp m) {
                      return reshapeGuess(operand(0), m.getShape());
                    })
                    .Case<ReshapeAsOp, BroadcastAsOp, SumToOp, SliceGradOp>(
                        [&](Operation *) { return exactly(operand(1)); })
                    .Case([&](ScatterAddOp) { return exactly(operand(2)); })
                    .Case([&](ExpandDimsOp m) {
                      return expandDimsGuess(operand(0), m.getDims(), rank);
                    })
                    .Case([&](TransposeOp m) {
                      Guess g(rank);
                      for (auto [i, p] : llvm::enumerate(m.getPerm()))
                        if (i < g.size() && p >= 0 &&
                            p < int64_t(operand(0).size()))
                          g[i] = operand(0)[p];
                      return g;
                    })
                    .Case([&](SliceOp m) {
                      return sliceGuess(operand(0), m.getDim(), m.getStart(),
                                        m.getEnd());
                    })
                    .Case([&](ConcatOp m) {
                      Guess g = broadcastGuess(in, rank);
                      if (auto axis = normalizeAxis(m.getDim(), rank)) {
                        SizeExpr sum;
                        for (ArrayRef<SizeExpr> dims : in)
                          if (*axis < static_cast<int64_t>(dims.size()))
                            sum = sum + dims[*axis];
                        g[*axis] = sum;
                      }
                      return g;
                    })
                    .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>([&](auto m) {
                      return reduceGuess(operand(0), m.getDims(),
                                         m.getKeepDims());
                    })
                    .Case<IotaOp, CausalMaskOp>([&](auto m) {
                      Guess g(rank);
                      if (auto axis =
                              normalizeAxis(m.getDim(), operand(0).size()))
                        for (auto &e : g)
                          e = operand(0)[*axis];
                      return g;
                    })
                    .Case([&](PaddingMaskOp) {
                      Guess g(rank);
                      if (operand(0).size() == 2 && rank == 4)
                        g = {operand(0)[0], SizeExpr::constant(1),
                             SizeExpr::constant(1), operand(0)[1]};
                      return g;
                    })
                    .Case([&](OneHotOp) {
                      Guess g = exactly(operand(0));
                      g.push_back(std::nullopt);
                      return g;
                    })
                    .Case([&](GatherOp) {
                      Guess g = exactly(operand(1));
                      for (const SizeExpr &e : operand(0).drop_front())
                        g.push_back(e);
                      return g;
                    })
                    .Case([&](CrossEntropyOp) {
                      return exactly(operand(0).drop_back());
                    })
                    .Case([&](LinearOp) {
                      Guess g = exactly(operand(0).drop_back());
                      if (!operand(1).empty())
                        g.push_back(operand(1).front());
                      return g;
                    })
                    .Case([&](AttentionOp) {
                      Guess g = exactly(operand(0).drop_back());
                      if (r.getResultNumber() == 0 && !operand(2).empty())
                        g.push_back(operand(2).back());
                      return g;
                    })
                    .Case([&](AttentionGradOp) {
                      return exactly(operand(r.getResultNumber()));
                    })
                    .Default(
                        [&](Operation *) { return broadcastGuess(in, rank); });

    Dims dims;
    for (int64_t i = 0; i < rank; ++i) {
      if (!type.isDynamicDim(i)) {
        dims.push_back(SizeExpr::constant(type.getDimSize(i)));
        continue;
      }
      if (static_cast<int64_t>(guess.size()) != rank || !guess[i]) {
        std::string value;
        llvm::raw_string_ostream os(value);
        r.printAsOperand(os, OpPrintingFlags());
        return op->emitError("loom-plan-memory: cannot bound dim ")
               << i << " of " << os.str() << " (" << type
               << "): no operand dim or named size gives it";
      }
      dims.push_back(*guess[i]);
    }
    shapes[r] = std::move(dims);
  }
  return success();
}
