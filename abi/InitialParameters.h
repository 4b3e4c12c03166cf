//===- InitialParameters.h - How a model's parameters start -----*- C++ -*-===//
//
// A parameter's initial values follow from its name and shape alone, so the
// interpreter, the compiled model's session and tools that have only the
// runtime (a benchmark on a GPU machine) all start a model alike, value for
// value, from the same seed.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_ABI_INITIALPARAMETERS_H
#define LOOM_ABI_INITIALPARAMETERS_H

#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

namespace loom::abi {

/// Draws parameter `name`'s initial values into `out` as torch initializes
/// nn.Transformer's (Xavier-uniform matrices, zero biases, unit norm
/// weights, N(0, 1/d) embeddings), continuing `rng`. Parameters drawn in
/// name order from one generator give the same model everywhere.
void drawInitialParameter(std::string_view name,
                          const std::vector<int64_t> &shape,
                          std::mt19937_64 &rng, float *out);

} // namespace loom::abi

#endif // LOOM_ABI_INITIALPARAMETERS_H
