//===- TrainBindings.cpp - Training with a prepared folder ----------------===//
//
// loom.train(prepared=DIR, ...): what `loom-train` does with a folder that
// `loom prepare` wrote (api/train/Prepared.h), nothing compiled in the
// process. The same job as training a model compiled first
// (CompileBindings.cpp), so the same seed gives the same run either way.
//
//===----------------------------------------------------------------------===//

#include "python/src/Bindings.h"

#include "python/src/Errors.h"
#include "python/src/TrainJob.h"

#include "api/train/Prepared.h"

namespace py = pybind11;

namespace loom::python {

void bindTraining(py::module_ &m) {
  m.def(
      "_train_prepared",
      [](const std::string &prepared, py::object callback, py::kwargs args) {
        train::JobOptions job = jobOptionsFrom(std::move(args));
        // The seed is the run's own; the rest of the settings were
        // compiled into the folder, as for loom-train.
        for (const std::string &flag : job.givenSettings)
          if (flag != "--seed")
            invalid("the prepared folder was compiled with its own "
                    "batch bounds, schedule and precision; leave out " +
                    flag + " (only the seed is the run's)");
        train::PreparedFolder folder =
            take(withoutGil([&] { return train::openPrepared(prepared); }));
        uint64_t seed = job.settings.seed;
        job.settings = folder.settings.run;
        job.settings.seed = seed;
        train::PreparedSource source(std::move(folder));
        return runTrainJob(std::move(job), source, std::move(callback));
      },
      py::arg("prepared"), py::arg("callback"),
      "loom.train with a folder `loom prepare` wrote.");
}

} // namespace loom::python
