#!/usr/bin/python3
"""Writes the hostile and malformed ONNX files that the loader must refuse
with a clear error (load_test.go's TestHostileFiles says which error).

Run from this directory with /usr/bin/python3 (onnx 1.12). The files are
tiny; random.onnx is seeded so the output is the same every time."""

import random

import onnx
from onnx import TensorProto, helper


def write(name, model_or_bytes):
    data = model_or_bytes if isinstance(model_or_bytes, bytes) else model_or_bytes.SerializeToString()
    with open(name, "wb") as f:
        f.write(data)


def model(nodes, inits=(), opset=17, inputs=None, outputs=None):
    inputs = inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])]
    outputs = outputs or [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])]
    g = helper.make_graph(nodes, "hostile", inputs, outputs, initializer=list(inits))
    # No onnx.checker: these models are wrong on purpose.
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="make_hostile.py")


good = model([helper.make_node("Relu", ["x"], ["y"], name="relu")])
good_bytes = good.SerializeToString()

# The bytes of a valid model cut in the middle.
write("truncated.onnx", good_bytes[: len(good_bytes) // 2])

rng = random.Random(11)
write("random.onnx", bytes(rng.randrange(256) for _ in range(2048)))

# An initializer that claims 2^40 floats and holds one.
huge = helper.make_tensor("w", TensorProto.FLOAT, [1], b"\0\0\0\0", raw=True)
del huge.dims[:]
huge.dims.extend([1 << 20, 1 << 20])
write("hugedims.onnx", model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [huge]))

# a = Add(x, b); b = Relu(a): each waits for the other.
write("cyclic.onnx", model([
    helper.make_node("Add", ["x", "b"], ["a"], name="add"),
    helper.make_node("Relu", ["a"], ["b"], name="relu"),
    helper.make_node("Identity", ["b"], ["y"], name="out"),
]))

write("missing_input.onnx", model([helper.make_node("Add", ["x", "nowhere"], ["y"], name="add")]))

custom = helper.make_node("Custom", ["x"], ["c"], name="mine", domain="com.example")
m = model([
    helper.make_node("NoSuchOp", ["x"], ["a"], name="first_missing"),
    helper.make_node("NoSuchOp", ["a"], ["b"], name="second_missing"),
    custom,
    helper.make_node("Add", ["b", "c"], ["y"], name="add"),
])
m.opset_import.append(helper.make_opsetid("com.example", 1))
write("unsupported.onnx", m)

write("opset22.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="relu")], opset=22))

# External data that points out of the model's directory.
ext = helper.make_tensor("w", TensorProto.FLOAT, [4], [0.0] * 4)
ext.ClearField("float_data")
ext.data_location = TensorProto.EXTERNAL
for k, v in (("location", "../../../etc/passwd"), ("offset", "0"), ("length", "16")):
    e = ext.external_data.add()
    e.key, e.value = k, v
write("extescape.onnx", model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [ext]))
