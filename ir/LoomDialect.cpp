//===- LoomDialect.cpp - The loom dialect ---------------------------------===//

#include "ir/LoomDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace loom;

#include "ir/LoomDialect.cpp.inc"
#include "ir/LoomEnums.cpp.inc"
#include "ir/LoomInterfaces.cpp.inc"

void LoomDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/LoomOps.cpp.inc"
      >();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

Operation *LoomDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, elements);
}

#define GET_OP_CLASSES
#include "ir/LoomOps.cpp.inc"
