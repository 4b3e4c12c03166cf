//===- SizePolynomial.h - Shapes as polynomials in the named sizes -*- C++
//-*-=//
//
// A dim of an executable's buffer is a polynomial with int64 coefficients in
// the named sizes a call binds (`batch*tgt_len - batch`). The loader proves
// facts about such polynomials for every admissible call, where each size
// is at least 1: a dim is never negative, a view stays inside the buffer it
// views, two arguments that a kernel lines up have equal dims. The check is
// sufficient, not exact: with each size s written 1 + t (t >= 0), a
// polynomial whose expanded coefficients are all >= 0 is >= 0 everywhere
// (batch*tgt_len - batch = t_b*t_l + t_l: accepted, as it must be).
//
// All arithmetic is checked: an overflow, or a polynomial too large to
// reason about (a crafted monomial of a thousand factors), gives nothing,
// which the loader reports as a refusal rather than wrapping around.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_SIZEPOLYNOMIAL_H
#define LOOM_RUNTIME_SIZEPOLYNOMIAL_H

#include "runtime/executable.pb.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace loom::runtime {

class SizePolynomial {
public:
  /// Symbol indices (into Executable.symbols), sorted, one per power.
  using Factors = std::vector<int32_t>;

  /// Monomials of more factors than this are refused: no shape of a
  /// Transformer comes near, and expanding one costs 2^degree terms.
  static constexpr size_t kMaxDegree = 12;
  /// Nor may a polynomial, or an expansion, have more terms than this.
  static constexpr size_t kMaxTerms = 1 << 14;

  SizePolynomial() = default; // zero
  static SizePolynomial constant(int64_t value);
  /// `dim` as a polynomial, like terms merged; nothing on overflow or when
  /// it is too large.
  static std::optional<SizePolynomial> of(const Dim &dim);
  /// `factor` times the product of `shape`'s dims: a buffer's bytes for
  /// its element size.
  static std::optional<SizePolynomial>
  product(const google::protobuf::RepeatedPtrField<Dim> &shape, int64_t factor);

  std::optional<SizePolynomial> plus(const SizePolynomial &other) const;
  std::optional<SizePolynomial> minus(const SizePolynomial &other) const;
  std::optional<SizePolynomial> times(const SizePolynomial &other) const;

  /// The value when no symbol appears.
  std::optional<int64_t> constantValue() const;
  bool isConstant(int64_t value) const { return constantValue() == value; }

  /// Whether the polynomial is >= 0 wherever every size is >= 1, by the
  /// sufficient check above; nothing when the expansion overflows.
  std::optional<bool> nonNegativeForPositiveSizes() const;

  /// An upper bound over the sizes the arenas were planned for, by the
  /// planner's rule (passes/SymbolicShapes.h): a symbol whose name starts
  /// with "batch" is a batch size, "beam" multiplies a batch into one (the
  /// rows of a decode step), any other is a length; one batch times one
  /// length is at most `maxTokens`, each other length at most `maxLen`,
  /// each other batch at most `maxBatch`; negative terms count as 0.
  /// Nothing on overflow.
  std::optional<int64_t> bound(const std::vector<std::string> &names,
                               int64_t maxTokens, int64_t maxLen,
                               int64_t maxBatch) const;

  /// The symbols that appear.
  std::vector<int32_t> symbols() const;
  /// "batch*tgt_len - batch", for messages.
  std::string str(const std::vector<std::string> &names) const;

  bool operator==(const SizePolynomial &other) const {
    return constantTerm == other.constantTerm && terms == other.terms;
  }
  bool operator!=(const SizePolynomial &other) const {
    return !(*this == other);
  }

private:
  /// Adds `coefficient` * `monomial`; false on overflow or too many terms.
  bool add(const Factors &monomial, int64_t coefficient);
  /// Calls f(monomial, coefficient) for every term, the constant first.
  template <typename F> void forEachTerm(F &&f) const;
  /// This times `factor`, or nothing on overflow.
  std::optional<SizePolynomial> scaled(int64_t factor) const;

  // Most dims are static: their constant needs no node of the map.
  int64_t constantTerm = 0;
  std::map<Factors, int64_t> terms; // the others; no zero coefficients
};

/// The value of `dim` for the bound `sizes` (one per symbol), computed with
/// checked arithmetic: nothing when it overflows int64.
std::optional<int64_t> evaluateDim(const Dim &dim,
                                   const std::vector<int64_t> &sizes);

} // namespace loom::runtime

#endif // LOOM_RUNTIME_SIZEPOLYNOMIAL_H
