//===- DialectTest.cpp - Building and verifying loom ops from C++ ---------===//

#include "TestUtil.h"

#include "ir/InterpreterOps.h"
#include "ir/LoomDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

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

// Passes ask the Loom_ElementwiseMap trait instead of listing ops; the
// interpreter and the CPU region compiler map each such op to a function.
// Every op with the trait must be mapped (or be one of the four handled by
// name), so a new elementwise op cannot be fused without a way to run it;
// and the trait sits on no op that reads other elements.
// The views (an operand's bytes in another shape) are exactly the ops whose
// result has as many elements as their first operand and whose evaluation
// copies it: the memory plan, the executable builder, library calls and
// fusion all ask the trait rather than list them.
TEST(Dialect, ViewOfOperandIsReshapesAndExpandDims) {
  auto ctx = test::makeContext();
  std::vector<std::string> views;
  for (RegisteredOperationName name : ctx->getRegisteredOperations())
    if (name.getDialectNamespace() == "loom" &&
        name.hasTrait<loom::OpTrait::ViewOfOperand>())
      views.push_back(name.getStringRef().str());
  std::sort(views.begin(), views.end());
  EXPECT_EQ(views, (std::vector<std::string>{"loom.expand_dims", "loom.reshape",
                                             "loom.reshape_as"}));
  // A slice is a view only when contiguous, a transpose moves elements, a
  // broadcast repeats them: none carries the trait.
  for (const char *other :
       {"loom.slice", "loom.transpose", "loom.broadcast_as", "loom.concat"})
    EXPECT_FALSE(RegisteredOperationName::lookup(other, ctx.get())
                     ->hasTrait<loom::OpTrait::ViewOfOperand>())
        << other;
}

TEST(Dialect, EveryElementwiseMapOpHasAnEvaluation) {
  auto ctx = test::makeContext();
  OpBuilder b(ctx.get());
  int withTrait = 0;
  for (RegisteredOperationName name : ctx->getRegisteredOperations()) {
    if (name.getDialectNamespace() != "loom")
      continue;
    // An op without operands: only its name matters to the queries below.
    OperationState state(b.getUnknownLoc(), name);
    Operation *op = Operation::create(state);
    bool elementwise = op->hasTrait<loom::OpTrait::ElementwiseMap>();
    bool mapped = interp::binaryFnOf(op) || interp::unaryFnOf(op) ||
                  isa<CompareOp, SelectOp, CastOp, DropoutOp>(op);
    EXPECT_EQ(elementwise, mapped) << name.getStringRef().str();
    withTrait += elementwise;
    op->destroy();
  }
  EXPECT_EQ(withTrait,
            24); // 7 binary, 13 unary, compare, select, cast, dropout
  for (const char *other : {"loom.softmax", "loom.matmul", "loom.reduce_sum",
                            "loom.layer_norm", "loom.fusion"})
    EXPECT_FALSE(RegisteredOperationName::lookup(other, ctx.get())
                     ->hasTrait<loom::OpTrait::ElementwiseMap>())
        << other;
}
