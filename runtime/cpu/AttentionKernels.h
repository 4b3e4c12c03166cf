//===- AttentionKernels.h - Fused attention on the CPU ----------*- C++ -*-===//
//
// loom.attention and loom.attention_grad as library kernels ("attention",
// "attention_grad"). They tile over keys with an online softmax, so no
// [queries, keys] score matrix of a whole sequence is ever stored; the
// forward saves each query row's log-sum-exp for the backward. Both decode
// their attributes as abi::AttentionCall.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_ATTENTIONKERNELS_H
#define LOOM_RUNTIME_CPU_ATTENTIONKERNELS_H

#include "runtime/cpu/Kernels.h"

namespace loom::cpu {

Status attentionForward(const KernelCall &call);
Status attentionBackward(const KernelCall &call);

} // namespace loom::cpu

#endif // LOOM_RUNTIME_CPU_ATTENTIONKERNELS_H
