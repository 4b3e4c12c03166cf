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

#include "api/train/BatchSteps.h"
#include "api/train/Checkpoint.h"
#include "runtime/Executable.h"
#include "runtime/Weights.h"

#include <cstdio>

namespace loom::cli {

namespace {

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

llvm::Error runSteps(const TrainStepsOptions &o) {
  if (o.steps < 1)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--steps must be at least 1");
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
    return toError(exe.status());
  auto session = loadCpuSession(std::move(*exe), o.threads);
  if (!session)
    return session.takeError();
  runtime::Session &s = **session;
  ErrorOr<train::OwnedBatch> batch = train::readBatchFile(s, o.batch);
  if (!batch)
    return toError(batch.status());
  if (Status status = runtime::loadParametersFile(s, o.weights); !status.ok())
    return toError(status);
  runtime::NamedBatch inputs = batch->batch();
  if (!o.grad.empty()) {
    auto grads = runtime::runLossGradient(s, inputs, o.seed);
    if (!grads)
      return toError(grads.status());
    if (Status saved = train::saveTensors(o.grad, *grads); !saved.ok())
      return toError(saved);
  }
  Status trained = train::trainOnBatch(
      s, inputs, o.steps, o.seed, [](int64_t step, double loss) {
        std::printf("step %lld loss %.9g\n", static_cast<long long>(step),
                    loss);
      });
  if (!trained.ok())
    return toError(trained);
  if (o.out.empty())
    return llvm::Error::success();
  return toError(train::saveState(s, o.out, {}, /*parametersOnly=*/true));
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
