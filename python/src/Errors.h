//===- Errors.h - Loom's failures as Python exceptions ----------*- C++ -*-===//
//
// The extension modules raise loom.errors' classes (python/loom/errors.py):
// one per runtime ErrorCode, and CompileError for the compiler's failures.
// A Status never crosses into Python as a return value, and no C++
// exception but pybind11's own (which carry a Python error) leaves a
// binding.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PYTHON_ERRORS_H
#define LOOM_PYTHON_ERRORS_H

#include "abi/Error.h"

#include <pybind11/pybind11.h>

#include <string>

namespace loom::python {

/// Raises the loom.errors class of `status`'s code with its message. The
/// GIL must be held.
[[noreturn]] void raise(const Status &status);
/// Raises loom.errors.`className` with `message`.
[[noreturn]] void raise(const char *className, const std::string &message);

/// Raises a failed `status`; nothing on success.
inline void check(const Status &status) {
  if (!status.ok())
    raise(status);
}

/// The value, or raises the failure.
template <typename T> T take(ErrorOr<T> value) {
  if (!value)
    raise(value.status());
  return std::move(*value);
}

/// Raises InvalidArgumentError with `message`.
[[noreturn]] inline void invalid(const std::string &message) {
  raise(Status::failure(message));
}

} // namespace loom::python

#endif // LOOM_PYTHON_ERRORS_H
