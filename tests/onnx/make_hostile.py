#!/usr/bin/env python3
"""Writes small ONNX models that once crashed the importer or the compiler,
or imported into a wrong answer, for tests/onnx/hostile.test.

    make_hostile.py OUT_DIR

Each CASE is OUT_DIR/CASE/model.onnx; those that must run also get a
test_data_set_0 with the outputs ONNX's semantics give (numpy), so that
`loom onnx-test OUT_DIR/CASE` checks them on both engines.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(out, name, nodes, inputs, outputs, inits=(), opset=17, data=None):
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    graph = helper.make_graph(nodes, name, inputs, outputs,
                              initializer=list(inits))
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(model, os.path.join(folder, "model.onnx"))
    if data:
        ins, outs = data
        sets = os.path.join(folder, "test_data_set_0")
        os.makedirs(sets, exist_ok=True)
        for kind, tensors in (("input", ins), ("output", outs)):
            for i, t in enumerate(tensors):
                with open(os.path.join(sets, f"{kind}_{i}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(t).SerializeToString())


def value(name, shape, kind=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, kind, shape)


def main():
    out = sys.argv[1]
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5

    # 30,000 Negs in a chain: one fusion region's expression tree was as
    # deep, and code generation recursed through it.
    nodes, prev = [], "x"
    for i in range(30000):
        nodes.append(helper.make_node("Neg", [prev], [f"t{i}"]))
        prev = f"t{i}"
    save(out, "deep_chain", nodes, [value("x", [2, 3])],
         [value(prev, [2, 3])], data=([x], [x]))

    # Sizes past any memory, as a graph input's dims, a ConstantOfShape
    # whose count overflows int64, and a Range of 2^62 elements.
    save(out, "huge_input", [helper.make_node("Relu", ["x"], ["y"])],
         [value("x", [1 << 40, 1 << 40])], [value("y", None)])
    save(out, "constant_of_shape_overflow",
         [helper.make_node("ConstantOfShape", ["s"], ["y"])], [],
         [value("y", None)],
         [helper.make_tensor("s", TensorProto.INT64, [2], [1 << 62, 4])])
    save(out, "huge_range", [helper.make_node("Range", ["a", "b", "d"], ["y"])],
         [], [value("y", None, TensorProto.INT64)],
         [helper.make_tensor("a", TensorProto.INT64, [], [0]),
          helper.make_tensor("b", TensorProto.INT64, [], [1 << 62]),
          helper.make_tensor("d", TensorProto.INT64, [], [1])])
    save(out, "negative_dim", [helper.make_node("Relu", ["x"], ["y"])],
         [value("x", [2, -5])], [value("y", None)])

    # 2 KB of ConstantOfShape and Add nodes that fold into gigabytes.
    nodes = [helper.make_node("ConstantOfShape", ["s"], ["c0"])]
    for i in range(1, 40):
        nodes.append(helper.make_node("ConstantOfShape", ["s"], ["k%d" % i]))
        nodes.append(helper.make_node("Add", ["c%d" % (i - 1), "k%d" % i],
                                      ["c%d" % i]))
    nodes.append(helper.make_node("Add", ["x", "c39"], ["y"]))
    save(out, "folds_to_gigabytes", nodes, [value("x", [4096, 4096])],
         [value("y", None)],
         [helper.make_tensor("s", TensorProto.INT64, [2], [4096, 4096])])

    # Opset 6: Mul of [3, 3] by [3] at axis 0 scales rows; NumPy's rules
    # would scale columns. Without broadcast = 1 it is refused.
    a = np.arange(9, dtype=np.float32).reshape(3, 3)
    b = np.array([1, 10, 100], dtype=np.float32)
    for name, attrs in (("old_broadcast_axis", dict(broadcast=1, axis=0)),
                        ("old_no_broadcast", {})):
        save(out, name, [helper.make_node("Mul", ["a", "b"], ["y"], **attrs)],
             [value("a", [3, 3]), value("b", [3])], [value("y", [3, 3])],
             opset=6, data=([a, b], [a * b[:, None]]))


if __name__ == "__main__":
    main()
