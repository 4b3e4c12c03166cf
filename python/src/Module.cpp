//===- Module.cpp - loom._loom, the extension module ----------------------===//
//
// One extension module holds all of Loom that Python reaches: the runtime
// (programs, sessions, translators, training) and the compiler. One, not a
// runtime module and a compiler module: both would carry the runtime's
// protobuf messages, and protobuf refuses a second registration of the same
// file in one process. The package (python/loom/__init__.py) puts the
// Python-facing signatures and defaults on top.
//
//===----------------------------------------------------------------------===//

#include "python/src/Bindings.h"

#include "abi/Version.h"

namespace py = pybind11;

PYBIND11_MODULE(_loom, m) {
  m.doc() = "Loom's compiler and runtime (use the `loom` package).";
  m.attr("__version__") = loom::kLoomVersion;
  loom::python::bindSessions(m);
  loom::python::bindTranslator(m);
  loom::python::bindTraining(m);
  loom::python::bindCompiler(m);
}
