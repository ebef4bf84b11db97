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

# sequence.onnx: a sequence input and an optional input in, a sequence
# and a tensor out, for spore run's sequence I/O. The sequence gains x at
# its end; y is its length plus the optional's value summed (0 when it is
# left out).
F = TensorProto.FLOAT
seq_f = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None))
opt_f = helper.make_optional_type_proto(helper.make_tensor_type_proto(F, None))
then_g = helper.make_graph([helper.make_node("OptionalGetElement", ["o"], ["v"]),
                            helper.make_node("ReduceSum", ["v"], ["t"], keepdims=0)], "has",
                           [], [helper.make_tensor_value_info("t", F, [])])
else_g = helper.make_graph([helper.make_node("Constant", [], ["z"], value=helper.make_tensor("z", F, [], [0.0]))], "none",
                           [], [helper.make_tensor_value_info("z", F, [])])
nodes = [
    helper.make_node("SequenceInsert", ["s", "x"], ["out"]),
    helper.make_node("SequenceLength", ["out"], ["n"]),
    helper.make_node("Cast", ["n"], ["nf"], to=F),
    helper.make_node("OptionalHasElement", ["o"], ["h"]),
    helper.make_node("If", ["h"], ["sum"], then_branch=then_g, else_branch=else_g),
    helper.make_node("Add", ["nf", "sum"], ["y"]),
]
graph = helper.make_graph(nodes, "sequence",
                          [helper.make_value_info("s", seq_f), helper.make_tensor_value_info("x", F, [2]),
                           helper.make_value_info("o", opt_f)],
                          [helper.make_value_info("out", seq_f), helper.make_tensor_value_info("y", F, [])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="spore tests")
onnx.checker.check_model(model)
onnx.save(model, "sequence.onnx")
