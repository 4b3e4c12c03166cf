//===- Weights.h - Parameters from safetensors files ------------*- C++ -*-===//
//
// A model's parameters travel as a safetensors file named as PyTorch's
// nn.Transformer state_dict names them. Loading one into a session checks
// it against the program: every parameter present with exactly its shape and
// a float dtype, nothing else in the file; values are rounded to f32 and must
// be finite there (InvalidArgument names the parameter and the element).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_WEIGHTS_H
#define LOOM_RUNTIME_WEIGHTS_H

#include "runtime/Safetensors.h"
#include "runtime/Session.h"

#include <string>

namespace loom::runtime {

/// Copies the parameters in `file` (read from `path`, for messages) into the
/// session's state. The optimizer state is left as it is.
Status loadParameters(Session &session, const SafeTensorFile &file,
                      const std::string &path);

/// Reads the safetensors file at `path` and loads its parameters.
Status loadParametersFile(Session &session, const std::string &path);

/// Whether the file at `path` holds exactly `program`'s parameters, by its
/// header alone (names, shapes, float dtypes, a data section that fits):
/// what loadParametersFile would accept, without a session or the data.
Status checkParametersFile(const Program &program, const std::string &path);

/// Sets every parameter of the session to its initial values
/// (abi::drawInitialParameter), drawn in name order from one generator
/// seeded with `seed`: the interpreter's initialParameters(seed) exactly.
Status initParameters(Session &session, uint64_t seed);

} // namespace loom::runtime

#endif // LOOM_RUNTIME_WEIGHTS_H
