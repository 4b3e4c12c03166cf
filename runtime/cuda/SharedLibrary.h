//===- SharedLibrary.h - A CUDA library opened when needed ------*- C++ -*-===//
//
// cuBLASLt and NCCL are opened with dlopen when the runtime first needs
// them, not linked (cuda/CublasLt.h says why): the library this build was
// compiled against by its major version's soname, then by the unversioned
// name a toolkit's lib folder has. Handles are never closed: what is made
// from them lives as long as the process.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_SHAREDLIBRARY_H
#define LOOM_RUNTIME_CUDA_SHAREDLIBRARY_H

#include "abi/Error.h"

#include <dlfcn.h>

#include <string>

namespace loom::cuda {

/// `base`.so.`major`, else `base`.so; Unsupported, with the loader's reason
/// and `need` (what it is needed for), when neither opens.
inline ErrorOr<void *> openCudaLibrary(const std::string &base, int major,
                                       const std::string &need) {
  std::string why;
  for (const std::string &name :
       {base + ".so." + std::to_string(major), base + ".so"}) {
    if (void *library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL))
      return library;
    if (why.empty())
      why = dlerror();
  }
  return Status::failure(base + " cannot be loaded (" + why + "); " + need,
                         ErrorCode::Unsupported);
}

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_SHAREDLIBRARY_H
