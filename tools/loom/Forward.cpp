//===- Forward.cpp - `loom forward` and `loom grad` -----------------------===//
//
// Both run a config with named safetensors weights on one batch: every line
// of --src-ids and --tgt-ids is a sentence of space-separated ids, all lines
// form one batch padded with 0. Dropout is off (the config's rate is set to
// 0 before the model is built), label smoothing is kept for the loss.
//
//   forward: per pair, log p(y[t+1] | y[0..t], x) for t = 0 .. len(y)-2,
//            from @token_log_probs, printed "%.9g" and space-separated
//   grad:    d loss / d parameter for every parameter, from @loss_grad,
//            written as F32 safetensors under the parameter names
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"

#include "frontend/Transformer.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"
#include "tools/loom/Sessions.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <functional>
#include <memory>

namespace loom::cli {

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

struct RunOptions {
  ModelOptions model;
  std::string weights, srcIds, tgtIds;
  std::string backend = "cpu";
  std::string device = "cpu";
  int threads = 0;
  std::string out;                // grad only
  std::string precision = "fp32"; // grad only: the step's products
};

/// Everything a run needs, loaded and checked before anything runs.
struct Batch {
  TransformerConfig config;
  std::vector<std::vector<int64_t>> src, tgt;
};

llvm::Expected<Batch> loadBatch(const RunOptions &options) {
  if (llvm::Error err = checkBackend(options.backend))
    return std::move(err);
  if (options.backend == "interpreter" && options.device != "cpu")
    return error("--device applies to --backend cpu (the compiled model); "
                 "the interpreter runs on the CPU");
  Batch batch;
  auto config = options.model.load();
  if (!config)
    return config.takeError();
  batch.config = *config;
  // Forward and grad are deterministic: dropout off, whatever the config.
  batch.config.set_dropout(0.0);
  auto src = readIdFile(options.srcIds, "src-ids", batch.config.src_vocab(),
                        "src_vocab", batch.config.max_len());
  if (!src)
    return src.takeError();
  auto tgt = readIdFile(options.tgtIds, "tgt-ids", batch.config.tgt_vocab(),
                        "tgt_vocab", batch.config.max_len());
  if (!tgt)
    return tgt.takeError();
  if (src->size() != tgt->size())
    return error(llvm::formatv("src-ids has {0} lines but tgt-ids has {1}; "
                               "they must pair up line by line",
                               src->size(), tgt->size()));
  for (size_t i = 0; i < src->size(); ++i)
    if ((*src)[i].empty())
      return error(llvm::formatv("src-ids '{0}' line {1} is empty",
                                 options.srcIds, i + 1));
  batch.src = std::move(*src);
  batch.tgt = std::move(*tgt);
  return batch;
}

size_t longest(const std::vector<std::vector<int64_t>> &rows) {
  size_t n = 0;
  for (const auto &r : rows)
    n = std::max(n, r.size());
  return n;
}

/// Builds the model module (with @loss_grad when `withGrad`) and binds the
/// weights; `run` gets the model ready to call.
llvm::Error
withModel(const RunOptions &options, const Batch &batch, bool withGrad,
          const std::function<llvm::Error(InterpretedModel &)> &run) {
  mlir::MLIRContext ctx;
  auto module = buildModelModule(ctx, batch.config);
  if (!module)
    return error("could not build the model module");
  if (withGrad && options.precision != "fp32") {
    // The module as it is compiled (fusion decides which products there
    // are, and loom-mixed-precision rounds their factors), less the memory
    // plan: the interpreter evaluates what the compiled step computes.
    CompilePipelineOptions pipeline;
    pipeline.training.dModel = batch.config.d_model();
    pipeline.training.precision = options.precision;
    pipeline.planMemory = false;
    if (mlir::failed(runCompilePipeline(*module, pipeline)))
      return error("the compile pipeline failed on the model");
  } else if (withGrad) {
    mlir::PassManager pm(&ctx);
    pm.addPass(createLoomAutodiff());
    if (mlir::failed(pm.run(*module)))
      return error("loom-autodiff failed on the model");
  }
  InterpretedModel model(*module);
  auto weights = loadWeights(options.weights, model.parameterShapes());
  if (!weights)
    return weights.takeError();
  model.parameters() = std::move(*weights);
  return run(model);
}

using CpuTensors = std::map<std::string, runtime::Tensor>;

/// Compiles the model for --device with bounds that fit `batch`, binds
/// the weights and runs `entry` on the named inputs (host tensors, copied
/// to the device); the outputs come back to the host.
llvm::Expected<CpuTensors> runCompiled(const RunOptions &options,
                                       const Batch &batch,
                                       const std::string &entry,
                                       const CpuTensors &inputs) {
  auto device = openCommandDevice(options.device, options.threads);
  if (!device)
    return device.takeError();
  int64_t rows = static_cast<int64_t>(batch.src.size());
  int64_t len =
      static_cast<int64_t>(std::max(longest(batch.src), longest(batch.tgt)));
  CompilePipelineOptions pipeline =
      pipelineFor(batch.config, rows * len, len, rows);
  pipeline.training.precision = options.precision;
  auto exe = compileExecutable(batch.config, pipeline, codeTargetOf(**device));
  if (!exe)
    return exe.takeError();
  auto model = loadSession(std::move(*exe), *device);
  if (!model)
    return model.takeError();
  if (llvm::Error err = loadParameters(**model, options.weights))
    return std::move(err);
  std::vector<runtime::Tensor> placed;
  std::vector<runtime::TensorRef> refs;
  for (const std::string &name : (*model)->inputNames(entry)) {
    auto it = inputs.find(name);
    if (it == inputs.end())
      return error("@" + entry + " takes an input '" + name +
                   "' that this command does not provide");
    if ((*device)->sharesHostMemory()) {
      refs.push_back(it->second.ref());
      continue;
    }
    auto onDevice = toExpected(runtime::toDevice(**device, it->second.ref()));
    if (!onDevice)
      return onDevice.takeError();
    refs.push_back(onDevice->ref());
    placed.push_back(std::move(*onDevice));
  }
  auto outputs = (*model)->run(entry, refs);
  if (!outputs)
    return error(outputs.error());
  CpuTensors named;
  for (runtime::NamedTensor &output : *outputs) {
    auto host = toExpected(runtime::toHost(output.tensor));
    if (!host)
      return host.takeError();
    named[output.name] = std::move(*host);
  }
  return named;
}

/// The batch as @token_log_probs and @loss_grad take it: src and tgt ids.
llvm::Expected<CpuTensors> idsInputs(const Batch &batch) {
  auto src = idsTensor(batch.src);
  if (!src)
    return src.takeError();
  auto tgt = idsTensor(batch.tgt);
  if (!tgt)
    return tgt.takeError();
  CpuTensors inputs;
  inputs["src"] = std::move(*src);
  inputs["tgt"] = std::move(*tgt);
  return inputs;
}

llvm::Error forward(const RunOptions &options) {
  auto batch = loadBatch(options);
  if (!batch)
    return batch.takeError();
  std::vector<std::vector<double>> rows(batch->tgt.size());
  auto compute = [&](InterpretedModel &model) -> llvm::Error {
    // With no target longer than one token there is nothing to predict.
    if (longest(batch->tgt) < 2)
      return llvm::Error::success();
    auto out = model.call("token_log_probs", {{"src", padBatch(batch->src)},
                                              {"tgt", padBatch(batch->tgt)}});
    if (!out)
      return out.takeError();
    const HostTensor &logProbs = (*out)["log_probs"];
    int64_t width = logProbs.shape.at(1);
    for (size_t b = 0; b < rows.size(); ++b)
      for (int64_t t = 0; t + 1 < int64_t(batch->tgt[b].size()); ++t)
        rows[b].push_back(logProbs.data[b * width + t]);
    return llvm::Error::success();
  };
  if (options.backend == "cpu") {
    if (longest(batch->tgt) >= 2) {
      auto inputs = idsInputs(*batch);
      if (!inputs)
        return inputs.takeError();
      auto out = runCompiled(options, *batch, "token_log_probs", *inputs);
      if (!out)
        return out.takeError();
      const runtime::Tensor &logProbs = (*out)["log_probs"];
      int64_t width = logProbs.shape().at(1);
      for (size_t b = 0; b < rows.size(); ++b)
        for (int64_t t = 0; t + 1 < int64_t(batch->tgt[b].size()); ++t)
          rows[b].push_back(logProbs.f32()[b * width + t]);
    }
  } else if (llvm::Error err = withModel(options, *batch, false, compute)) {
    return err;
  }
  for (const auto &row : rows) {
    for (size_t t = 0; t < row.size(); ++t)
      std::printf(t ? " %.9g" : "%.9g", row[t]);
    std::printf("\n");
  }
  return llvm::Error::success();
}

llvm::Error grad(const RunOptions &options) {
  // Before anything runs: `--out` the weights file would replace the
  // weights by their gradients.
  if (llvm::Error err =
          checkOutputFile(options.out, "--out",
                          {options.weights, options.srcIds, options.tgtIds,
                           options.model.configPath}))
    return err;
  auto batch = loadBatch(options);
  if (!batch)
    return batch.takeError();
  if (longest(batch->tgt) < 2)
    return error("every tgt-ids line has fewer than 2 tokens: the loss has "
                 "no target to predict");
  if (options.backend == "cpu") {
    auto inputs = idsInputs(*batch);
    if (!inputs)
      return inputs.takeError();
    auto seed = scalarTensor(DType::I64, 0);
    if (!seed)
      return seed.takeError();
    (*inputs)["seed"] = std::move(*seed);
    auto out = runCompiled(options, *batch, "loss_grad", *inputs);
    if (!out)
      return out.takeError();
    NamedTensors grads;
    for (auto &[name, value] : *out) {
      llvm::StringRef key(name);
      if (!key.consume_front("grad."))
        continue;
      HostTensor host(value.shape(), DType::F32);
      for (int64_t i = 0; i < value.numel(); ++i)
        host.data[i] = value.f32()[i];
      grads[key.str()] = std::move(host);
    }
    if (llvm::Error err = saveWeights(options.out, grads))
      return err;
    std::printf("loss %.9g\n", double((*out)["loss"].f32()[0]));
    return llvm::Error::success();
  }
  return withModel(
      options, *batch, true, [&](InterpretedModel &model) -> llvm::Error {
        auto out = model.call("loss_grad",
                              {{"src", padBatch(batch->src)},
                               {"tgt", padBatch(batch->tgt)},
                               {"seed", HostTensor::scalar(0, DType::I64)}});
        if (!out)
          return out.takeError();
        NamedTensors grads;
        for (auto &[name, value] : *out) {
          llvm::StringRef key(name);
          if (key.consume_front("grad."))
            grads[key.str()] = std::move(value);
        }
        for (const auto &[name, value] : model.parameters())
          if (!grads.count(name))
            return error("@loss_grad returns no gradient for '" + name + "'");
        if (llvm::Error err = saveWeights(options.out, grads))
          return err;
        std::printf("loss %.9g\n", (*out)["loss"].data.at(0));
        return llvm::Error::success();
      });
}

void addRunOptions(CLI::App *cmd, RunOptions &options) {
  options.model.addTo(cmd);
  cmd->add_option("--weights", options.weights,
                  "Parameters as safetensors, by torch state_dict name")
      ->required();
  cmd->add_option("--src-ids", options.srcIds,
                  "Source sentences: one per line, space-separated ids")
      ->required();
  cmd->add_option("--tgt-ids", options.tgtIds,
                  "Target sentences, paired with the source by line")
      ->required();
  cmd->add_option("--backend", options.backend,
                  "What runs the model: cpu (compiled) or interpreter")
      ->capture_default_str();
  cmd->add_option("--device", options.device,
                  "Where the compiled model runs: cpu, or cuda (cuda:N for "
                  "GPU N)")
      ->capture_default_str();
  cmd->add_option("--threads", options.threads,
                  "CPU threads (0: one per hardware thread)")
      ->capture_default_str();
}

} // namespace

void addForwardCommand(CLI::App &app, int &exitCode) {
  auto options = std::make_shared<RunOptions>();
  CLI::App *cmd = app.add_subcommand(
      "forward", "Print each target token's log-probability given the source");
  addRunOptions(cmd, *options);
  cmd->callback([options, &exitCode] {
    if (llvm::Error err = forward(*options))
      exitCode = fail("forward", std::move(err));
  });
}

void addGradCommand(CLI::App &app, int &exitCode) {
  auto options = std::make_shared<RunOptions>();
  CLI::App *cmd = app.add_subcommand(
      "grad", "Write the loss's gradient for every parameter as safetensors");
  addRunOptions(cmd, *options);
  cmd->add_option("--out", options->out, "Where to write the gradients")
      ->required();
  addTrainingPrecisionOption(cmd, options->precision);
  cmd->callback([options, &exitCode] {
    if (llvm::Error err = grad(*options))
      exitCode = fail("grad", std::move(err));
  });
}

} // namespace loom::cli
