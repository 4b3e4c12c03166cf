//===- OnnxBackendTest.h - ONNX's backend tests on Loom ---------*- C++ -*-===//
//
// Runs a test in ONNX's backend-test layout (a folder with model.onnx and
// test_data_set_*/{input,output}_N.pb, as Debian's libonnx-testdata ships
// its node tests): the model is imported and run on the reference
// interpreter with each data set's inputs, then compiled for this CPU and
// run again, and the outputs are compared with the expected ones as ONNX's
// backend tests compare them (|got - want| <= atol + rtol * |want|, NaN
// equal to NaN). `loom onnx-test` prints what this finds.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DRIVER_ONNXBACKENDTEST_H
#define LOOM_DRIVER_ONNXBACKENDTEST_H

#include <string>
#include <vector>

namespace loom::driver {

enum class OnnxTestOutcome {
  Passed,
  Failed,
  /// Passed on the interpreter; the CPU backend does not compile it.
  InterpreterOnly,
  /// The importer does not take the model (why says what).
  Unsupported,
};

struct OnnxTestResult {
  OnnxTestOutcome outcome;
  std::string why;
};

/// Runs the test in `dir`, on the CPU backend too unless `cpu` is false.
OnnxTestResult runOnnxTest(const std::string &dir, double rtol, double atol,
                           bool cpu);

/// The tests of `dir`: itself when it holds model.onnx, else its folders
/// that do, sorted.
std::vector<std::string> findOnnxTests(const std::string &dir);

} // namespace loom::driver

#endif // LOOM_DRIVER_ONNXBACKENDTEST_H
