//===- Arrays.cpp - numpy arrays as runtime tensors and back --------------===//

#include "python/src/Arrays.h"

#include "python/src/Errors.h"

namespace py = pybind11;

namespace loom::python {

namespace {

/// What an output array keeps alive: the tensor, then the device its
/// memory returns to (members are destroyed in reverse order).
struct HeldTensor {
  std::shared_ptr<runtime::Device> device;
  runtime::Tensor tensor;
};

bool integral(DType dtype) {
  return dtype == DType::I32 || dtype == DType::I64;
}

} // namespace

py::dtype numpyDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return py::dtype("float32");
  case DType::F16:
    return py::dtype("float16");
  case DType::BF16:
    return py::dtype("uint16");
  case DType::F64:
    return py::dtype("float64");
  case DType::I32:
    return py::dtype("int32");
  case DType::I64:
    return py::dtype("int64");
  case DType::I1:
    return py::dtype("bool");
  }
  return py::dtype("float32");
}

py::array asTensorArray(py::handle value, DType dtype,
                        const std::string &what) {
  py::dtype wanted = numpyDType(dtype);
  std::string wantedName = dtype == DType::BF16 ? "uint16 (the bits of bf16)"
                                                : std::string(py::str(wanted));
  if (py::isinstance<py::array>(value)) {
    py::array array = py::reinterpret_borrow<py::array>(value);
    if (!array.dtype().equal(wanted))
      invalid(what + " is " + std::string(py::str(array.dtype())) +
              ", expected " + wantedName);
    if (array.flags() & py::array::c_style)
      return array;
    return py::array::ensure(array, py::array::c_style);
  }
  py::array converted = py::module_::import("numpy").attr("asarray")(value);
  char kind = converted.dtype().kind();
  bool agrees = integral(dtype) ? kind == 'i' || kind == 'u'
                : dtype == DType::I1
                    ? kind == 'b'
                    : kind == 'f' || kind == 'i' || kind == 'u';
  if (!agrees || dtype == DType::BF16)
    invalid(what + " is " + std::string(py::str(converted.dtype())) +
            " when converted to an array, expected " + wantedName);
  return py::array::ensure(converted.attr("astype")(wanted),
                           py::array::c_style);
}

runtime::TensorRef refOf(const py::array &array, DType dtype) {
  runtime::TensorRef ref;
  ref.data = const_cast<void *>(array.data());
  ref.dtype = dtype;
  ref.shape.assign(array.shape(), array.shape() + array.ndim());
  return ref;
}

py::array toArray(runtime::Tensor tensor,
                  std::shared_ptr<runtime::Device> device) {
  if (tensor.device() && !tensor.device()->sharesHostMemory()) {
    tensor = take(runtime::toHost(tensor));
    device = nullptr;
  }
  auto *held = new HeldTensor{std::move(device), std::move(tensor)};
  py::capsule owner(held, [](void *p) { delete static_cast<HeldTensor *>(p); });
  const runtime::Tensor &t = held->tensor;
  return py::array(numpyDType(t.dtype()), t.shape(), {},
                   const_cast<void *>(t.data()), owner);
}

} // namespace loom::python
