//===- AttentionChecks.h - What both devices check of attention -*- C++ -*-===//
//
// The host-side checks of "attention" and "attention_grad" (abi::AttentionCall
// has their tensors and attributes): counts, element types, shapes, the
// mask's broadcast and the seed that dropout needs, in the order and with the
// words of the CPU kernel, which the conformance suite holds every device to.
// Nothing here reads a tensor's data, so the CUDA kernels run the same checks
// on tensors in device memory.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_ATTENTIONCHECKS_H
#define LOOM_RUNTIME_ATTENTIONCHECKS_H

#include "abi/LibraryCalls.h"
#include "runtime/Tensor.h"

#include <cstdint>
#include <vector>

namespace loom::kernels {

/// An attention call once checked. q is [lead..., Sq, D], k [lead..., Sk, D],
/// v [lead..., Sk, Dv]; `batch` is the product of the lead dims. The pointers
/// point into the checked argument vector.
struct AttentionShape {
  abi::AttentionCall attrs;
  const runtime::TensorRef *q = nullptr, *k = nullptr, *v = nullptr;
  const runtime::TensorRef *mask = nullptr; // when attrs.hasMask
  const runtime::TensorRef *seed = nullptr; // when attrs.hasSeed
  /// The remaining tensors in order: out, lse (forward) or out, lse, dout,
  /// dq, dk, dv (backward).
  std::vector<const runtime::TensorRef *> rest;
  std::vector<int64_t> lead;
  int64_t batch = 1, sq = 0, sk = 0, d = 0, dv = 0;
  /// The mask's strides over the scores [lead..., Sq, Sk], 0 on broadcast
  /// dims; empty without a mask.
  std::vector<int64_t> maskStrides;
};

/// Checks `args` and `attrs` as "attention" (`backward` false) or
/// "attention_grad" and describes the call; or says why it is refused, in
/// words that start with the kernel's name. Every tensor is f32 (the seed
/// i64), except that the forward's k and v may both be bf16.
ErrorOr<AttentionShape>
checkAttentionCall(const std::vector<runtime::TensorRef> &args,
                   const abi::CallAttrs &attrs, bool backward);

} // namespace loom::kernels

#endif // LOOM_RUNTIME_ATTENTIONCHECKS_H
