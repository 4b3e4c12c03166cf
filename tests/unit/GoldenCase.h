//===- GoldenCase.h - A library kernel's case, kept in a file ---*- C++ -*-===//
//
// The kernel suites (LibraryKernelsTest, AttentionKernelsTest) hold every
// library kernel to the reference interpreter, but they link MLIR and so
// cannot run where the GPU is. With LOOM_GOLDEN_DIR set, their CPU runs
// write each case they check into that folder: the kernel, its attributes,
// every argument as the kernel got it (results as the NaN bytes they start
// as), which results live inside an operand, and the interpreter's results.
// GoldenKernelsTest, which links the runtime alone, replays every case on
// each device and names the case, the kernel and the worst element of a
// result that parts from the interpreter's.
//
// A case is a safetensors file: arg.<i> per argument, want.<r> (f64) per
// result, and metadata kernel, ints, floats, results (the result arguments'
// indices), aliases ("result:operand:byte offset", comma-separated), rel
// and floor (the tolerance: rel times the larger of floor and the largest
// magnitude of each result) and case (the test it came from).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TESTS_UNIT_GOLDENCASE_H
#define LOOM_TESTS_UNIT_GOLDENCASE_H

#include "runtime/Device.h"
#include "runtime/Tensor.h"

#include <string>
#include <vector>

namespace loom::test {

struct GoldenCase {
  std::string name; // the test and a number
  std::string kernel;
  abi::CallAttrs attrs;
  /// Host tensors, one per argument of the call.
  std::vector<runtime::Tensor> args;
  /// The arguments the kernel writes, in result order.
  std::vector<int> results;
  struct Alias {
    int result, operand;
    int64_t byteOffset = 0;
  };
  std::vector<Alias> aliases;
  /// The interpreter's values of each result.
  std::vector<std::vector<double>> want;
  /// A result's tolerance: rel * max(floor, its largest magnitude).
  double rel = 1e-5;
  double floor = 0;
};

/// The folder LOOM_GOLDEN_DIR names, where the kernel suites write their
/// cases; empty when it is not set.
std::string goldenOutputDir();

/// Writes `c` into `dir` as <name>.safetensors ('/' in a name becomes '_').
Status writeGoldenCase(const std::string &dir, const GoldenCase &c);

/// Reads a case that writeGoldenCase wrote.
ErrorOr<GoldenCase> readGoldenCase(const std::string &path);

/// A name for the next case of the running test: its full name and a
/// number that counts its cases.
std::string nextGoldenName();

} // namespace loom::test

#endif // LOOM_TESTS_UNIT_GOLDENCASE_H
