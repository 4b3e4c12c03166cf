//===- CudaCodegenTest.cpp - GPU kernels to PTX to cubin ------------------===//
//
// What can be checked of the CUDA codegen without a GPU: the kernels of
// fusion regions become PTX for each architecture, ptxas assembles it into
// a cubin (an ELF file naming every kernel), and a failure of either step
// says why. Skipped where the build found no CUDA toolkit.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "codegen/cuda/CudaRegionCodegen.h"

#include "gtest/gtest.h"

using namespace loom;

namespace {

constexpr const char *kRegions = R"mlir(
func.func @f(%x: tensor<?x?xf32>, %b: tensor<?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %r = loom.fusion(%x, %b) : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32> {
  ^bb0(%a: tensor<?x?xf32>, %c: tensor<?xf32>):
    %s = loom.add %a, %c : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
    %g = loom.gelu %s : (tensor<?x?xf32>) -> tensor<?x?xf32>
    loom.yield %g : tensor<?x?xf32>
  }
  %q = loom.fusion(%r) : (tensor<?x?xf32>) -> tensor<?x?xf32> {
  ^bb0(%a: tensor<?x?xf32>):
    %s = loom.softmax %a {axis = 1 : i64} : (tensor<?x?xf32>) -> tensor<?x?xf32>
    loom.yield %s : tensor<?x?xf32>
  }
  return %r, %q : tensor<?x?xf32>, tensor<?x?xf32>
}
)mlir";

class CudaCodegen : public ::testing::Test {
protected:
  void SetUp() override {
    if (cuda::ptxasPath().empty())
      GTEST_SKIP() << "no CUDA toolkit's ptxas here";
    ctx = test::makeContext();
    module = test::parse(*ctx, kRegions);
    ASSERT_TRUE(module);
    codegen = std::make_unique<cuda::CudaRegionCodegen>(ctx.get());
    module->walk([&](FusionOp op) {
      mlir::FailureOr<std::string> symbol = codegen->addRegion(op);
      ASSERT_TRUE(mlir::succeeded(symbol));
      symbols.push_back(*symbol);
    });
  }

  std::unique_ptr<mlir::MLIRContext> ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::unique_ptr<cuda::CudaRegionCodegen> codegen;
  std::vector<std::string> symbols;
};

TEST_F(CudaCodegen, PtxAssemblesForEachArchitecture) {
  EXPECT_EQ(symbols, (std::vector<std::string>{"region_0", "region_1"}));
  for (const char *chip : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(chip);
    std::string error;
    cuda::PtxOptions options;
    options.chip = chip;
    mlir::FailureOr<std::string> ptx = codegen->emitPtx(options, error);
    ASSERT_TRUE(mlir::succeeded(ptx)) << error;
    EXPECT_NE(ptx->find(std::string(".target ") + chip), std::string::npos);
    EXPECT_NE(ptx->find(".visible .entry region_0("), std::string::npos);
    EXPECT_NE(ptx->find(".visible .entry region_1("), std::string::npos);
    EXPECT_NE(ptx->find("shfl.sync"), std::string::npos); // softmax's rows
    EXPECT_EQ(ptx->find('\0'), std::string::npos);

    mlir::FailureOr<std::string> cubin = cuda::assemblePtx(*ptx, chip, error);
    ASSERT_TRUE(mlir::succeeded(cubin)) << error;
    EXPECT_EQ(cubin->substr(0, 4), "\x7f"
                                   "ELF");
    EXPECT_NE(cubin->find("region_0"), std::string::npos);
    EXPECT_NE(cubin->find("region_1"), std::string::npos);
  }
}

TEST_F(CudaCodegen, PtxasRefusalCarriesItsMessage) {
  std::string error;
  mlir::FailureOr<std::string> ptx = codegen->emitPtx({}, error);
  ASSERT_TRUE(mlir::succeeded(ptx)) << error;
  // sm_90 code for an sm_80 assembler run.
  EXPECT_TRUE(mlir::failed(cuda::assemblePtx(*ptx, "sm_80", error)));
  EXPECT_NE(error.find("ptxas for sm_80 failed: "), std::string::npos) << error;
  EXPECT_NE(error.find("SM version specified by .target is higher"),
            std::string::npos)
      << error;
  // Not PTX at all.
  EXPECT_TRUE(mlir::failed(cuda::assemblePtx("not ptx", "sm_90", error)));
  EXPECT_NE(error.find("ptxas for sm_90 failed: "), std::string::npos) << error;
}

} // namespace
