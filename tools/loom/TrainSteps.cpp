//===- TrainSteps.cpp - `loom train-steps` --------------------------------===//
//
// Runs an executable's @train_step a given number of times on one batch,
// from given parameters, and writes the parameters it ends with:
//
//   loom train-steps M.loomx --weights W.safetensors --batch B.safetensors \
//       --steps 3 --out W3.safetensors
//
// The batch file holds every input of @train_step by name (an imported
// model's inputs and its `targets`; a Loom model's `src` and `tgt`) except
// Adam's `step`, which counts from 1, and dropout's `seed` (--seed). The
// optimizer's moments start at zero, as a fresh torch.optim.Adam's do, so
// the parameters after N steps are what N steps of PyTorch's training give
// from the same start. One line per step: "step N loss X".
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"
#include "tools/loom/Sessions.h"

#include "abi/ModelAbi.h"
#include "runtime/Executable.h"
#include "runtime/Program.h"
#include "runtime/Safetensors.h"
#include "runtime/TrainStep.h"
#include "runtime/Weights.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdio>
#include <cstring>

namespace loom::cli {

namespace {

llvm::Error stepError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

struct TrainStepsOptions {
  std::string executable;
  std::string weights;
  std::string batch;
  std::string out;
  std::string grad;
  int64_t steps = 1;
  int64_t seed = 0;
  int threads = 0;
};

/// Tensor `t` of the batch as a host tensor of `dtype`, each element
/// converted (and checked to survive the conversion).
llvm::Expected<runtime::Tensor> batchInput(const std::string &name,
                                           const SafeTensor &t, DType dtype) {
  ErrorOr<std::vector<double>> values = toDoubles(t);
  if (!values)
    return stepError("batch tensor '" + name + "': " + values.error());
  ErrorOr<runtime::Tensor> out = runtime::Tensor::host(dtype, t.shape);
  if (!out)
    return toError(out.status());
  for (size_t i = 0; i < values->size(); ++i) {
    double x = (*values)[i];
    switch (dtype) {
    case DType::F32:
      out->f32()[i] = static_cast<float>(x);
      break;
    case DType::I32:
    case DType::I64:
      if (x != std::trunc(x) || std::fabs(x) > 9e15)
        return stepError(llvm::formatv(
            "batch tensor '{0}': element {1} ({2}) is not an integer", name, i,
            x));
      if (dtype == DType::I32)
        static_cast<int32_t *>(out->data())[i] = static_cast<int32_t>(x);
      else
        static_cast<int64_t *>(out->data())[i] = static_cast<int64_t>(x);
      break;
    default:
      return stepError("batch tensor '" + name + "': @train_step takes it as " +
                       dtypeName(dtype) + ", which this command does not pass");
    }
  }
  return std::move(*out);
}

llvm::Error runSteps(const TrainStepsOptions &o) {
  if (o.steps < 1)
    return stepError("--steps must be at least 1");
  for (auto [path, what] : {std::pair{o.executable, "the executable"},
                            {o.weights, "--weights"},
                            {o.batch, "--batch"}})
    if (llvm::Error err = checkInputFile(path, what))
      return err;
  if (!o.out.empty())
    if (llvm::Error err =
            checkOutputFile(o.out, "--out", {o.executable, o.weights, o.batch}))
      return err;
  if (!o.grad.empty())
    if (llvm::Error err = checkOutputFile(
            o.grad, "--grad", {o.executable, o.weights, o.batch, o.out}))
      return err;
  ErrorOr<Executable> exe = loadExecutable(o.executable);
  if (!exe)
    return stepError(exe.error());
  auto session = loadCpuSession(std::move(*exe), o.threads);
  if (!session)
    return session.takeError();
  runtime::Session &s = **session;
  ErrorOr<const runtime::Program::Entry *> entry =
      s.program().entry(abi::kTrainStep);
  if (!entry)
    return stepError("'" + o.executable +
                     "' has no @train_step: compile the model with its loss");
  if (Status status = runtime::loadParametersFile(s, o.weights); !status.ok())
    return toError(status);
  ErrorOr<SafeTensorFile> batch = loadSafetensors(o.batch);
  if (!batch)
    return stepError("--batch '" + o.batch + "': " + batch.error());

  // Every input but the step and the seed comes from the batch, by name.
  std::vector<runtime::Tensor> held;
  std::vector<runtime::TensorRef> inputs;
  int stepIndex = -1;
  size_t used = 0;
  for (const runtime::Program::Value &input : (*entry)->inputs) {
    if (input.name == abi::kStep || input.name == abi::kSeed) {
      ErrorOr<runtime::Tensor> t = runtime::scalarTensor(DType::I64, 0);
      if (!t)
        return toError(t.status());
      *static_cast<int64_t *>(t->data()) =
          input.name == abi::kSeed ? o.seed : 1;
      if (input.name == abi::kStep)
        stepIndex = static_cast<int>(held.size());
      held.push_back(std::move(*t));
      continue;
    }
    auto it = batch->tensors.find(input.name);
    if (it == batch->tensors.end())
      return stepError("--batch '" + o.batch + "' has no tensor '" +
                       input.name + "', an input of @train_step");
    ++used;
    llvm::Expected<runtime::Tensor> t =
        batchInput(input.name, it->second, input.dtype);
    if (!t)
      return t.takeError();
    held.push_back(std::move(*t));
  }
  if (used != batch->tensors.size())
    for (const auto &[name, t] : batch->tensors)
      if (std::none_of(
              (*entry)->inputs.begin(), (*entry)->inputs.end(),
              [&](const runtime::Program::Value &v) { return v.name == name; }))
        return stepError("--batch '" + o.batch + "' holds '" + name +
                         "', which @train_step does not take");
  for (runtime::Tensor &t : held)
    inputs.push_back(t.ref());

  // The gradient at the start, from @loss_grad on the same batch (its
  // inputs are @train_step's but the step).
  if (!o.grad.empty()) {
    ErrorOr<const runtime::Program::Entry *> gradEntry =
        s.program().entry(abi::kLossGrad);
    if (!gradEntry)
      return stepError("'" + o.executable + "' has no @loss_grad");
    std::vector<runtime::TensorRef> gradInputs;
    for (const runtime::Program::Value &input : (*gradEntry)->inputs) {
      auto it = std::find_if((*entry)->inputs.begin(), (*entry)->inputs.end(),
                             [&](const runtime::Program::Value &v) {
                               return v.name == input.name;
                             });
      if (it == (*entry)->inputs.end())
        return stepError("@loss_grad takes '" + input.name +
                         "', which @train_step does not");
      gradInputs.push_back(inputs[it - (*entry)->inputs.begin()]);
    }
    auto out = s.run(abi::kLossGrad, gradInputs);
    if (!out)
      return toError(out.status());
    NamedTensors grads;
    for (const runtime::NamedTensor &t : *out) {
      llvm::StringRef name(t.name);
      if (!name.consume_front(abi::kGradPrefix))
        continue;
      HostTensor host(t.tensor.shape(), DType::F32);
      for (int64_t i = 0; i < t.tensor.numel(); ++i)
        host.data[i] = t.tensor.f32()[i];
      grads[name.str()] = std::move(host);
    }
    if (llvm::Error err = saveWeights(o.grad, grads))
      return err;
  }

  for (int64_t step = 1; step <= o.steps; ++step) {
    if (stepIndex >= 0)
      *static_cast<int64_t *>(held[stepIndex].data()) = step;
    auto out = s.run(abi::kTrainStep, inputs);
    if (!out)
      return toError(out.status().withContext("step " + std::to_string(step)));
    for (const runtime::NamedTensor &t : *out)
      if (t.name == abi::kLossOutput)
        std::printf("step %lld loss %.9g\n", static_cast<long long>(step),
                    double(t.tensor.f32()[0]));
  }
  if (o.out.empty())
    return llvm::Error::success();

  // The parameters, under the names the weights file gave them.
  ErrorOr<SafeTensorFile> start = loadSafetensors(o.weights);
  if (!start)
    return stepError(start.error());
  NamedTensors params;
  for (const auto &[name, t] : start->tensors) {
    runtime::Tensor *state = s.state(name);
    if (!state)
      return stepError("the executable holds no parameter '" + name + "'");
    HostTensor host(state->shape(), DType::F32);
    for (int64_t i = 0; i < state->numel(); ++i)
      host.data[i] = state->f32()[i];
    params[name] = std::move(host);
  }
  return saveWeights(o.out, params);
}

} // namespace

void addTrainStepsCommand(CLI::App &app, int &exitCode) {
  auto o = std::make_shared<TrainStepsOptions>();
  CLI::App *cmd = app.add_subcommand(
      "train-steps", "Run an executable's @train_step N times on one batch, "
                     "from given parameters, and write the ones it ends with");
  cmd->add_option("executable", o->executable,
                  "A CPU executable with @train_step")
      ->required();
  cmd->add_option("--weights", o->weights,
                  "The parameters to start from (safetensors)")
      ->required();
  cmd->add_option("--batch", o->batch,
                  "Every input of @train_step but step and seed, by name "
                  "(safetensors)")
      ->required();
  cmd->add_option("--steps", o->steps, "How many steps")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Dropout's seed")->capture_default_str();
  cmd->add_option("--out", o->out, "Where to write the parameters");
  cmd->add_option("--grad", o->grad,
                  "Where to write the gradient of the loss at the starting "
                  "parameters (@loss_grad), before the steps");
  cmd->add_option("--threads", o->threads, "CPU threads (0: every core)")
      ->capture_default_str();
  cmd->callback([o, &exitCode] {
    if (llvm::Error err = runSteps(*o))
      exitCode = fail("train-steps", std::move(err));
  });
}

} // namespace loom::cli
