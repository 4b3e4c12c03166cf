//===- Sessions.h - What the commands share at run time ---------*- C++ -*-===//
//
// What every command that runs a model shares once it is compiled (the
// compiler is driver/CompileDriver.h): open the device a command's
// `--device` names, a session of an executable on it, parameters drawn or
// read. The runtime reports failures as loom::Status; `toError` turns one
// into the llvm::Error the commands use.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOM_SESSIONS_H
#define LOOM_TOOLS_LOOM_SESSIONS_H

#include "driver/CompileDriver.h"
#include "frontend/InterpretedModel.h"
#include "runtime/Session.h"
#include "runtime/TrainStep.h"

#include "llvm/Support/Error.h"

#include <memory>

namespace loom::cli {

// The commands are written in the driver's terms.
using namespace loom::driver;

/// Opens a session of `exe` on a CPU device with `threads` threads (<= 0:
/// one per hardware thread).
llvm::Expected<std::unique_ptr<runtime::Session>>
loadCpuSession(runtime::Executable exe, int threads);

/// The device a command's `--device` names ("cpu", "cuda", "cuda:N"), with
/// `threads` host threads for the CPU; opened before anything is compiled
/// for it, so that a machine without it says so at once.
llvm::Expected<std::shared_ptr<runtime::Device>>
openCommandDevice(const std::string &kind, int threads);

/// A session of `exe` on `device`.
llvm::Expected<std::unique_ptr<runtime::Session>>
loadSession(runtime::Executable exe, std::shared_ptr<runtime::Device> device);

/// The threads of the CPU device `session` runs on; 0 on another device.
int cpuThreads(runtime::Session &session);

/// Reads the session's parameters from the safetensors file at `path`:
/// every parameter, by name, with its shape.
llvm::Error loadParameters(runtime::Session &session, const std::string &path);

/// Draws every parameter as initialParameters(seed) would, straight into
/// the session's f32 state.
llvm::Error initParameters(runtime::Session &session, uint64_t seed);

/// A [rows, longest] i32 host tensor of `rows`, padded with 0.
llvm::Expected<runtime::Tensor>
idsTensor(const std::vector<std::vector<int64_t>> &rows);

/// A rank-0 host tensor.
llvm::Expected<runtime::Tensor> scalarTensor(DType dtype, double value);

} // namespace loom::cli

#endif // LOOM_TOOLS_LOOM_SESSIONS_H
