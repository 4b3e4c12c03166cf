//===- StepValidation.h - A step against its kernel's signature -*- C++ -*-===//
//
// Private to the executable's validation (ExecutableValidation.cpp): the
// checks of one step's buffers against what its kernel takes. A library
// kernel's signature is abi/LibraryCalls.h's table; a generated kernel's is
// recorded in its Kernel message (args, accesses) by the writer.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_STEPVALIDATION_H
#define LOOM_RUNTIME_STEPVALIDATION_H

#include "abi/Error.h"
#include "abi/LibraryCalls.h"
#include "runtime/SizePolynomial.h"
#include "runtime/executable.pb.h"

#include <string>
#include <vector>

namespace loom::runtime {

/// Every buffer's dims as polynomials (validated non-negative), per buffer.
using BufferDims = std::vector<std::vector<SizePolynomial>>;

/// What a step does with each of its arguments, by its kernel's signature.
/// One is reused from step to step, with its scratch, so that validating
/// thousands of steps allocates little.
struct StepEffects {
  std::vector<bool> written;
  /// Read arguments a written one may occupy exactly (in place).
  std::vector<bool> mayShareWithResult;

  // Scratch of checkStep.
  abi::CallAttrs attrs;
  std::vector<int> ranks;
  std::vector<const Dim *> lastDims;
};

/// Checks the records of generated kernel `k` (Kernel.args, accesses)
/// before any step is held to them.
Status validateGeneratedKernel(const Executable &exe, int k);

/// Checks `step` against the signature of the kernel it calls: the count,
/// dtype and rank of its buffers, attributes that decode and fit them, and
/// for a generated kernel the static sizes it was compiled with and dims
/// that line up along its domain. A library kernel
/// this runtime does not know is left to the device, which refuses it when
/// it loads the code; its arguments are then reported as read.
Status checkStep(const Executable &exe, const BufferDims &dims, int entry,
                 int step, StepEffects &effects);

} // namespace loom::runtime

#endif // LOOM_RUNTIME_STEPVALIDATION_H
