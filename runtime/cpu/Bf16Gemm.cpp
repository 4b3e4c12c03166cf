//===- Bf16Gemm.cpp - Products of bf16 factors with f32 sums --------------===//
//
// oneDNN's matmul takes both transposes as strides, so a product is made
// once per shape and layout and kept (a training step has a few dozen). A
// shape oneDNN refuses (no bf16 matmul on this CPU) is remembered, and that
// product widens its factors instead.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Bf16Gemm.h"

#include "runtime/cpu/Gemm.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

using namespace loom::cpu;

namespace {

using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t>;

/// The matmuls made so far; nullopt where oneDNN refused the shape.
struct Products {
  std::mutex mutex;
  std::map<Key, std::optional<dnnl::matmul>> byKey;
};

Products &products() {
  static Products store;
  return store;
}

const dnnl::engine &engine() {
  static const dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
  return cpu;
}

/// A row-major [rows, cols] operand of `type` whose rows lie `ld` elements
/// apart, or its transpose (then the stored matrix is [cols, rows]).
dnnl::memory::desc operandDesc(int64_t rows, int64_t cols, int64_t ld,
                               bool transposed, dnnl::memory::data_type type) {
  return dnnl::memory::desc({rows, cols}, type,
                            transposed ? dnnl::memory::dims{1, ld}
                                       : dnnl::memory::dims{ld, 1});
}

/// The matmul for `key`, or nullopt where oneDNN has none.
std::optional<dnnl::matmul> productFor(const Key &key) {
  Products &store = products();
  std::lock_guard<std::mutex> lock(store.mutex);
  auto found = store.byKey.find(key);
  if (found != store.byKey.end())
    return found->second;
  auto [ta, tb, m, n, k, lda, ldb, ldc] = key;
  using DT = dnnl::memory::data_type;
  std::optional<dnnl::matmul> made;
  try {
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(operandDesc(m, k, lda, ta, DT::bf16),
                           operandDesc(k, n, ldb, tb, DT::bf16),
                           operandDesc(m, n, ldc, false, DT::f32)),
        engine());
    made = dnnl::matmul(pd);
  } catch (const dnnl::error &) {
    made = std::nullopt;
  }
  if (store.byKey.size() >= 1024)
    store.byKey.clear();
  store.byKey[key] = made;
  return made;
}

/// `rows` x `cols` of bf16 at stride `ld`, widened into a dense f32 copy.
const float *widen(const uint16_t *from, int64_t rows, int64_t cols, int64_t ld,
                   std::vector<float> &to) {
  to.resize(size_t(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      to[size_t(i * cols + j)] = floatFromBf16(from[i * ld + j]);
  return to.data();
}

} // namespace

void loom::cpu::bf16Gemm(bool transA, bool transB, int64_t m, int64_t n,
                         int64_t k, const uint16_t *a, int64_t lda,
                         const uint16_t *b, int64_t ldb, float *c,
                         int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (k > 0) {
    Key key{transA, transB, m, n, k, lda, ldb, ldc};
    if (std::optional<dnnl::matmul> product = productFor(key)) {
      applyOneDnnThreads();
      using DT = dnnl::memory::data_type;
      dnnl::stream stream(engine());
      dnnl::memory am(operandDesc(m, k, lda, transA, DT::bf16), engine(),
                      const_cast<uint16_t *>(a));
      dnnl::memory bm(operandDesc(k, n, ldb, transB, DT::bf16), engine(),
                      const_cast<uint16_t *>(b));
      dnnl::memory cm(operandDesc(m, n, ldc, false, DT::f32), engine(), c);
      product->execute(
          stream,
          {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
      stream.wait();
      return;
    }
  }
  // Widened: the same products, exact in f32, summed by sgemm.
  thread_local std::vector<float> wideA, wideB;
  const float *fa = widen(a, transA ? k : m, transA ? m : k, lda, wideA);
  const float *fb = widen(b, transB ? n : k, transB ? k : n, ldb, wideB);
  sgemm(transA, transB, m, n, k, 1.0f, fa, transA ? m : k, fb, transB ? k : n,
        0.0f, c, ldc);
}

void loom::cpu::roundThroughBf16(const float *in, int64_t count, float *out) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = floatFromBf16(bf16FromFloat(in[i]));
}
