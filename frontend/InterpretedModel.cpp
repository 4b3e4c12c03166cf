//===- InterpretedModel.cpp - A model module run by name ------------------===//

#include "frontend/InterpretedModel.h"

#include "abi/InitialParameters.h"

#include "abi/ModelAbi.h"

#include "ir/LoomDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <random>

using namespace mlir;
using namespace loom;

InterpretedModel::InterpretedModel(ModuleOp module, InterpreterOptions options)
    : module(module), interpreter(module, options) {}

std::map<std::string, std::vector<int64_t>>
InterpretedModel::parameterShapes() const {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (auto fn : module.getOps<func::FuncOp>())
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (auto name = fn.getArgAttrOfType<StringAttr>(i, kParamAttr)) {
        auto type = cast<RankedTensorType>(fn.getArgument(i).getType());
        shapes[name.str()] = type.getShape().vec();
      }
  return shapes;
}

NamedTensors loom::initialParameters(
    const std::map<std::string, std::vector<int64_t>> &shapes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  NamedTensors params;
  for (auto &[name, shape] : shapes) {
    std::vector<float> values(shapeNumel(shape));
    abi::drawInitialParameter(name, shape, rng, values.data());
    params[name] = HostTensor(
        shape, DType::F32, std::vector<double>(values.begin(), values.end()));
  }
  return params;
}

void InterpretedModel::initParameters(uint64_t seed) {
  params = initialParameters(parameterShapes(), seed);
  optState.clear();
  steps = 0;
}

llvm::Expected<NamedTensors>
InterpretedModel::call(StringRef name, const NamedTensors &inputs) const {
  auto fn = module.lookupSymbol<func::FuncOp>(name);
  if (!fn)
    return llvm::createStringError("the model has no function @" + name.str());
  std::vector<HostTensor> args;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    // Optimizer state given by the caller wins over the model's own.
    auto bind = [&](const char *attr, const NamedTensors &from,
                    const char *what) -> llvm::Error {
      auto key = fn.getArgAttrOfType<StringAttr>(i, attr);
      auto it = inputs.find(key.str());
      if (&from == &inputs || it == inputs.end())
        it = from.find(key.str());
      if (it == from.end())
        return llvm::createStringError(
            llvm::formatv("@{0} needs {1} \"{2}\", which was not given", name,
                          what, key.getValue())
                .str());
      args.push_back(it->second);
      return llvm::Error::success();
    };
    llvm::Error err = llvm::Error::success();
    if (fn.getArgAttr(i, kParamAttr))
      err = bind(kParamAttr, params, "parameter");
    else if (fn.getArgAttr(i, kOptStateAttr))
      err = bind(kOptStateAttr, optState, "optimizer state");
    else if (fn.getArgAttr(i, kInputAttr))
      err = bind(kInputAttr, inputs, "input");
    else
      err = llvm::createStringError(
          llvm::formatv("argument {0} of @{1} has no name", i, name).str());
    if (err)
      return std::move(err);
  }
  auto results = interpreter.run(name, args);
  if (!results)
    return results.takeError();
  NamedTensors named;
  for (unsigned i = 0; i < fn.getNumResults(); ++i) {
    auto key = fn.getResultAttrOfType<StringAttr>(i, kOutputAttr);
    named[key ? key.str() : std::to_string(i)] = std::move((*results)[i]);
  }
  return named;
}

llvm::Expected<double> InterpretedModel::trainStep(const HostTensor &src,
                                                   const HostTensor &tgt,
                                                   int64_t seed) {
  if (optState.empty())
    for (auto &[name, value] : params) {
      HostTensor zeros(value.shape, value.kind);
      optState[abi::kFirstMomentPrefix + name] = zeros;
      optState[abi::kSecondMomentPrefix + name] = zeros;
    }
  NamedTensors inputs = {
      {abi::kSrc, src},
      {abi::kTgt, tgt},
      {abi::kSeed, HostTensor::scalar(seed, DType::I64)},
      {abi::kStep, HostTensor::scalar(steps + 1, DType::I64)}};
  auto out = call(abi::kTrainStep, inputs);
  if (!out)
    return out.takeError();
  for (auto &[key, value] : *out) {
    StringRef k(key);
    if (k.consume_front(abi::kUpdatedParamPrefix))
      params[k.str()] = std::move(value);
    else if (k.starts_with("exp_avg"))
      optState[key] = std::move(value);
  }
  ++steps;
  double loss = (*out)[abi::kLossOutput].data.at(0);
  if (!std::isfinite(loss))
    return llvm::createStringError(
        llvm::formatv("the loss is {0} at step {1}", loss, steps).str());
  return loss;
}

llvm::Expected<std::vector<std::vector<int64_t>>>
InterpretedModel::greedy(const HostTensor &src, int64_t maxLen, int64_t bos,
                         int64_t eos) const {
  int64_t batch = src.shape.at(0);
  auto encoded = call(abi::kEncode, {{abi::kSrc, src}});
  if (!encoded)
    return encoded.takeError();
  NamedTensors state = std::move(*encoded);
  state[abi::kSrc] = src;
  // Empty self-attention caches [0, B, 1, H, Dh]: position first, one
  // hypothesis each.
  for (auto &[key, value] : NamedTensors(state)) {
    StringRef k(key);
    if (!k.consume_front("cross_"))
      continue;
    std::vector<int64_t> shape = {0, value.shape[0], 1, value.shape[1],
                                  value.shape[3]};
    state[("self_" + k).str()] = HostTensor(shape, value.kind);
  }
  std::vector<std::vector<int64_t>> out(batch);
  std::vector<bool> done(batch, false);
  std::vector<int64_t> last(batch, bos);
  for (int64_t t = 0; t < maxLen; ++t) {
    HostTensor tokens({batch, 1}, DType::I32);
    for (int64_t b = 0; b < batch; ++b)
      tokens.data[b] = double(last[b]);
    state[abi::kTokens] = tokens;
    state[abi::kPosition] = HostTensor::scalar(double(t), DType::I64);
    state[abi::kStart] = HostTensor({batch}, DType::I64);
    auto step = call(abi::kDecodeStep, state);
    if (!step)
      return step.takeError();
    const HostTensor &logProbs = (*step)[abi::kLogProbs];
    int64_t vocab = logProbs.shape.at(1);
    bool all = true;
    for (int64_t b = 0; b < batch; ++b) {
      const double *row = logProbs.data.data() + b * vocab;
      int64_t best = std::max_element(row, row + vocab) - row;
      last[b] = best;
      if (!done[b]) {
        if (best == eos)
          done[b] = true;
        else
          out[b].push_back(best);
      }
      all = all && done[b];
    }
    for (auto &[key, value] : *step)
      if (StringRef(key).starts_with("self_"))
        state[key] = std::move(value);
    if (all)
      break;
  }
  return out;
}

HostTensor loom::padBatch(const std::vector<std::vector<int64_t>> &rows) {
  size_t width = 0;
  for (const auto &r : rows)
    width = std::max(width, r.size());
  HostTensor t({int64_t(rows.size()), int64_t(width)}, DType::I32);
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < rows[i].size(); ++j)
      t.data[i * width + j] = double(rows[i][j]);
  return t;
}
