//===- main.cpp - loom-train: training without the compiler ---------------===//
//
// Trains with a folder `loom prepare` wrote: the config, the vocabulary, the
// compiled @train_step (train.loomx) and what it was compiled with
// (prepare.json). It links the runtime, text/ and the trainer library only:
// no compiler, so it runs on a GPU machine or a cluster node with the
// runtime's libraries alone, and `mpirun -np N loom-train ...` trains across
// processes. The run goes into the folder it sits in (or --out), as `loom
// train --out` would write it, and bit for bit the same for the same seed,
// threads and data: both run api/train/TrainingJob.h.
//
//===----------------------------------------------------------------------===//

#include "api/train/Prepared.h"
#include "api/train/TrainingJob.h"
#include "tools/BinaryDir.h"
#include "tools/CommandLine.h"
#include "tools/ProcessExit.h"
#include "tools/TrainFlags.h"

#include <cstdio>

using namespace loom;

namespace {

struct Options : RunFlags {
  std::string prepared;
};

/// Trains; the process's exit code, or the error that stopped it first.
ErrorOr<int> trainPrepared(const Options &o, bool seedGiven) {
  std::string folder = o.prepared.empty() ? binaryDir() : o.prepared;
  // The limits first: a run that cannot start says so before the folder is
  // read.
  train::JobOptions job = jobOptions(o, "loom-train");
  if (job.dir.empty())
    job.dir = folder;
  LOOM_RETURN_IF_ERROR(train::checkJobOptions(job));
  ErrorOr<train::PreparedFolder> prepared = train::openPrepared(folder);
  if (!prepared)
    return prepared.status();
  // The seed is the run's own; the rest of the settings were compiled.
  job.settings = prepared->settings.run;
  job.settings.seed = o.seed;
  if (seedGiven)
    job.givenSettings.insert("--seed");
  train::PreparedSource source(std::move(*prepared));
  return train::runTrainingJob(std::move(job), source);
}

} // namespace

int main(int argc, char **argv) {
  skipLibraryDestructorsOnExit();
  CLI::App app{"Train a Loom model with a folder `loom prepare` wrote, "
               "without the compiler"};
  Options o;
  addRunFlags(&app, o,
              "The run's directory (default: the prepared folder, where "
              "this binary sits)",
              "by default the device it was prepared for");
  app.add_option("--prepared", o.prepared,
                 "The prepared folder (default: the folder of this binary)");
  makeStrict(app, "loom-train");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return usageExit(app, e);
  }
  ErrorOr<int> code = trainPrepared(o, app.count("--seed") > 0);
  if (!code) {
    std::fflush(stdout);
    std::fprintf(stderr, "loom-train: error: %s\n", code.error().c_str());
    return 1;
  }
  return *code;
}
