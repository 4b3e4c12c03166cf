//===- Errors.cpp - Loom's failures as Python exceptions ------------------===//

#include "python/src/Errors.h"

namespace py = pybind11;

namespace loom::python {

void raise(const char *className, const std::string &message) {
  py::object cls = py::module_::import("loom.errors").attr(className);
  PyErr_SetString(cls.ptr(), message.c_str());
  throw py::error_already_set();
}

void raise(const Status &status) {
  py::object classes = py::module_::import("loom.errors").attr("BY_CODE");
  py::object cls = classes.attr("get")(int(status.code()));
  if (cls.is_none())
    cls = py::module_::import("loom.errors").attr("InternalError");
  PyErr_SetString(cls.ptr(), status.message().c_str());
  throw py::error_already_set();
}

} // namespace loom::python
