//===- ExecutableValidation.h - What an executable's parts mean -*- C++ -*-===//
//
// The semantic half of validateExecutable (Executable.h), run after the
// structural half has checked that every index is in range and every enum
// known. It holds a file to what the executable writer guarantees, so that
// no file, however crafted, makes a kernel read or write outside a buffer:
//
//   roles    an entry point takes parameters, optimizer state and inputs of
//            its own, and returns outputs of its own; a step writes only
//            temporaries and its entry's outputs (never a view, a constant,
//            an input or state); only @train_step writes outputs over state
//            (`param.w` over parameter w, `exp_avg.w` over itself), each
//            over state it takes, of the same dtype and shape.
//   shapes   every dim is >= 0 for every admissible size (each size >= 1);
//            a temporary's slice holds it at the bounds the arenas were
//            planned for; a view lies inside the buffer it views; an entry
//            point binds every size its buffers name.
//   kernels  a step passes a library kernel the tensors its signature
//            (abi/LibraryCalls.h) takes, with attributes that decode and
//            fit the tensors' ranks; a generated kernel the buffers it was
//            compiled for (Kernel.args), which line up along its domain
//            (Kernel.accesses); a step's results do not overlap its other
//            tensors except where the kernel works in place.
//
// What only the call's sizes decide (a dim for these inputs, a temporary
// beyond its slice, a view beyond its base) is checked again per call by
// Program and Session, and each library kernel checks the extents it
// reads and writes before it touches memory.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_EXECUTABLEVALIDATION_H
#define LOOM_RUNTIME_EXECUTABLEVALIDATION_H

#include "abi/Error.h"
#include "runtime/executable.pb.h"

#include <map>
#include <string>

namespace loom::runtime {

/// Success, or a Corrupt failure naming the buffer, kernel, entry point or
/// step at fault. `exe` must have passed the structural checks.
Status validateSemantics(const Executable &exe);

/// The parameters and optimizer state (not views of them) by name.
std::map<std::string, int> stateBuffersByName(const Executable &exe);

/// The state buffer that output buffer `output` is written over, or -1:
/// the state named like the output (`exp_avg.w`), or the parameter the
/// output names after `param.`. The one rule by which Program binds outputs
/// to state and validation checks them.
int stateWrittenBy(const Executable &exe,
                   const std::map<std::string, int> &state, int output);

/// The buffer whose memory buffer `b` is: itself, or the buffer it views.
int rootOf(const Executable &exe, int b);

/// The output or input name in a per-entry buffer name ("encode/input/src"
/// is "src").
std::string localBufferName(const std::string &name);

/// How messages name the parts of an executable: "buffer 'loss' (#4)".
std::string describeBuffer(const Executable &exe, int index);
std::string describeKernel(const Executable &exe, int index);
std::string describeEntry(const Executable &exe, int index);
/// "step 3 of 'encode'".
std::string describeStep(const Executable &exe, int entry, int step);

} // namespace loom::runtime

#endif // LOOM_RUNTIME_EXECUTABLEVALIDATION_H
