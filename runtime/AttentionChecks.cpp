//===- AttentionChecks.cpp - What both devices check of attention ---------===//

#include "runtime/AttentionChecks.h"

#include <algorithm>
#include <string>

using loom::ErrorOr;
using loom::Status;
using loom::runtime::TensorRef;
// "[2, 3]": attention names shapes as the runtime does, not as the
// interpreter-style messages of KernelChecks.h ("2x3").
using loom::runtime::shapeString;

namespace {

/// Checks that `t` can be the tensor `name` of element type `dtype`.
Status checkTensor(const TensorRef &t, const char *name, loom::DType dtype) {
  if (t.dtype != dtype)
    return Status::failure(std::string(name) + " must be " +
                           loom::dtypeName(dtype));
  for (int64_t d : t.shape)
    if (d < 0)
      return Status::failure(std::string(name) +
                             " has a negative dim: " + shapeString(t.shape));
  if (!t.data && t.numel() > 0)
    return Status::failure(std::string(name) + " has no data");
  return Status::success();
}

Status expectShape(const TensorRef &t, const char *name,
                   const std::vector<int64_t> &shape) {
  if (t.shape == shape)
    return Status::success();
  return Status::failure(std::string(name) + " is " + shapeString(t.shape) +
                         ", expected " + shapeString(shape));
}

/// expectShape against [lead..., tail...], which it builds only to say what
/// was expected: a decode step checks its attention calls at every step.
Status expectShape(const TensorRef &t, const char *name,
                   const std::vector<int64_t> &lead,
                   std::initializer_list<int64_t> tail) {
  if (t.shape.size() == lead.size() + tail.size() &&
      std::equal(lead.begin(), lead.end(), t.shape.begin()) &&
      std::equal(tail.begin(), tail.end(), t.shape.begin() + lead.size()))
    return Status::success();
  std::vector<int64_t> shape = lead;
  shape.insert(shape.end(), tail);
  return expectShape(t, name, shape);
}

} // namespace

ErrorOr<loom::kernels::AttentionShape>
loom::kernels::checkAttentionCall(const std::vector<TensorRef> &args,
                                  const abi::CallAttrs &callAttrs,
                                  bool backward) {
  const char *kernel = backward ? "attention_grad" : "attention";
  auto fail = [&](const std::string &why) {
    return Status::failure(std::string(kernel) + ": " + why);
  };
  ErrorOr<abi::AttentionCall> attrs = abi::AttentionCall::decode(callAttrs);
  if (!attrs)
    return attrs.status().withContext(kernel);
  size_t fixed = backward ? 6 : 3, results = backward ? 3 : 2;
  size_t expected = fixed + attrs->hasMask + attrs->hasSeed + results;
  if (args.size() != expected)
    return fail("expects " + std::to_string(expected) + " tensors, got " +
                std::to_string(args.size()));

  static const char *const kForwardNames[] = {"q", "k", "v"};
  static const char *const kBackwardNames[] = {"q",   "k",   "v",
                                               "out", "lse", "dout"};
  const char *const *names = backward ? kBackwardNames : kForwardNames;
  // The forward's keys and values may be held in bf16 (a decoder's caches
  // at --precision bf16), both alike; scores and sums stay f32.
  DType keys =
      !backward && args[1].dtype == DType::BF16 ? DType::BF16 : DType::F32;
  for (size_t i = 0; i < fixed; ++i)
    LOOM_RETURN_IF_ERROR(
        checkTensor(args[i], names[i], i == 1 || i == 2 ? keys : DType::F32)
            .withContext(kernel));
  const TensorRef &q = args[0], &k = args[1], &v = args[2];
  size_t next = fixed;
  const TensorRef *mask = attrs->hasMask ? &args[next++] : nullptr;
  const TensorRef *seed = attrs->hasSeed ? &args[next++] : nullptr;
  if (mask)
    LOOM_RETURN_IF_ERROR(
        checkTensor(*mask, "mask", DType::F32).withContext(kernel));
  if (seed)
    LOOM_RETURN_IF_ERROR(
        checkTensor(*seed, "seed", DType::I64).withContext(kernel));
  static const char *const kResultNames[] = {"out", "lse", "dq", "dk", "dv"};
  for (size_t i = 0; i < results; ++i)
    LOOM_RETURN_IF_ERROR(checkTensor(args[next + i],
                                     kResultNames[i + (backward ? 2 : 0)],
                                     DType::F32)
                             .withContext(kernel));

  // q [lead..., Sq, D], k [lead..., Sk, D], v [lead..., Sk, Dv]; keys held
  // position first are [Sk, lead..., D] and [Sk, lead..., Dv]. Dim i of k or
  // v as if it were [lead..., Sk, D] (the tensors' rank checked first):
  auto kvDim = [&](const TensorRef &t, int64_t i) {
    int64_t rank = t.rank();
    if (!attrs->keysPositionMajor || rank < 2 || i == rank - 1)
      return t.shape[i];
    return i == rank - 2 ? t.shape[0] : t.shape[i + 1];
  };
  if (attrs->keysPositionMajor && backward)
    return fail("keys held position first are for inference only");
  int64_t r = q.rank();
  bool leadFits = r >= 2 && k.rank() == r && v.rank() == r;
  for (int64_t i = 0; leadFits && i < r - 2; ++i)
    leadFits = q.shape[i] == kvDim(k, i) && q.shape[i] == kvDim(v, i);
  if (!leadFits)
    return fail("needs q, k and v of one rank (2 or more) with equal leading "
                "dims, got " +
                shapeString(q.shape) + ", " + shapeString(k.shape) + " and " +
                shapeString(v.shape) +
                (attrs->keysPositionMajor ? " (keys position first)" : ""));
  if (q.shape[r - 1] != kvDim(k, r - 1) || kvDim(k, r - 2) != kvDim(v, r - 2))
    return fail("q " + shapeString(q.shape) + ", k " + shapeString(k.shape) +
                " and v " + shapeString(v.shape) + " do not fit " +
                (attrs->keysPositionMajor
                     ? "[..., Sq, D], [Sk, ..., D], [Sk, ..., Dv]"
                     : "[..., Sq, D], [..., Sk, D], [..., Sk, Dv]"));
  AttentionShape s;
  s.attrs = *attrs;
  s.q = &q;
  s.k = &k;
  s.v = &v;
  s.mask = mask;
  s.seed = seed;
  s.lead.assign(q.shape.begin(), q.shape.end() - 2);
  s.batch = runtime::numelOf(s.lead);
  s.sq = q.shape[r - 2];
  s.d = q.shape[r - 1];
  s.sk = kvDim(k, r - 2);
  s.dv = kvDim(v, r - 1);

  if (mask) {
    // Right-aligned against the scores [lead..., Sq, Sk]: each mask dim is
    // 1 or the scores' dim.
    auto scoreDim = [&](int64_t i) {
      return i < r - 2 ? s.lead[i] : i == r - 2 ? s.sq : s.sk;
    };
    int64_t mr = mask->rank();
    bool fits = mr <= r;
    for (int64_t i = 0; fits && i < mr; ++i) {
      int64_t md = mask->shape[i], sd = scoreDim(r - mr + i);
      fits = md == 1 || md == sd;
    }
    if (!fits) {
      std::vector<int64_t> scores = s.lead;
      scores.insert(scores.end(), {s.sq, s.sk});
      return fail("mask " + shapeString(mask->shape) +
                  " does not broadcast to the scores " + shapeString(scores));
    }
    s.maskStrides.assign(r, 0);
    int64_t stride = 1;
    for (int64_t i = mr - 1; i >= 0; --i) {
      if (mask->shape[i] != 1)
        s.maskStrides[r - mr + i] = stride;
      stride *= mask->shape[i];
    }
  }

  // The rate is in [0, 1): AttentionCall::decode checked it.
  if (attrs->dropoutRate > 0.0 && (!seed || seed->numel() != 1))
    return fail("dropout needs a seed holding one value");

  if (backward) {
    const TensorRef &o = args[3], &lse = args[4], &dout = args[5];
    for (const Status &e : {expectShape(o, "out", s.lead, {s.sq, s.dv}),
                            expectShape(lse, "lse", s.lead, {s.sq}),
                            expectShape(dout, "dout", s.lead, {s.sq, s.dv}),
                            expectShape(args[next], "dq", q.shape),
                            expectShape(args[next + 1], "dk", k.shape),
                            expectShape(args[next + 2], "dv", v.shape)})
      LOOM_RETURN_IF_ERROR(e.withContext(kernel));
    s.rest = {&o, &lse, &dout, &args[next], &args[next + 1], &args[next + 2]};
  } else {
    for (const Status &e :
         {expectShape(args[next], "out", s.lead, {s.sq, s.dv}),
          expectShape(args[next + 1], "lse", s.lead, {s.sq})})
      LOOM_RETURN_IF_ERROR(e.withContext(kernel));
    s.rest = {&args[next], &args[next + 1]};
  }
  return s;
}
