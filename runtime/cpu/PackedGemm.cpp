//===- PackedGemm.cpp - Linear layers over weights packed once ------------===//

#include "runtime/cpu/PackedGemm.h"
#include "runtime/cpu/Gemm.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <tuple>

using namespace loom::cpu;

namespace {

using Dims = dnnl::memory::dims;
using DataType = dnnl::memory::data_type;
using Tag = dnnl::memory::format_tag;

/// One weight's state: the version last seen and, from its second call on,
/// the packed copy in the layout `layout`.
struct Weight {
  uint64_t version = 0;
  bool packed = false;
  bool refused = false; // oneDNN had no primitive for it
  dnnl::memory::desc layout;
  dnnl::memory memory;
};

/// A matmul for one (m, n, k) and the weight layout it reads.
struct Product {
  dnnl::matmul primitive;
  dnnl::memory::desc weights;
};

/// Decoding sees a handful of row counts; an encoder, one per source length.
/// Beyond this many the map starts over (oneDNN's own primitive cache keeps
/// recreating one cheap).
constexpr size_t kMaxProducts = 256;

} // namespace

struct PackedWeights::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<std::tuple<const float *, int64_t, int64_t>, Weight> weights;
  std::map<std::tuple<int64_t, int64_t, int64_t>, Product> products;

  Product &productFor(int64_t m, int64_t n, int64_t k) {
    auto key = std::make_tuple(m, n, k);
    if (auto it = products.find(key); it != products.end())
      return it->second;
    if (products.size() >= kMaxProducts)
      products.clear();
    dnnl::memory::desc x({m, k}, DataType::f32, Tag::ab);
    dnnl::memory::desc w({k, n}, DataType::f32, Tag::any);
    dnnl::memory::desc y({m, n}, DataType::f32, Tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(x, w, y), engine);
    return products[key] = Product{dnnl::matmul(pd), pd.weights_desc()};
  }

  /// Reorders row-major w [n, k], which is [k, n] in oneDNN's column-major
  /// "ba", into `layout`.
  void pack(Weight &weight, const float *w, int64_t n, int64_t k,
            const dnnl::memory::desc &layout) {
    dnnl::memory plain({{k, n}, DataType::f32, Tag::ba}, engine,
                       const_cast<float *>(w));
    dnnl::memory packed(layout, engine);
    dnnl::reorder(plain, packed).execute(stream, plain, packed);
    stream.wait();
    weight.layout = layout;
    weight.memory = std::move(packed);
    weight.packed = true;
  }
};

PackedWeights::PackedWeights() : impl(std::make_unique<Impl>()) {}
PackedWeights::~PackedWeights() = default;

bool PackedWeights::linear(const float *x, const float *w, uint64_t version,
                           int64_t m, int64_t n, int64_t k, float *y) {
  if (version == 0 || m <= 0 || n <= 0 || k <= 0)
    return false;
  Weight &weight = impl->weights[std::make_tuple(w, n, k)];
  if (weight.version == version && weight.refused)
    return false;
  if (weight.version != version) {
    // First sight of these contents: the caller multiplies as before, and
    // an older packed copy goes.
    weight = Weight();
    weight.version = version;
    return false;
  }
  try {
    applyOneDnnThreads();
    Product &product = impl->productFor(m, n, k);
    if (!weight.packed || weight.layout != product.weights)
      impl->pack(weight, w, n, k, product.weights);
    dnnl::memory src({{m, k}, DataType::f32, Tag::ab}, impl->engine,
                     const_cast<float *>(x));
    dnnl::memory dst({{m, n}, DataType::f32, Tag::ab}, impl->engine, y);
    product.primitive.execute(impl->stream, {{DNNL_ARG_SRC, src},
                                             {DNNL_ARG_WEIGHTS, weight.memory},
                                             {DNNL_ARG_DST, dst}});
    impl->stream.wait();
    return true;
  } catch (const dnnl::error &) {
    // No primitive for this shape here: sgemm computes the same.
    weight = Weight();
    weight.version = version;
    weight.refused = true;
    return false;
  }
}

int64_t PackedWeights::packedBytes() const {
  int64_t bytes = 0;
  for (const auto &entry : impl->weights)
    if (entry.second.packed)
      bytes += static_cast<int64_t>(entry.second.layout.get_size());
  return bytes;
}
