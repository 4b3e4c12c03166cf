//===- CublasLt.h - cuBLASLt, opened when the first GEMM runs ---*- C++ -*-===//
//
// The runtime opens cuBLASLt (libcublasLt.so.13, half a gigabyte) with
// dlopen when a GEMM first runs on a GPU, rather than linking it: a binary
// of the runtime, and a translator exported from it, then starts on a
// machine without CUDA's libraries and runs on its CPU, while a GPU machine
// (which has them) loads the library once. The table holds the entry points
// the GEMM kernels call, with cuBLASLt's own signatures.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_CUBLASLT_H
#define LOOM_RUNTIME_CUDA_CUBLASLT_H

#include "abi/Error.h"

#include <cublasLt.h>

namespace loom::cuda {

#define LOOM_CUBLASLT_FUNCTIONS(X)                                             \
  X(cublasLtCreate)                                                            \
  X(cublasLtGetStatusString)                                                   \
  X(cublasLtMatmul)                                                            \
  X(cublasLtMatmulAlgoGetHeuristic)                                            \
  X(cublasLtMatmulDescCreate)                                                  \
  X(cublasLtMatmulDescDestroy)                                                 \
  X(cublasLtMatmulDescSetAttribute)                                            \
  X(cublasLtMatmulPreferenceCreate)                                            \
  X(cublasLtMatmulPreferenceDestroy)                                           \
  X(cublasLtMatmulPreferenceSetAttribute)                                      \
  X(cublasLtMatrixLayoutCreate)                                                \
  X(cublasLtMatrixLayoutDestroy)                                               \
  X(cublasLtMatrixLayoutSetAttribute)

struct CublasLt {
#define LOOM_CUBLASLT_POINTER(name) decltype(&::name) name = nullptr;
  LOOM_CUBLASLT_FUNCTIONS(LOOM_CUBLASLT_POINTER)
#undef LOOM_CUBLASLT_POINTER
};

/// The library's entry points, loaded on the first call (thread-safe);
/// Unsupported, with the loader's reason, when it cannot be opened.
ErrorOr<const CublasLt *> cublasLt();

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_CUBLASLT_H
