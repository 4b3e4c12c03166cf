//===- DialectTest.cpp - Building and verifying loom ops from C++ ---------===//

#include "TestUtil.h"

#include "ir/LoomDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include <gtest/gtest.h>

using namespace mlir;
using namespace loom;

TEST(Dialect, InfersBroadcastAndMatmulTypes) {
  auto ctx = test::makeContext();
  OpBuilder b(ctx.get());
  auto loc = b.getUnknownLoc();
  auto module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module.getBody());
  auto f32 = b.getF32Type();
  auto x = RankedTensorType::get({ShapedType::kDynamic, 7, 16}, f32);
  auto w = RankedTensorType::get({32, 16}, f32);
  auto fn = b.create<func::FuncOp>(loc, "f", b.getFunctionType({x, w}, {}));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToEnd(body);
  auto mm = b.create<MatmulOp>(loc, body->getArgument(0), body->getArgument(1),
                               /*transpose_lhs=*/false, /*transpose_rhs=*/true);
  EXPECT_EQ(mm.getType(),
            RankedTensorType::get({ShapedType::kDynamic, 7, 32}, f32));
  b.create<func::ReturnOp>(loc);
  EXPECT_TRUE(succeeded(mlir::verify(module)));
  module->erase();
}
