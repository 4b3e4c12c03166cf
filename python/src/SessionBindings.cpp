//===- SessionBindings.cpp - loom.Program and loom.Session ----------------===//
//
// A Program is a validated executable (runtime/Program.h), shared by any
// number of sessions; a Session binds it to a device with its own state
// (runtime/Session.h) and runs its entry points on numpy arrays. A session
// runs one call at a time: a second thread waits, without the GIL, for the
// first to finish.
//
//===----------------------------------------------------------------------===//

#include "python/src/Bindings.h"

#include "python/src/Arrays.h"
#include "python/src/Errors.h"

#include "api/train/Checkpoint.h"
#include "runtime/Executable.h"
#include "runtime/SizePolynomial.h"
#include "runtime/Weights.h"

#include <pybind11/stl.h>

namespace py = pybind11;

namespace loom::python {

namespace {

using runtime::Program;

/// "batch*src_len", "512": how a buffer's dim reads.
py::object dimOf(const Executable &exe, const runtime::Dim &dim) {
  if (dim.value_case() == runtime::Dim::kSize)
    return py::int_(dim.size());
  std::optional<runtime::SizePolynomial> poly =
      runtime::SizePolynomial::of(dim);
  if (!poly)
    return py::str("?");
  if (std::optional<int64_t> value = poly->constantValue())
    return py::int_(*value);
  std::vector<std::string> names(exe.symbols().begin(), exe.symbols().end());
  return py::str(poly->str(names));
}

/// One input or output of an entry: its name, dtype and shape (ints and
/// size expressions).
py::dict describeValue(const Program &program, const Program::Value &value) {
  const Executable &exe = program.executable();
  py::list shape;
  for (const runtime::Dim &dim : exe.buffers(value.buffer).shape())
    shape.append(dimOf(exe, dim));
  py::dict out;
  out["name"] = value.name;
  out["dtype"] = dtypeName(value.dtype);
  out["shape"] = py::tuple(shape);
  return out;
}

} // namespace

ProgramHandle::ProgramHandle(std::shared_ptr<const runtime::Program> program)
    : program(std::move(program)) {}

SessionHandle::SessionHandle(std::shared_ptr<const runtime::Program> program,
                             const std::string &deviceName, int threads)
    : program(std::move(program)) {
  device = take(runtime::openDevice(deviceName, threads));
  session = take(runtime::Session::create(this->program, device));
}

py::dict SessionHandle::run(const std::string &entryName, py::kwargs inputs) {
  const Program::Entry *entry = take(program->entry(entryName));
  std::vector<py::array> arrays;
  std::vector<runtime::TensorRef> refs;
  std::string takes;
  for (const Program::Value &value : entry->inputs)
    takes += (takes.empty() ? "" : ", ") + value.name;
  for (const Program::Value &value : entry->inputs) {
    if (!inputs.contains(value.name.c_str()))
      invalid("@" + entryName + " needs input '" + value.name + "'; it takes " +
              takes);
    arrays.push_back(asTensorArray(inputs[value.name.c_str()], value.dtype,
                                   "input '" + value.name + "'"));
    refs.push_back(refOf(arrays.back(), value.dtype));
  }
  for (auto item : inputs) {
    std::string name = py::str(item.first);
    bool known = false;
    for (const Program::Value &value : entry->inputs)
      known |= value.name == name;
    if (!known)
      invalid("@" + entryName + " has no input '" + name + "'; it takes " +
              takes);
  }
  auto outputs =
      withoutGil(calls, [&]() -> ErrorOr<std::vector<runtime::NamedTensor>> {
        std::vector<runtime::Tensor> staging;
        std::vector<runtime::TensorRef> placed;
        for (const runtime::TensorRef &ref : refs) {
          ErrorOr<runtime::TensorRef> onDevice =
              runtime::deviceInput(*device, ref, staging);
          if (!onDevice)
            return onDevice.status();
          placed.push_back(*onDevice);
        }
        return session->run(entryName, placed);
      });
  py::dict result;
  for (runtime::NamedTensor &output : take(std::move(outputs)))
    result[output.name.c_str()] = toArray(std::move(output.tensor), device);
  return result;
}

void bindSessions(py::module_ &m) {
  py::class_<ProgramHandle, std::shared_ptr<ProgramHandle>>(
      m, "Program",
      "A compiled executable, validated: its entry points, their signatures "
      "and the state a session holds. Immutable; sessions on any device "
      "share it.")
      .def_static(
          "load",
          [](const std::string &path) {
            return std::make_shared<ProgramHandle>(
                take(withoutGil([&] { return Program::load(path); })));
          },
          py::arg("path"), "Reads and validates the executable at `path`.")
      .def_static(
          "from_bytes",
          [](py::bytes data) {
            Executable exe =
                take(parseExecutableFile(std::string(data), "the executable"));
            return std::make_shared<ProgramHandle>(
                take(Program::create(std::move(exe))));
          },
          py::arg("data"),
          "Validates an executable's bytes, as Program.to_bytes or a .loomx "
          "file holds them.")
      .def(
          "save",
          [](const ProgramHandle &p, const std::string &path) {
            check(saveExecutable(path, p.program->executable()));
          },
          py::arg("path"), "Writes the executable to `path`, atomically.")
      .def(
          "to_bytes",
          [](const ProgramHandle &p) {
            return py::bytes(executableFileBytes(
                p.program->executable().SerializeAsString()));
          },
          "The executable file's bytes.")
      .def_property_readonly(
          "entries",
          [](const ProgramHandle &p) {
            std::vector<std::string> names;
            for (const Program::Entry &entry : p.program->entries())
              names.push_back(entry.name);
            return names;
          },
          "The entry points' names (what Session.run takes).")
      .def(
          "signature",
          [](const ProgramHandle &p, const std::string &name) {
            const Program::Entry *entry = take(p.program->entry(name));
            py::list inputs, outputs;
            for (const Program::Value &value : entry->inputs)
              inputs.append(describeValue(*p.program, value));
            for (const Program::Value &value : entry->outputs)
              if (value.state < 0)
                outputs.append(describeValue(*p.program, value));
            py::dict out;
            out["inputs"] = inputs;
            out["outputs"] = outputs;
            return out;
          },
          py::arg("entry"),
          "An entry's inputs, in call order, and the outputs Session.run "
          "returns: each a dict of name, dtype ('f32', 'i64', ...) and shape "
          "(ints, and size names or expressions such as 'batch*src_len').")
      .def_property_readonly(
          "state",
          [](const ProgramHandle &p) {
            py::list out;
            for (const Program::StateTensor &t : p.program->state()) {
              py::dict d;
              d["name"] = t.name;
              d["dtype"] = dtypeName(t.dtype);
              d["shape"] = py::tuple(py::cast(t.shape));
              d["parameter"] = t.isParameter;
              out.append(d);
            }
            return out;
          },
          "The tensors a session keeps across calls (parameters, then "
          "optimizer moments), sorted by name.")
      .def_property_readonly(
          "parameter_count",
          [](const ProgramHandle &p) { return p.program->parameterCount(); },
          "Elements over all parameters.")
      .def_property_readonly(
          "target",
          [](const ProgramHandle &p) {
            return p.program->executable().target() == Executable::CUDA ? "cuda"
                                                                        : "cpu";
          },
          "The kind of device the code is for: 'cpu' or 'cuda'.")
      .def_property_readonly(
          "bounds",
          [](const ProgramHandle &p) { return p.program->boundsString(); },
          "The batch bounds the memory plan was made for.")
      .def("__repr__", [](const ProgramHandle &p) {
        return "<loom.Program " + std::to_string(p.program->entries().size()) +
               " entries, " + std::to_string(p.program->parameterCount()) +
               " parameters, " + p.program->boundsString() + ">";
      });

  py::class_<SessionHandle, std::shared_ptr<SessionHandle>>(
      m, "Session",
      "A program on a device, with its own state (parameters and optimizer "
      "moments, zero until set or loaded). One call runs at a time.")
      .def(py::init([](std::shared_ptr<ProgramHandle> program,
                       const std::string &device, py::object threads) {
             int count = threads.is_none() ? 0 : threads.cast<int>();
             if (count < 0)
               invalid("threads must be positive, or None for one per "
                       "hardware thread");
             return std::make_shared<SessionHandle>(program->program, device,
                                                    count);
           }),
           py::arg("program"), py::arg("device") = "cpu",
           py::arg("threads") = py::none(),
           "Places `program`'s state and constants on `device` ('cpu', "
           "'cuda', 'cuda:N'), with `threads` CPU threads (None: one per "
           "hardware thread).")
      .def("run", &SessionHandle::run, py::arg("entry"),
           "Runs entry point `entry` with its inputs as keyword arguments "
           "(numpy arrays of the entry's dtypes: see Program.signature) and "
           "returns its outputs by name. Outputs that the entry writes over "
           "state (a training step's parameters) update `state` instead. "
           "The GIL is released while it runs.")
      .def(
          "input_names",
          [](const SessionHandle &s, const std::string &entry) {
            take(s.program->entry(entry));
            return s.session->inputNames(entry);
          },
          py::arg("entry"), "The names of `entry`'s inputs, in order.")
      .def_property_readonly("program",
                             [](const SessionHandle &s) {
                               return std::make_shared<ProgramHandle>(
                                   s.program);
                             })
      .def_property_readonly(
          "device", [](const SessionHandle &s) { return s.device->name(); },
          "The device's name ('cpu', 'cuda:0').")
      .def_property_readonly(
          "state",
          [](std::shared_ptr<SessionHandle> s) { return StateView{s}; },
          "The state as a mapping of name to array: reading copies a tensor "
          "out, assigning copies one in (its dtype and shape must match).")
      .def(
          "init_parameters",
          [](SessionHandle &s, uint64_t seed) {
            check(withoutGil(s.calls, [&] {
              return runtime::initParameters(*s.session, seed);
            }));
          },
          py::arg("seed") = 1,
          "Draws every parameter's initial values from `seed`, as training "
          "does.")
      .def(
          "load_state",
          [](SessionHandle &s, const std::string &path) {
            check(withoutGil(s.calls, [&] {
              ErrorOr<SafeTensorFile> file = loadSafetensors(path);
              if (!file)
                return file.status();
              // A checkpoint holds the whole state; a model file the
              // parameters alone.
              bool whole = true;
              for (const Program::StateTensor &t : s.program->state())
                whole &= file->tensors.count(t.name) > 0;
              return whole ? train::loadState(*s.session, *file, path)
                           : runtime::loadParameters(*s.session, *file, path);
            }));
          },
          py::arg("path"),
          "Loads a safetensors file: a checkpoint's whole state, or a model's "
          "parameters (every parameter, named as PyTorch's nn.Transformer "
          "names them, nothing else).")
      .def(
          "save_state",
          [](SessionHandle &s, const std::string &path, bool parametersOnly) {
            check(withoutGil(s.calls, [&] {
              return train::saveState(*s.session, path, {}, parametersOnly);
            }));
          },
          py::arg("path"), py::arg("parameters_only") = false,
          "Writes the state (or the parameters alone) to a safetensors file, "
          "atomically; refuses a NaN or infinite value.");

  py::class_<StateView>(m, "StateView",
                        "A session's state, by name (Session.state).")
      .def("keys",
           [](const StateView &v) { return v.session->session->stateNames(); })
      .def("__iter__",
           [](const StateView &v) {
             return py::iter(py::cast(v.session->session->stateNames()));
           })
      .def("__len__",
           [](const StateView &v) {
             return v.session->session->stateNames().size();
           })
      .def("__contains__",
           [](const StateView &v, const std::string &name) {
             return v.session->program->stateTensor(name) != nullptr;
           })
      .def("__getitem__",
           [](const StateView &v, const std::string &name) {
             if (!v.session->program->stateTensor(name))
               raise(Status::failure("no state tensor '" + name + "'",
                                     ErrorCode::NotFound));
             return toArray(
                 take(withoutGil(
                     v.session->calls,
                     [&] { return v.session->session->getState(name); })),
                 nullptr);
           })
      .def("__setitem__",
           [](const StateView &v, const std::string &name, py::handle value) {
             const Program::StateTensor *t =
                 v.session->program->stateTensor(name);
             if (!t)
               raise(Status::failure("no state tensor '" + name + "'",
                                     ErrorCode::NotFound));
             py::array array =
                 asTensorArray(value, t->dtype, "state '" + name + "'");
             runtime::TensorRef ref = refOf(array, t->dtype);
             check(withoutGil(v.session->calls, [&] {
               return v.session->session->setState(name, ref);
             }));
           })
      .def("items",
           [](const StateView &v) {
             py::list out;
             for (const std::string &name : v.session->session->stateNames())
               out.append(py::make_tuple(
                   name, toArray(take(withoutGil(v.session->calls,
                                                 [&] {
                                                   return v.session->session
                                                       ->getState(name);
                                                 })),
                                 nullptr)));
             return out;
           })
      .def("__repr__", [](const StateView &v) {
        return "<loom.StateView of " +
               std::to_string(v.session->session->stateNames().size()) +
               " tensors>";
      });
}

} // namespace loom::python
