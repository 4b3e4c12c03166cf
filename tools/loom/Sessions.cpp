//===- Sessions.cpp - What the commands share at run time -----------------===//

#include "tools/loom/Sessions.h"
#include "tools/loom/Common.h"

#include "runtime/Weights.h"
#include "runtime/cpu/CpuDevice.h"

namespace loom::cli {

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}
} // namespace

llvm::Expected<std::unique_ptr<runtime::Session>>
loadCpuSession(runtime::Executable exe, int threads) {
  auto program = runtime::Program::create(std::move(exe));
  if (!program)
    return toError(program.status());
  auto device = runtime::openDevice("cpu", threads);
  if (!device)
    return toError(device.status());
  return toExpected(runtime::Session::create(*program, *device));
}

int cpuThreads(runtime::Session &session) {
  if (session.device().target() != runtime::Executable::CPU)
    return 0;
  return static_cast<cpu::CpuDevice &>(session.device()).threads();
}

llvm::Expected<std::shared_ptr<runtime::Device>>
openCommandDevice(const std::string &kind, int threads) {
  auto device = runtime::openDevice(kind, threads);
  if (!device)
    return error("--device " + kind + ": " + device.error());
  return std::move(*device);
}

llvm::Expected<std::unique_ptr<runtime::Session>>
loadSession(runtime::Executable exe, std::shared_ptr<runtime::Device> device) {
  auto program = runtime::Program::create(std::move(exe));
  if (!program)
    return toError(program.status());
  return toExpected(runtime::Session::create(*program, std::move(device)));
}

llvm::Error initParameters(runtime::Session &session, uint64_t seed) {
  return toError(runtime::initParameters(session, seed));
}

llvm::Error loadParameters(runtime::Session &session, const std::string &path) {
  return toError(runtime::loadParametersFile(session, path));
}

llvm::Expected<runtime::Tensor>
idsTensor(const std::vector<std::vector<int64_t>> &rows) {
  return toExpected(runtime::idsTensor(rows));
}

llvm::Expected<runtime::Tensor> scalarTensor(DType dtype, double value) {
  return toExpected(runtime::scalarTensor(dtype, value));
}

} // namespace loom::cli
