//===- InitialParameters.cpp - How a model's parameters start -------------===//

#include "abi/InitialParameters.h"

#include <algorithm>
#include <cmath>

namespace {

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

void loom::abi::drawInitialParameter(std::string_view name,
                                     const std::vector<int64_t> &shape,
                                     std::mt19937_64 &rng, float *out) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  if (endsWith(name, ".bias")) {
    // Zeros, as torch initializes attention and LayerNorm biases.
    std::fill(out, out + n, 0.0f);
  } else if (name.find("norm") != std::string_view::npos &&
             endsWith(name, ".weight")) {
    std::fill(out, out + n, 1.0f);
  } else if (name.find("embed") != std::string_view::npos) {
    // Scaled by sqrt(d_model) in the model, so this gives unit variance.
    std::normal_distribution<double> normal(0.0, 1.0 / std::sqrt(shape.back()));
    for (int64_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(normal(rng));
  } else if (shape.size() == 2) {
    double bound = std::sqrt(6.0 / double(shape[0] + shape[1]));
    std::uniform_real_distribution<double> uniform(-bound, bound);
    for (int64_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(uniform(rng));
  } else {
    std::fill(out, out + n, 0.0f);
  }
}
