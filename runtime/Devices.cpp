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
