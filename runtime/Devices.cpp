//===- Devices.cpp - The devices this runtime was built with --------------===//
//
// The one place that knows every Device implementation, so that tools and
// the conformance suite ask for a device by name.
//
//===----------------------------------------------------------------------===//

#include "runtime/Device.h"
#include "runtime/cpu/CpuDevice.h"

namespace loom::runtime {

std::vector<std::string> deviceKinds() { return {"cpu"}; }

ErrorOr<std::shared_ptr<Device>> openDevice(const std::string &kind,
                                            int threads) {
  // Checked here, for every device: a negative count used to mean "all",
  // and 100000 threads crashed inside the BLAS library.
  if (threads < 0 || threads > kMaxThreads)
    return Status::failure("threads must be 0 (one per hardware thread) or "
                           "between 1 and " +
                               std::to_string(kMaxThreads) + ", got " +
                               std::to_string(threads),
                           ErrorCode::InvalidArgument);
  if (kind == "cpu")
    return std::shared_ptr<Device>(std::make_shared<cpu::CpuDevice>(threads));
  if (kind == "cuda")
    return Status::failure("this runtime was built without the CUDA device",
                           ErrorCode::Unsupported);
  return Status::failure("unknown device '" + kind +
                             "' (this runtime has: cpu)",
                         ErrorCode::NotFound);
}

} // namespace loom::runtime
