//===- SizePolynomial.cpp - Shapes as polynomials in the named sizes ------===//

#include "runtime/SizePolynomial.h"

#include <algorithm>
#include <utility>

namespace loom::runtime {

namespace {

bool addChecked(int64_t a, int64_t b, int64_t &out) {
  return !__builtin_add_overflow(a, b, &out);
}

bool mulChecked(int64_t a, int64_t b, int64_t &out) {
  return !__builtin_mul_overflow(a, b, &out);
}

/// n choose k for the small n of a monomial's powers.
int64_t binomial(int64_t n, int64_t k) {
  int64_t result = 1;
  for (int64_t i = 1; i <= k; ++i)
    result = result * (n - k + i) / i;
  return result;
}

} // namespace

template <typename F> void SizePolynomial::forEachTerm(F &&f) const {
  static const Factors none;
  if (constantTerm != 0)
    f(none, constantTerm);
  for (const auto &[monomial, coefficient] : terms)
    f(monomial, coefficient);
}

SizePolynomial SizePolynomial::constant(int64_t value) {
  SizePolynomial p;
  p.constantTerm = value;
  return p;
}

bool SizePolynomial::add(const Factors &monomial, int64_t coefficient) {
  if (coefficient == 0)
    return true;
  if (monomial.empty())
    return addChecked(constantTerm, coefficient, constantTerm);
  auto [it, inserted] = terms.try_emplace(monomial, coefficient);
  if (inserted)
    return terms.size() <= kMaxTerms;
  if (!addChecked(it->second, coefficient, it->second))
    return false;
  if (it->second == 0)
    terms.erase(it);
  return true;
}

std::optional<SizePolynomial> SizePolynomial::scaled(int64_t factor) const {
  SizePolynomial p;
  if (factor == 0)
    return p;
  if (!mulChecked(constantTerm, factor, p.constantTerm))
    return std::nullopt;
  for (const auto &[monomial, coefficient] : terms) {
    int64_t c;
    if (!mulChecked(coefficient, factor, c))
      return std::nullopt;
    p.terms.emplace_hint(p.terms.end(), monomial, c);
  }
  return p;
}

std::optional<SizePolynomial> SizePolynomial::of(const Dim &dim) {
  if (dim.has_size())
    return constant(dim.size());
  SizePolynomial p;
  for (const runtime::Monomial &term : dim.poly().terms()) {
    if (static_cast<size_t>(term.symbols_size()) > kMaxDegree)
      return std::nullopt;
    Factors monomial(term.symbols().begin(), term.symbols().end());
    std::sort(monomial.begin(), monomial.end());
    if (!p.add(monomial, term.coefficient()))
      return std::nullopt;
  }
  return p;
}

std::optional<SizePolynomial>
SizePolynomial::product(const google::protobuf::RepeatedPtrField<Dim> &shape,
                        int64_t factor) {
  std::optional<SizePolynomial> p = constant(factor);
  for (const Dim &dim : shape) {
    std::optional<SizePolynomial> d = of(dim);
    if (!d)
      return std::nullopt;
    p = p->times(*d);
    if (!p)
      return std::nullopt;
  }
  return p;
}

std::optional<SizePolynomial>
SizePolynomial::plus(const SizePolynomial &other) const {
  SizePolynomial sum = *this;
  bool ok = true;
  other.forEachTerm([&](const Factors &monomial, int64_t coefficient) {
    ok = ok && sum.add(monomial, coefficient);
  });
  return ok ? std::optional<SizePolynomial>(std::move(sum)) : std::nullopt;
}

std::optional<SizePolynomial>
SizePolynomial::minus(const SizePolynomial &other) const {
  std::optional<SizePolynomial> negated = other.scaled(-1);
  return negated ? plus(*negated) : std::nullopt;
}

std::optional<SizePolynomial>
SizePolynomial::times(const SizePolynomial &other) const {
  if (other.terms.empty())
    return scaled(other.constantTerm);
  if (terms.empty())
    return other.scaled(constantTerm);
  SizePolynomial product;
  bool ok = true;
  forEachTerm([&](const Factors &a, int64_t ca) {
    other.forEachTerm([&](const Factors &b, int64_t cb) {
      if (!ok || a.size() + b.size() > kMaxDegree) {
        ok = false;
        return;
      }
      Factors monomial;
      std::merge(a.begin(), a.end(), b.begin(), b.end(),
                 std::back_inserter(monomial));
      int64_t coefficient;
      ok =
          mulChecked(ca, cb, coefficient) && product.add(monomial, coefficient);
    });
  });
  return ok ? std::optional<SizePolynomial>(std::move(product)) : std::nullopt;
}

std::optional<int64_t> SizePolynomial::constantValue() const {
  if (terms.empty())
    return constantTerm;
  return std::nullopt;
}

std::optional<bool> SizePolynomial::nonNegativeForPositiveSizes() const {
  // Every coefficient >= 0 (the common case) needs no expansion.
  bool allNonNegative = constantTerm >= 0;
  for (const auto &[monomial, coefficient] : terms)
    allNonNegative = allNonNegative && coefficient >= 0;
  if (allNonNegative)
    return true;
  // Substitute s = 1 + t for every symbol: each monomial c * prod s^a
  // becomes c * prod sum_k C(a, k) t^k, expanded term by term.
  SizePolynomial shifted;
  bool ok = true;
  forEachTerm([&](const Factors &monomial, int64_t coefficient) {
    std::vector<std::pair<Factors, int64_t>> expansion = {{{}, coefficient}};
    for (size_t i = 0; ok && i < monomial.size();) {
      int32_t symbol = monomial[i];
      int64_t power = 0;
      for (; i < monomial.size() && monomial[i] == symbol; ++i)
        ++power;
      std::vector<std::pair<Factors, int64_t>> next;
      for (const auto &[m, c] : expansion)
        for (int64_t k = 0; ok && k <= power; ++k) {
          int64_t scaledCoefficient;
          if (!mulChecked(c, binomial(power, k), scaledCoefficient)) {
            ok = false;
            break;
          }
          Factors grown = m;
          grown.insert(grown.end(), k, symbol);
          next.emplace_back(std::move(grown), scaledCoefficient);
          ok = next.size() <= kMaxTerms;
        }
      expansion = std::move(next);
    }
    for (auto &[m, c] : expansion) {
      if (!ok)
        break;
      std::sort(m.begin(), m.end());
      ok = shifted.add(m, c);
    }
  });
  if (!ok)
    return std::nullopt;
  if (shifted.constantTerm < 0)
    return false;
  for (const auto &[monomial, coefficient] : shifted.terms)
    if (coefficient < 0)
      return false;
  return true;
}

std::optional<int64_t>
SizePolynomial::bound(const std::vector<std::string> &names, int64_t maxTokens,
                      int64_t maxLen, int64_t maxBatch) const {
  int64_t oneLength = std::min(maxLen, maxTokens);
  int64_t oneBatch = std::min(maxBatch, maxTokens);
  int64_t pair;
  if (!mulChecked(maxBatch, maxLen, pair))
    pair = maxTokens;
  pair = std::min(pair, maxTokens);
  int64_t total = std::max<int64_t>(constantTerm, 0);
  for (const auto &[monomial, coefficient] : terms) {
    if (coefficient <= 0)
      continue;
    int64_t batches = 0, beams = 0;
    for (int32_t s : monomial) {
      batches += names.at(s).compare(0, 5, "batch") == 0;
      beams += names.at(s) == "beam";
    }
    int64_t lengths = static_cast<int64_t>(monomial.size()) - batches - beams;
    // A beam multiplies a batch into the rows of one decode step.
    batches = std::max(batches, beams);
    int64_t m = coefficient;
    bool ok = true;
    if (batches && lengths) {
      ok = mulChecked(m, pair, m);
      --batches;
      --lengths;
    }
    for (; ok && batches; --batches)
      ok = mulChecked(m, oneBatch, m);
    for (; ok && lengths; --lengths)
      ok = mulChecked(m, oneLength, m);
    if (!ok || !addChecked(total, m, total))
      return std::nullopt;
  }
  return total;
}

std::vector<int32_t> SizePolynomial::symbols() const {
  std::vector<int32_t> all;
  for (const auto &[monomial, coefficient] : terms)
    all.insert(all.end(), monomial.begin(), monomial.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

std::string SizePolynomial::str(const std::vector<std::string> &names) const {
  if (terms.empty())
    return std::to_string(constantTerm);
  std::string s;
  // Highest degree first, as the planner prints them.
  std::vector<std::pair<Factors, int64_t>> ordered(terms.rbegin(),
                                                   terms.rend());
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto &a, const auto &b) {
                     return a.first.size() > b.first.size();
                   });
  if (constantTerm != 0)
    ordered.emplace_back(Factors(), constantTerm);
  for (const auto &[monomial, coefficient] : ordered) {
    bool negative = coefficient < 0;
    uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(coefficient)
                                  : static_cast<uint64_t>(coefficient);
    if (!s.empty())
      s += negative ? " - " : " + ";
    else if (negative)
      s += "-";
    std::string factors;
    for (int32_t symbol : monomial)
      factors += (factors.empty() ? "" : "*") +
                 (symbol >= 0 && size_t(symbol) < names.size()
                      ? names[symbol]
                      : "#" + std::to_string(symbol));
    if (magnitude != 1 || factors.empty())
      s += std::to_string(magnitude) + (factors.empty() ? "" : "*");
    s += factors;
  }
  return s;
}

std::optional<int64_t> evaluateDim(const Dim &dim,
                                   const std::vector<int64_t> &sizes) {
  if (dim.has_size())
    return dim.size();
  int64_t total = 0;
  for (const runtime::Monomial &term : dim.poly().terms()) {
    int64_t value = term.coefficient();
    for (int32_t s : term.symbols())
      if (s < 0 || static_cast<size_t>(s) >= sizes.size() ||
          !mulChecked(value, sizes[s], value))
        return std::nullopt;
    if (!addChecked(total, value, total))
      return std::nullopt;
  }
  return total;
}

} // namespace loom::runtime
