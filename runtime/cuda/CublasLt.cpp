//===- CublasLt.cpp - cuBLASLt, opened when the first GEMM runs -----------===//

#include "runtime/cuda/CublasLt.h"
#include "runtime/cuda/SharedLibrary.h"

#include <dlfcn.h>

#include <string>

namespace loom::cuda {

namespace {

/// The library this build was compiled against: its major version's
/// soname, then the unversioned name a toolkit's lib folder has.
ErrorOr<CublasLt> load() {
  ErrorOr<void *> library =
      openCudaLibrary("libcublasLt", CUBLAS_VER_MAJOR,
                      "GEMMs on a GPU need CUDA's libraries on the library "
                      "path");
  if (!library)
    return library.status();
  std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  CublasLt table;
#define LOOM_CUBLASLT_RESOLVE(name)                                            \
  table.name = reinterpret_cast<decltype(table.name)>(dlsym(*library, #name)); \
  if (!table.name)                                                             \
    return Status::failure(soname + " has no " #name                           \
                                    "; it is not the cuBLASLt this runtime "   \
                                    "was built for",                           \
                           ErrorCode::Unsupported);
  LOOM_CUBLASLT_FUNCTIONS(LOOM_CUBLASLT_RESOLVE)
#undef LOOM_CUBLASLT_RESOLVE
  // Never closed: handles made from it live as long as the process.
  return table;
}

} // namespace

ErrorOr<const CublasLt *> cublasLt() {
  static const ErrorOr<CublasLt> loaded = load();
  if (!loaded)
    return loaded.status();
  return &*loaded;
}

} // namespace loom::cuda
