//===- WeightsTest.cpp - Parameters from safetensors files ----------------===//
//
// A compiled tiny model's parameters go through a safetensors file and back:
// as Loom writes them (with checksums), as PyTorch writes them (without),
// in F32 and narrower or wider floats. A flipped bit in a tensor is refused
// as Corrupt naming the tensor, and a NaN or infinite value, or one beyond
// f32, as InvalidArgument naming the parameter and the element.
//
//===----------------------------------------------------------------------===//

#include "runtime/Weights.h"
#include "codegen/cpu/ExecutableWriter.h"
#include "frontend/Config.h"
#include "frontend/Transformer.h"
#include "passes/Pipeline.h"

#include "TestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <unistd.h>

using namespace loom;

namespace {

class WeightsTest : public ::testing::Test {
protected:
  void SetUp() override {
    ctx = test::makeContext();
    auto config = presetConfig("tiny");
    ASSERT_TRUE(bool(config));
    CompilePipelineOptions options;
    options.training.dModel = config->d_model();
    options.maxLen = 8;
    options.maxBatch = 2;
    options.maxTokens = 16;
    auto module = buildModelModule(*ctx, *config);
    ASSERT_TRUE(module);
    ASSERT_TRUE(mlir::succeeded(runCompilePipeline(*module, options)));
    CpuExecutableOptions exeOptions;
    exeOptions.bounds = {options.maxTokens, options.maxLen, options.maxBatch};
    auto exe = writeCpuExecutable(*module, exeOptions);
    ASSERT_TRUE(mlir::succeeded(exe));
    model = test::cpuSession(std::move(*exe), 1);
    ASSERT_TRUE(model);
    std::mt19937_64 rng(11);
    std::normal_distribution<double> normal(0.0, 0.5);
    for (const std::string &name : model->parameterNames()) {
      const runtime::Tensor *t = model->state(name);
      std::vector<double> values(t->numel());
      for (double &v : values)
        v = normal(rng);
      auto tensor = fromDoubles(values, t->shape(), "F32");
      ASSERT_TRUE(bool(tensor)) << tensor.error();
      weights.tensors[name] = std::move(*tensor);
    }
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    path = ::testing::TempDir() + "loom-weights-" + info->name() + "-" +
           std::to_string(::getpid()) + ".safetensors";
  }
  void TearDown() override { std::remove(path.c_str()); }

  /// `file` as PyTorch's safetensors writes it: no checksums.
  void writeWithoutChecksums(const SafeTensorFile &file) {
    nlohmann::json header = nlohmann::json::object();
    std::string data;
    for (const auto &[name, t] : file.tensors) {
      header[name] = {
          {"dtype", t.dtype},
          {"shape", t.shape},
          {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
      data.append(t.bytes.begin(), t.bytes.end());
    }
    header["__metadata__"] = {{"format", "pt"}};
    std::string text = header.dump();
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 8; ++i)
      out.put(char(uint64_t(text.size()) >> (8 * i)));
    out << text << data;
  }

  /// `weights` with element `index` of `name` replaced by `value`.
  SafeTensorFile with(const std::string &name, int64_t index, float value) {
    SafeTensorFile file = weights;
    std::memcpy(file.tensors.at(name).bytes.data() + 4 * index, &value, 4);
    return file;
  }

  std::unique_ptr<mlir::MLIRContext> ctx;
  std::unique_ptr<runtime::Session> model;
  SafeTensorFile weights;
  std::string path;
};

const char *kNorm = "decoder.layers.1.norm1.weight";

TEST_F(WeightsTest, LoadsWhatLoomAndPyTorchWrite) {
  ASSERT_TRUE(saveSafetensors(path, weights).ok());
  Status loaded = runtime::loadParametersFile(*model, path);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  for (const auto &[name, tensor] : weights.tensors)
    EXPECT_EQ(std::memcmp(model->state(name)->data(), tensor.bytes.data(),
                          tensor.bytes.size()),
              0)
        << name;

  SafeTensorFile file = weights;
  std::vector<double> ones(32, 1.0);
  file.tensors[kNorm] = *fromDoubles(ones, {32}, "BF16");
  writeWithoutChecksums(file);
  loaded = runtime::loadParametersFile(*model, path);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_EQ(model->state(kNorm)->f32()[5], 1.0f);
}

TEST_F(WeightsTest, RefusesATensorWithAFlippedBit) {
  ASSERT_TRUE(saveSafetensors(path, weights).ok());
  // The file's data section ends with the last tensor by name; flip a bit
  // in the middle of it.
  std::string last = weights.tensors.rbegin()->first;
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekg(0, std::ios::end);
  std::streamoff at =
      std::streamoff(f.tellg()) -
      std::streamoff(weights.tensors.rbegin()->second.bytes.size() / 2);
  f.seekg(at);
  char byte = 0;
  f.read(&byte, 1);
  byte ^= 0x10;
  f.seekp(at);
  f.write(&byte, 1);
  f.close();
  Status loaded = runtime::loadParametersFile(*model, path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.code(), ErrorCode::Corrupt);
  EXPECT_EQ(loaded.message(), "cannot load weights: '" + path + "': tensor '" +
                                  last +
                                  "' fails its checksum: the file is corrupt");
}

TEST_F(WeightsTest, RefusesNonFiniteValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (bool checksums : {true, false}) {
    SCOPED_TRACE(checksums ? "as Loom writes it" : "as PyTorch writes it");
    for (auto [value, name] : {std::pair{nan, "NaN"}, std::pair{inf, "Inf"},
                               std::pair{-inf, "-Inf"}}) {
      SafeTensorFile file = with(kNorm, 17, value);
      if (checksums)
        ASSERT_TRUE(saveSafetensors(path, file).ok());
      else
        writeWithoutChecksums(file);
      Status loaded = runtime::loadParametersFile(*model, path);
      EXPECT_EQ(loaded.code(), ErrorCode::InvalidArgument);
      EXPECT_EQ(loaded.message(), "weights '" + path + "': parameter '" +
                                      kNorm + "' holds " + name +
                                      " at element 17");
      loaded = runtime::loadParameters(*model, file, path);
      EXPECT_EQ(loaded.code(), ErrorCode::InvalidArgument);
      EXPECT_NE(loaded.message().find(name + std::string(" at element 17")),
                std::string::npos)
          << loaded.message();
    }
  }

  // Narrower floats: the element is found the same way.
  SafeTensorFile file = weights;
  std::vector<double> values(32, 0.5);
  values[3] = -std::numeric_limits<double>::infinity();
  file.tensors[kNorm] = *fromDoubles(values, {32}, "F16");
  Status loaded = runtime::loadParameters(*model, file, path);
  EXPECT_NE(loaded.message().find("parameter '" + std::string(kNorm) +
                                  "' holds -Inf at element 3"),
            std::string::npos)
      << loaded.message();
  // A finite F64 beyond f32 would become Inf.
  values[3] = 1e300;
  file.tensors[kNorm] = *fromDoubles(values, {32}, "F64");
  loaded = runtime::loadParameters(*model, file, path);
  EXPECT_EQ(loaded.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(loaded.message().find("holds 1e+300 at element 3, beyond the "
                                  "range of f32"),
            std::string::npos)
      << loaded.message();
}

} // namespace
