//===- TrainJob.h - loom.train's run, whichever module compiles -*- C++ -*-===//
//
// loom.train runs the trainer library's job (api/train/TrainingJob.h), as
// `loom train` and `loom-train` do: with a prepared folder in loom._runtime,
// or compiling the model first in loom._compiler. Both come here with their
// ModelSource, so that the keyword arguments, the callback and the way a
// run ends in Python are the same either way.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PYTHON_TRAINJOB_H
#define LOOM_PYTHON_TRAINJOB_H

#include "api/train/TrainingJob.h"

#include <pybind11/pybind11.h>

namespace loom::python {

/// The job loom.train's keyword arguments describe (all but the model's
/// source): `train` and `valid` are (source file, target file) pairs.
train::JobOptions jobOptionsFrom(pybind11::kwargs args);

/// Runs `options` with `source`, the GIL released, calling `callback` (when
/// not None) with each record DIR/metrics.jsonl gets, as a dict. Returns
/// how it ended: {"step", "epoch", "saved", "best_step", "best_bleu"}. A
/// failure raises loom.errors' class for it; Ctrl-C (SIGINT) stops the run
/// after a checkpoint and raises KeyboardInterrupt; an exception raised by
/// the callback stops it the same way and is raised again.
pybind11::dict runTrainJob(train::JobOptions options,
                           train::ModelSource &source,
                           pybind11::object callback);

} // namespace loom::python

#endif // LOOM_PYTHON_TRAINJOB_H
