//===- Decoding.cpp - Decoding with a compiled model ----------------------===//

#include "runtime/cpu/Decoding.h"

#include <algorithm>
#include <map>

namespace loom::cpu {

ErrorOr<std::vector<std::vector<int32_t>>>
greedyDecode(CpuModel &model, const TensorRef &src,
             const GreedyOptions &options) {
  using Result = ErrorOr<std::vector<std::vector<int32_t>>>;
  if (src.rank() != 2 || src.dtype != runtime::Buffer::I32)
    return Result::failure("greedy decoding takes [batch, len] i32 ids");
  int64_t batch = src.shape[0];
  auto encoded = model.run("encode", {src});
  if (!encoded)
    return Result::failure(encoded.error());
  std::map<std::string, Tensor> state;
  for (NamedTensor &t : *encoded) {
    if (t.name.rfind("cross_", 0) != 0 || t.tensor.shape().size() != 4)
      return Result::failure("@encode returns '" + t.name +
                             "', not a [batch, heads, len, dim] cross cache");
    // Empty self-attention caches, shaped like the cross ones.
    std::vector<int64_t> shape = t.tensor.shape();
    shape[2] = 0;
    state["self_" + t.name.substr(6)] = Tensor(t.tensor.dtype(), shape);
    state[t.name] = std::move(t.tensor);
  }

  Tensor tokens(runtime::Buffer::I32, {batch, 1});
  auto *last = static_cast<int32_t *>(tokens.data());
  std::fill(last, last + batch, options.bos);
  std::vector<std::vector<int32_t>> out(batch);
  std::vector<bool> done(batch, false);
  std::vector<std::string> names = model.inputNames("decode_step");
  for (int64_t t = 0; t < options.maxLen; ++t) {
    Tensor position(runtime::Buffer::I64, {});
    *static_cast<int64_t *>(position.data()) = t;
    std::vector<TensorRef> inputs;
    for (const std::string &name : names) {
      if (name == "src")
        inputs.push_back(src);
      else if (name == "tokens")
        inputs.push_back(tokens.ref());
      else if (name == "position")
        inputs.push_back(position.ref());
      else if (auto it = state.find(name); it != state.end())
        inputs.push_back(it->second.ref());
      else
        return Result::failure("@decode_step takes an input '" + name +
                               "' that greedy decoding does not know");
    }
    auto step = model.run("decode_step", inputs);
    if (!step)
      return Result::failure(step.error());
    bool all = true;
    for (NamedTensor &r : *step) {
      if (r.name != "log_probs") {
        state[r.name] = std::move(r.tensor);
        continue;
      }
      int64_t vocab = r.tensor.shape().back();
      for (int64_t b = 0; b < batch; ++b) {
        const float *row = r.tensor.f32() + b * vocab;
        last[b] =
            static_cast<int32_t>(std::max_element(row, row + vocab) - row);
        if (!done[b]) {
          if (last[b] == options.eos)
            done[b] = true;
          else
            out[b].push_back(last[b]);
        }
        all = all && done[b];
      }
    }
    if (all && options.stopAtEos)
      break;
  }
  return out;
}

} // namespace loom::cpu
