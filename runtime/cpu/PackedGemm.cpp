//===- PackedGemm.cpp - Linear layers over weights packed once ------------===//

#include "runtime/cpu/PackedGemm.h"
#include "runtime/Device.h"
#include "runtime/cpu/CpuFeatures.h"
#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/KernelUtil.h"
#include "runtime/cpu/SmallGemm.h"
#include "runtime/cpu/VecMath.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#if LOOM_HAVE_AVX2_PATH
#include <immintrin.h>
#endif
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

using namespace loom::cpu;

namespace {

using DataType = dnnl::memory::data_type;
using Tag = dnnl::memory::format_tag;

struct FreeMemory {
  void operator()(void *p) const { std::free(p); }
};
/// An array on a cache line's boundary: the few-rows products stream their
/// panels with whole-line loads.
template <typename T> using AlignedArray = std::unique_ptr<T[], FreeMemory>;
template <typename T> AlignedArray<T> alignedArray(int64_t count) {
  size_t bytes = (size_t(count) * sizeof(T) + 63) & ~size_t(63);
  T *p = static_cast<T *>(std::aligned_alloc(64, std::max<size_t>(bytes, 64)));
  if (!p)
    throw std::bad_alloc();
  return AlignedArray<T>(p);
}

/// A weight reordered into the blocked layout a oneDNN matmul reads.
struct PackedCopy {
  dnnl::memory::desc layout;
  dnnl::memory memory; // a handle: a call holding it keeps it alive
};

/// One weight's copies for one content version. Each part is made once,
/// under the store's lock, and never changed after: calls read them without
/// the lock, and new contents get a new Weight (the calls still reading the
/// old one keep it alive), so that decoders on other threads can share it.
struct Weight {
  uint64_t version = 0;
  bool refused = false; // oneDNN had no primitive for it
  /// Packed copies by layout, the latest last (a matmul's layout can depend
  /// on its row count); at most kMaxPackedCopies.
  std::vector<PackedCopy> packed;
  bool quantized = false;      // int8: codes, scales and sums are set
  std::vector<int8_t> codes;   // int8: row-major [n, k], to pack from
  std::vector<float> scales;   // int8: per output channel
  std::vector<int32_t> sums;   // int8: per output channel, its codes' sum
  /// For up to smallGemmRowsChosen() rows (SmallGemm.h): f32 panels, or the
  /// int8 codes in panels; empty until such a call.
  AlignedArray<float> panels;
  AlignedArray<int8_t> codePanels;
};

/// Layouts a weight keeps packed copies in before the oldest goes. Decoding
/// sees one or two (its row counts fall on either side of what a matmul
/// blocks by); more would be copies of the weight kept for nothing.
constexpr size_t kMaxPackedCopies = 3;

/// A weight as the caches know it: its address, shape and precision.
using WeightKey = std::tuple<const float *, int64_t, int64_t, LinearPrecision>;

/// What one cache took from the shared store for a weight: the Weight (kept
/// alive) and the parts its calls have read, so that later calls read them
/// without the store's lock and without touching anything another thread
/// writes (a lock or a reference count taken at every product by two
/// decoders on two cores cost them 3-7% of their speed).
struct Seen {
  /// Its version and refusal never change once the store holds it.
  std::shared_ptr<const Weight> weight;
  const float *panels = nullptr;
  const int8_t *codePanels = nullptr;
  std::vector<PackedCopy> packed;

  /// Whether `weight` is of contents `version`.
  bool current(uint64_t version) const {
    return weight && weight->version == version;
  }
};

/// The copy among `copies` in `layout`, or nullptr.
const dnnl::memory *copyIn(const std::vector<PackedCopy> &copies,
                           const dnnl::memory::desc &layout) {
  for (const PackedCopy &copy : copies)
    if (copy.layout == layout)
      return &copy.memory;
  return nullptr;
}

/// The one CPU engine every cache's products and packed copies belong to,
/// so that a copy one decoder packed runs in another's matmul.
const dnnl::engine &cpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

/// A matmul for one (m, n, k, precision), the weight layout it reads, and
/// its arguments: memory objects made once, pointed at each call's rows and
/// result, since making them per call costs more than a small product. It
/// runs through the C API with these three arguments: the C++ execute()
/// copies its map of arguments into a new vector at every call.
struct Product {
  dnnl::matmul primitive;
  dnnl::memory::desc weights;
  dnnl::memory src, dst;

  void execute(dnnl::stream &stream, const dnnl::memory &weightMemory) {
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src.get()},
                                    {DNNL_ARG_WEIGHTS, weightMemory.get()},
                                    {DNNL_ARG_DST, dst.get()}};
    dnnl::error::wrap_c_api(
        dnnl_primitive_execute(primitive.get(), stream.get(),
                               int(sizeof(args) / sizeof(args[0])), args),
        "could not execute a matmul");
  }
};

/// `chosen` (a weight layout oneDNN picked) with its rows spread apart by
/// spreadRowStride (PackedGemm.h), or `chosen` where it is blocked or its
/// rows are spread already.
dnnl::memory::desc spreadRows(const dnnl::memory::desc &chosen) {
  const dnnl_memory_desc_t &d = chosen.data;
  if (d.format_kind != dnnl_blocked || d.ndims != 2 ||
      d.format_desc.blocking.inner_nblks != 0)
    return chosen;
  const dnnl_dims_t &strides = d.format_desc.blocking.strides;
  int outer = strides[0] >= strides[1] ? 0 : 1;
  if (strides[1 - outer] != 1)
    return chosen;
  int64_t elementBytes = int64_t(
      dnnl::memory::data_type_size(dnnl::memory::data_type(d.data_type)));
  int64_t spread = spreadRowStride(strides[outer], elementBytes);
  if (spread == strides[outer])
    return chosen;
  dnnl::memory::dims spreadStrides = {1, 1};
  spreadStrides[outer] = spread;
  return dnnl::memory::desc({d.dims[0], d.dims[1]},
                            dnnl::memory::data_type(d.data_type),
                            spreadStrides);
}

/// Decoding sees a handful of row counts; an encoder, one per source length.
/// Beyond this many the map starts over (oneDNN's own primitive cache keeps
/// recreating one cheap).
constexpr size_t kMaxProducts = 256;

/// The operand types of a product at `precision`: rows, weights, result.
struct Types {
  DataType x, w, y;
};
Types typesOf(LinearPrecision precision) {
  switch (precision) {
  case LinearPrecision::Int8:
    // The rows as u8 (codes + 128): oneDNN's x86 kernels multiply u8 by s8,
    // and given s8 rows a matmul shifts them itself and sums the weight's
    // columns for the correction at every call, a pass over the whole
    // weight that costs what a product of one row does. The correction
    // here comes from sums taken once, when the weight is packed.
    return {DataType::u8, DataType::s8, DataType::s32};
  case LinearPrecision::BF16:
    return {DataType::bf16, DataType::bf16, DataType::f32};
  case LinearPrecision::F32:
    break;
  }
  return {DataType::f32, DataType::f32, DataType::f32};
}

/// The largest |v[i]|, or -1 when a value is NaN or infinite (it cannot be
/// scaled; the caller computes in f32 and the value propagates as there).
float peakBase(const float *v, int64_t n) {
  float peak = 0;
  for (int64_t i = 0; i < n; ++i) {
    float a = std::fabs(v[i]);
    if (!(a <= std::numeric_limits<float>::max()))
      return -1;
    peak = std::max(peak, a);
  }
  return peak;
}

void codesBase(const float *v, int64_t n, float inverse, int8_t *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<int8_t>(std::nearbyint(v[i] * inverse));
}

/// out = (acc - 128 * sums) * rowScale * channelScales: the product of the
/// codes, from that of the rows shifted to u8 (sums null: acc is the
/// product of the codes already).
void dequantizeBase(const int32_t *acc, int64_t n, float rowScale,
                    const float *channelScales, const int32_t *sums,
                    float *out) {
  for (int64_t j = 0; j < n; ++j)
    out[j] = float(acc[j] - (sums ? 128 * sums[j] : 0)) *
             (rowScale * channelScales[j]);
}

#if LOOM_HAVE_AVX2_PATH
// The same three loops eight lanes at a time. _mm256_cvtps_epi32 rounds to
// nearest even, as nearbyint does in the default rounding mode.
LOOM_TARGET_AVX2 float peakAvx2(const float *v, int64_t n) {
  const __m256 absMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 largest = _mm256_set1_ps(std::numeric_limits<float>::max());
  __m256 peak = _mm256_setzero_ps();
  __m256 bad = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 a = _mm256_and_ps(_mm256_loadu_ps(v + i), absMask);
    // Not (a <= max): NaN or infinity.
    bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, largest, _CMP_NLE_UQ));
    peak = _mm256_max_ps(peak, a);
  }
  if (_mm256_movemask_ps(bad))
    return -1;
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, peak);
  float tail = peakBase(v + i, n - i);
  if (tail < 0)
    return -1;
  for (float lane : lanes)
    tail = std::max(tail, lane);
  return tail;
}

LOOM_TARGET_AVX2 void codesAvx2(const float *v, int64_t n, float inverse,
                                int8_t *out) {
  const __m256 scale = _mm256_set1_ps(inverse);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i q =
        _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(v + i), scale));
    // |q| <= 127: the saturating packs keep the values.
    __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
    __m128i words = _mm_packs_epi32(lo, hi);
    __m128i bytes = _mm_packs_epi16(words, words);
    _mm_storel_epi64(reinterpret_cast<__m128i *>(out + i), bytes);
  }
  codesBase(v + i, n - i, inverse, out + i);
}

LOOM_TARGET_AVX2 void dequantizeAvx2(const int32_t *acc, int64_t n,
                                     float rowScale, const float *channelScales,
                                     const int32_t *sums, float *out) {
  const __m256 rs = _mm256_set1_ps(rowScale);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256i shifted =
        sums ? _mm256_slli_epi32(_mm256_loadu_si256(
                                     reinterpret_cast<const __m256i *>(sums + j)),
                                 7)
             : _mm256_setzero_si256();
    __m256 a = _mm256_cvtepi32_ps(_mm256_sub_epi32(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(acc + j)),
        shifted));
    __m256 s = _mm256_mul_ps(rs, _mm256_loadu_ps(channelScales + j));
    _mm256_storeu_ps(out + j, _mm256_mul_ps(a, s));
  }
  dequantizeBase(acc + j, n - j, rowScale, channelScales,
                 sums ? sums + j : nullptr, out + j);
}
#endif

/// Symmetric quantization of `n` values to [-limit, limit]; returns the
/// scale (0 for a row of zeros, whose codes are all 0), or -1 when a value
/// is NaN or infinite.
float quantizeRow(const float *v, int64_t n, int8_t *out, int limit = 127) {
#if LOOM_HAVE_AVX2_PATH
  bool avx2 = avx2Enabled();
#else
  bool avx2 = false;
#endif
  float peak = avx2 ? peakAvx2(v, n) : peakBase(v, n);
  if (peak < 0)
    return -1;
  if (peak == 0) {
    std::fill(out, out + n, int8_t(0));
    return 0;
  }
  float inverse = float(limit) / peak;
  if (avx2)
    codesAvx2(v, n, inverse, out);
  else
    codesBase(v, n, inverse, out);
  return peak / float(limit);
}

void dequantizeRow(const int32_t *acc, int64_t n, float rowScale,
                   const float *channelScales, const int32_t *sums,
                   float *out) {
#if LOOM_HAVE_AVX2_PATH
  if (avx2Enabled())
    return dequantizeAvx2(acc, n, rowScale, channelScales, sums, out);
#endif
  dequantizeBase(acc, n, rowScale, channelScales, sums, out);
}

/// v with room for at least `size` elements; what it held may stay.
template <typename T> void growTo(std::vector<T> &v, int64_t size) {
  if (int64_t(v.size()) < size)
    v.resize(size_t(size));
}

/// `after` over every row of y [m, n], split over `pool`.
void finishRows(const RowEpilogue &after, float *y, int64_t m, int64_t n,
                ThreadPool *pool) {
  if (!after)
    return;
  int64_t grain = std::max<int64_t>(1, kElementGrain / std::max<int64_t>(n, 1));
  parallelRange(pool, m, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      after(i, y + i * n);
  });
}

} // namespace

int64_t loom::cpu::spreadRowStride(int64_t stride, int64_t elementBytes) {
  if (stride <= 0 || elementBytes <= 0 || (stride * elementBytes) % 2048 != 0)
    return stride;
  return stride + std::max<int64_t>(1, 64 / elementBytes);
}

int loom::cpu::int8WeightLimit() {
  static const int limit = [] {
    std::vector<std::string> features = hostCpuFeatures();
    for (const char *vnni : {"avx512vnni", "avxvnni"})
      if (std::find(features.begin(), features.end(), vnni) != features.end())
        return 127;
    return 63;
  }();
  return limit;
}

/// The weights' copies, one per (weight, shape, precision): shared by every
/// cache that shareWeightsOf joined, each on its own thread.
struct PackedWeights::Store {
  std::mutex mutex;
  std::map<WeightKey, std::shared_ptr<Weight>> weights;
};

struct PackedWeights::Impl {
  std::shared_ptr<Store> store = std::make_shared<Store>();
  dnnl::stream stream{cpuEngine()};
  // Each cache's own: its products' primitives and argument memories (set
  // to each call's rows), and per call at int8 and bf16 the rows converted
  // and the s32 result. The buffers only grow (growTo): a product with the
  // 8000-row generator after one with a 128-row weight would otherwise zero
  // a megabyte of `acc` every step.
  std::map<std::tuple<int64_t, int64_t, int64_t, LinearPrecision>, Product>
      products;
  std::vector<int8_t> rows8;
  std::vector<float> rowScales;
  std::vector<uint16_t> rows16;
  std::vector<int32_t> acc;
  std::map<WeightKey, Seen> seen;

  /// Brings `seen` up to the store's Weight for `key` at `version`, with
  /// the part this call reads (f32 panels, code panels, or the copy in
  /// `product`'s layout), made now if the store has none. False where the
  /// caller multiplies: contents a training step wrote, on first sight, or
  /// a weight oneDNN refused.
  bool take(Seen &seen, const WeightKey &key, const float *w, uint64_t version,
            bool f32Panels, bool codePanels, const Product *product) {
    const auto &[address, n, k, precision] = key;
    std::lock_guard<std::mutex> lock(store->mutex);
    std::shared_ptr<Weight> &slot = store->weights[key];
    if (!slot || slot->version != version) {
      // New contents: the older copies go (with the last call reading
      // them). Contents a training step wrote are multiplied by the caller
      // on first sight (most are used once); any other are packed now, so
      // that their first product is the one every later call computes.
      slot = std::make_shared<Weight>();
      slot->version = version;
      if (version & runtime::kWrittenByStep)
        return false;
    }
    if (seen.weight != slot) {
      seen = Seen();
      seen.weight = slot;
    }
    if (slot->refused)
      return false;
    Weight &weight = *slot;
    if (precision == LinearPrecision::Int8)
      quantize(weight, w, n, k);
    if (f32Panels) {
      makePanels(weight, w, n, k);
      seen.panels = weight.panels.get();
    } else if (codePanels) {
      makeCodePanels(weight, n, k);
      seen.codePanels = weight.codePanels.get();
    } else {
      seen.packed.push_back(
          {product->weights,
           packedCopy(weight, w, n, k, precision, product->weights)});
    }
    return true;
  }

  /// Marks the weight under `key` refused at `version`, for every cache.
  void refuse(Seen &seen, const WeightKey &key, uint64_t version) {
    std::lock_guard<std::mutex> lock(store->mutex);
    auto refused = std::make_shared<Weight>();
    refused->version = version;
    refused->refused = true;
    store->weights[key] = refused;
    seen = Seen();
    seen.weight = std::move(refused);
  }

  Product &productFor(int64_t m, int64_t n, int64_t k,
                      LinearPrecision precision) {
    auto key = std::make_tuple(m, n, k, precision);
    if (auto it = products.find(key); it != products.end())
      return it->second;
    if (products.size() >= kMaxProducts)
      products.clear();
    Types t = typesOf(precision);
    dnnl::memory::desc x({m, k}, t.x, Tag::ab);
    dnnl::memory::desc w({k, n}, t.w, Tag::any);
    dnnl::memory::desc y({m, n}, t.y, Tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(x, w, y), cpuEngine());
    if (dnnl::memory::desc spread = spreadRows(pd.weights_desc());
        spread != pd.weights_desc())
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(x, spread, y),
                                        cpuEngine());
    Product product{dnnl::matmul(pd), pd.weights_desc(),
                    dnnl::memory(x, cpuEngine(), DNNL_MEMORY_NONE),
                    dnnl::memory(y, cpuEngine(), DNNL_MEMORY_NONE)};
    return products[key] = std::move(product);
  }

  // The parts of a Weight, made on first need; the store's lock is held.

  /// Quantizes row-major w [n, k] per output channel, once.
  static void quantize(Weight &weight, const float *w, int64_t n, int64_t k) {
    if (weight.quantized)
      return;
    weight.codes.resize(n * k);
    weight.scales.resize(n);
    weight.sums.assign(n, 0);
    for (int64_t j = 0; j < n; ++j) {
      float scale = quantizeRow(w + j * k, k, weight.codes.data() + j * k,
                                int8WeightLimit());
      if (scale < 0)
        throw dnnl::error(dnnl_invalid_arguments, "a weight is not finite");
      weight.scales[j] = scale;
      for (int64_t i = 0; i < k; ++i)
        weight.sums[j] += weight.codes[j * k + i];
    }
    weight.quantized = true;
  }

  /// The copy of row-major w [n, k] (which is [k, n] in oneDNN's
  /// column-major "ba") in `layout`, reordered now if there is none: from
  /// the codes at int8 (quantize first), rounded at bf16.
  dnnl::memory packedCopy(Weight &weight, const float *w, int64_t n, int64_t k,
                          LinearPrecision precision,
                          const dnnl::memory::desc &layout) {
    if (const dnnl::memory *copy = copyIn(weight.packed, layout))
      return *copy;
    dnnl::memory plain =
        precision == LinearPrecision::Int8
            ? dnnl::memory({{k, n}, DataType::s8, Tag::ba}, cpuEngine(),
                           weight.codes.data())
            : dnnl::memory({{k, n}, DataType::f32, Tag::ba}, cpuEngine(),
                           const_cast<float *>(w));
    dnnl::memory packed(layout, cpuEngine());
    dnnl::reorder(plain, packed).execute(stream, plain, packed);
    stream.wait();
    if (weight.packed.size() >= kMaxPackedCopies)
      weight.packed.erase(weight.packed.begin());
    weight.packed.push_back({layout, packed});
    return packed;
  }

  static void makePanels(Weight &weight, const float *w, int64_t n, int64_t k) {
    if (weight.panels)
      return;
    AlignedArray<float> panels = alignedArray<float>(panelFloats(n, k));
    packPanels(w, n, k, panels.get());
    weight.panels = std::move(panels);
  }

  static void makeCodePanels(Weight &weight, int64_t n, int64_t k) {
    if (weight.codePanels)
      return;
    AlignedArray<int8_t> panels = alignedArray<int8_t>(codePanelBytes(n, k));
    packCodePanels(weight.codes.data(), n, k, panels.get());
    weight.codePanels = std::move(panels);
  }

  // The products; no lock is held, and the Weight's parts they read are
  // made.

  /// Quantizes each of m rows of x into rows8 and rowScales; false when
  /// one cannot be (a NaN or infinity).
  bool quantizeRows(const float *x, int64_t m, int64_t k) {
    growTo(rows8, m * k);
    growTo(rowScales, m);
    for (int64_t i = 0; i < m; ++i) {
      rowScales[i] = quantizeRow(x + i * k, k, rows8.data() + i * k);
      if (rowScales[i] < 0)
        return false;
    }
    return true;
  }

  /// The first `count` codes of rows8 to u8: c + 128 is c with its sign
  /// bit flipped.
  void shiftToUnsigned(int64_t count) {
    // Through a local pointer: a store of int8 may alias the vector's own
    // pointer, which would keep the loop from being vectorized.
    int8_t *codes = rows8.data();
    for (int64_t i = 0; i < count; ++i)
      codes[i] = int8_t(uint8_t(codes[i]) ^ 0x80u);
  }

  /// y = x . w^T at int8 for a few rows, from the codes in panels
  /// (SmallGemm.h): the same integers as the packed product's, and so the
  /// same result. False where a row cannot be quantized.
  bool multiplyFewRows(const Weight &weight, const int8_t *codePanels,
                       const float *x, int64_t m, int64_t n, int64_t k,
                       float *y, ThreadPool *pool, const RowEpilogue &after) {
    if (!quantizeRows(x, m, k))
      return false;
    // The rows as u8, as the packed product takes them, with the same
    // correction by the channels' sums, where the panels' product is exact
    // for them: weights within +-63 (no VNNI), or with AVX512-VNNI.
    bool unsignedRows = int8WeightLimit() <= 63 || vnniEnabled();
    if (unsignedRows)
      shiftToUnsigned(m * k);
    growTo(acc, m * n);
    if (!smallGemmInt8Panels(rows8.data(), codePanels, m, n, k, acc.data(),
                             pool, unsignedRows))
      return false;
    for (int64_t i = 0; i < m; ++i) {
      dequantizeRow(acc.data() + i * n, n, rowScales[i], weight.scales.data(),
                    unsignedRows ? weight.sums.data() : nullptr, y + i * n);
      if (after)
        after(i, y + i * n);
    }
    return true;
  }

  /// y = x . w^T through `product` over `packed` (the weight in the
  /// product's layout) at `precision`; false when the rows cannot be
  /// quantized (a NaN or infinity among them).
  bool multiply(Product &product, const Weight &weight,
                const dnnl::memory &packed, const float *x, int64_t m,
                int64_t n, int64_t k, float *y, LinearPrecision precision,
                ThreadPool *pool, const RowEpilogue &after) {
    void *src = const_cast<float *>(x);
    if (precision == LinearPrecision::Int8) {
      if (!quantizeRows(x, m, k))
        return false;
      shiftToUnsigned(m * k);
      src = rows8.data();
      growTo(acc, m * n);
    } else if (precision == LinearPrecision::BF16) {
      growTo(rows16, m * k);
      dnnl::memory from({{m, k}, DataType::f32, Tag::ab}, cpuEngine(),
                        const_cast<float *>(x));
      dnnl::memory to({{m, k}, DataType::bf16, Tag::ab}, cpuEngine(),
                      rows16.data());
      dnnl::reorder(from, to).execute(stream, from, to);
      src = rows16.data();
    }
    void *dstData = precision == LinearPrecision::Int8
                        ? static_cast<void *>(acc.data())
                        : static_cast<void *>(y);
    product.src.set_data_handle(src);
    product.dst.set_data_handle(dstData);
    product.execute(stream, packed);
    stream.wait();
    if (precision != LinearPrecision::Int8) {
      finishRows(after, y, m, n, pool);
      return true;
    }
    for (int64_t i = 0; i < m; ++i) {
      dequantizeRow(acc.data() + i * n, n, rowScales[i], weight.scales.data(),
                    weight.sums.data(), y + i * n);
      if (after)
        after(i, y + i * n);
    }
    return true;
  }
};

PackedWeights::PackedWeights() : impl(std::make_unique<Impl>()) {}
PackedWeights::~PackedWeights() = default;

void PackedWeights::shareWeightsOf(const PackedWeights &other) {
  impl->store = other.impl->store;
}

bool PackedWeights::linear(const float *x, const float *w, uint64_t version,
                           int64_t m, int64_t n, int64_t k, float *y,
                           LinearPrecision precision, ThreadPool *pool,
                           const RowEpilogue &after) {
  if (version == 0 || m <= 0 || n <= 0 || k <= 0)
    return false;
  // A training step's weight at a few rows in f32 stays with the caller's
  // row-major product: panels made on its second sight would sum in
  // another order than its first call did.
  const bool fewRows = m <= smallGemmRowsChosen();
  if (precision == LinearPrecision::F32 && fewRows &&
      (version & runtime::kWrittenByStep))
    return false;
  // Up to smallGemmRowsChosen() rows multiply panels (f32 ones, or int8
  // codes); more, a oneDNN matmul over a packed copy.
  const bool panels = fewRows && smallGemmTakes(m, n, k);
  bool f32Panels = precision == LinearPrecision::F32 && panels;
  bool codePanels = precision == LinearPrecision::Int8 && panels;
  if (!f32Panels)
    applyOneDnnThreads();
  auto key = std::make_tuple(w, n, k, precision);
  Seen &seen = impl->seen[key];
  if (seen.current(version) && seen.weight->refused)
    return false;
  try {
    Product *product = codePanels || f32Panels
                           ? nullptr
                           : &impl->productFor(m, n, k, precision);
    // What this call reads, as this cache saw it before, or else taken
    // from the store (and made there if missing) under its lock.
    const dnnl::memory *packed =
        product ? copyIn(seen.packed, product->weights) : nullptr;
    bool ready =
        seen.current(version) && (f32Panels    ? seen.panels != nullptr
                                  : codePanels ? seen.codePanels != nullptr
                                               : packed != nullptr);
    if (!ready) {
      if (!impl->take(seen, key, w, version, f32Panels, codePanels, product))
        return false;
      if (product)
        packed = copyIn(seen.packed, product->weights);
    }
    if (f32Panels) {
      if (!smallGemmPanels(x, seen.panels, m, n, k, y, pool))
        return false;
      finishRows(after, y, m, n, pool);
      return true;
    }
    if (codePanels)
      return impl->multiplyFewRows(*seen.weight, seen.codePanels, x, m, n, k, y,
                                   pool, after);
    return impl->multiply(*product, *seen.weight, *packed, x, m, n, k, y,
                          precision, pool, after);
  } catch (const dnnl::error &) {
    // No primitive for this shape here, or a weight that cannot be
    // quantized: sgemm computes it in f32 from now on.
    impl->refuse(seen, key, version);
    return false;
  }
}

int64_t PackedWeights::packedBytes() const {
  std::lock_guard<std::mutex> lock(impl->store->mutex);
  int64_t bytes = 0;
  for (const auto &[key, weight] : impl->store->weights) {
    int64_t n = std::get<1>(key), k = std::get<2>(key);
    for (const PackedCopy &copy : weight->packed)
      bytes += static_cast<int64_t>(copy.layout.get_size());
    if (weight->panels)
      bytes += panelFloats(n, k) * int64_t(sizeof(float));
    if (weight->codePanels)
      bytes += codePanelBytes(n, k);
  }
  return bytes;
}
