//===- Arrays.h - numpy arrays as runtime tensors and back ------*- C++ -*-===//
//
// Inputs go to a session without a copy when they are already C-contiguous
// arrays of the entry's dtype (the CPU device reads host memory in place);
// outputs come back as arrays over the runtime's own tensors, which they
// keep alive, so an output is never copied either on the CPU. bf16 has no
// numpy dtype: its tensors travel as uint16 arrays of the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PYTHON_ARRAYS_H
#define LOOM_PYTHON_ARRAYS_H

#include "runtime/Device.h"
#include "runtime/Tensor.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <string>

namespace loom::python {

/// The numpy dtype that holds `dtype`'s elements (bf16: uint16).
pybind11::dtype numpyDType(DType dtype);

/// `value` as a C-contiguous array of `dtype`. An ndarray must have that
/// dtype already (nothing is converted behind the caller's back); it is
/// copied only when it is not C-contiguous. Anything else (a list, a
/// scalar) is converted when its kind agrees (integers for an integer
/// dtype, numbers for a float one). Failures name the value as `what`
/// ("input 'src'").
pybind11::array asTensorArray(pybind11::handle value, DType dtype,
                              const std::string &what);

/// A view of `array`, which must outlive it.
runtime::TensorRef refOf(const pybind11::array &array, DType dtype);

/// An array over `tensor`'s memory, which it takes over (and `device`,
/// which that memory belongs to, kept alive with it). A tensor in a
/// device's own memory (a GPU's) is copied to the host first.
pybind11::array toArray(runtime::Tensor tensor,
                        std::shared_ptr<runtime::Device> device);

} // namespace loom::python

#endif // LOOM_PYTHON_ARRAYS_H
