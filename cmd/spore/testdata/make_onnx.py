"""Writes unsupported.onnx, a model spore cannot load, for the tests of
`spore onnx check` and `spore run`: a Relu between two op types spore does
not implement (one for strings, which spore has no dtype for, and one in
another domain).

Run from this directory with /usr/bin/python3 (python3-onnx 1.12).
"""
import onnx
from onnx import TensorProto, helper

nodes = [
    helper.make_node("Relu", ["x"], ["r"], name="relu"),
    helper.make_node("StringNormalizer", ["r"], ["h1"], name="normalizer_1"),
    helper.make_node("StringNormalizer", ["h1"], ["h2"], name="normalizer_2"),
    helper.make_node("FusedGemm", ["h2", "h2"], ["y"], name="fused", domain="com.microsoft"),
]
graph = helper.make_graph(nodes, "unsupported",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                helper.make_opsetid("com.microsoft", 1)],
                          producer_name="spore tests")
onnx.save(model, "unsupported.onnx")
