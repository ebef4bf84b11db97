#!/usr/bin/python3
"""Writes the fixtures of the inverse trigonometric and hyperbolic ops, of
EyeLike, ReverseSequence and TfIdfVectorizer (ops_trig.go, ops_text.go)
and of the scatters' mul, min and max reductions at indices given as graph
inputs (runtime_scatter.go), as gen.py writes the others, with ONNX
Runtime's outputs as the expected values.

Usage (from the repository root), as for gen.py:

    NODE_PATH=DIR/node_modules /usr/bin/python3 onnx/testdata/ops/gen_trig_text.py [CASE ...]
"""
import os
import sys

import numpy as np
from onnx import TensorProto

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen  # noqa: E402

gen.CASES.clear()
case, node, ints = gen.case, gen.node, gen.ints
rng = np.random.default_rng(47)
F, I32, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64


def uniform(lo, hi, *shape):
    return rng.uniform(lo, hi, shape).astype(np.float32)


# ---- elementwise, each on a domain where it is defined -----------------
for op, opset, lo, hi in [('Tan', 7, -1.3, 1.3), ('Asin', 7, -0.98, 0.98), ('Acos', 7, -0.98, 0.98), ('Atan', 7, -4, 4),
                          ('Sinh', 9, -3, 3), ('Cosh', 9, -3, 3), ('Asinh', 9, -4, 4), ('Acosh', 9, 1.01, 5),
                          ('Atanh', 9, -0.98, 0.98)]:
    case(op.lower(), [node(op, ['x'])], {'x': uniform(lo, hi, 3, 4)}, opset=opset)

# ---- EyeLike -----------------------------------------------------------
case('eyelike_below', [node('EyeLike', ['x'], k=-1)], {'x': uniform(-1, 1, 4, 3)}, opset=9)
case('eyelike_int64_above', [node('EyeLike', ['x'], k=2, dtype=I64)], {'x': uniform(-1, 1, 3, 5)}, outputs=[('y', I64)], opset=9)
case('eyelike_int32_in', [node('EyeLike', ['x'])], {'x': np.arange(12, dtype=np.int32).reshape(3, 4)}, outputs=[('y', I32)], opset=9)

# ---- ReverseSequence (the lengths are a graph input: data) ---------------
case('reversesequence_time_major', [node('ReverseSequence', ['x', 'l'], time_axis=0, batch_axis=1)],
     {'x': uniform(-1, 1, 4, 3, 2), 'l': ints(4, 1, 3)}, opset=10)
case('reversesequence_batch_major', [node('ReverseSequence', ['x', 'l'], time_axis=1, batch_axis=0)],
     {'x': uniform(-1, 1, 3, 5), 'l': ints(2, 5, 1)}, opset=10)

# ---- TfIdfVectorizer -----------------------------------------------------
# Unigrams 2, 3, 5, 4 and bigrams (5, 6), (7, 8), (6, 7), output columns
# permuted so that the mapping is exercised.
tfidf = dict(min_gram_length=1, max_gram_length=2, ngram_counts=[0, 4], ngram_indexes=[6, 0, 1, 5, 2, 4, 3],
             pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7])
tokens = np.array([[1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8], [8, 8, 5, 6, 6, 7, 8, 6, 5, 2, 4, 7]], np.int64)
weights = [0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 4.0]
case('tfidfvectorizer_tfidf_skip2', [node('TfIdfVectorizer', ['x'], mode='TFIDF', max_skip_count=2, weights=weights, **tfidf)],
     {'x': tokens}, opset=9)
case('tfidfvectorizer_idf_skip0', [node('TfIdfVectorizer', ['x'], mode='IDF', max_skip_count=0, weights=weights, **tfidf)],
     {'x': tokens}, opset=9)
case('tfidfvectorizer_tf_int32_1d', [node('TfIdfVectorizer', ['x'], mode='TF', max_skip_count=1, **tfidf)],
     {'x': tokens[1].astype(np.int32)}, opset=9)
case('tfidfvectorizer_tf_bigrams_only', [node('TfIdfVectorizer', ['x'], mode='TF', max_skip_count=3,
                                              **dict(tfidf, min_gram_length=2))], {'x': tokens}, opset=9)

# ---- scatters' reductions at indices given as graph inputs ---------------
case('scatternd_mul_runtime', [node('ScatterND', ['x', 'i', 'u'], reduction='mul')],
     {'x': uniform(-2, 2, 4, 3), 'i': np.array([[1], [3], [1]], np.int64), 'u': uniform(-2, 2, 3, 3)}, opset=16)
case('scatternd_max_runtime', [node('ScatterND', ['x', 'i', 'u'], reduction='max')],
     {'x': uniform(-2, 2, 3, 4), 'i': np.array([[0, 1], [2, 3], [0, 1]], np.int64), 'u': uniform(-2, 2, 3)}, opset=18)
case('scatterelements_min_runtime', [node('ScatterElements', ['x', 'i', 'u'], axis=1, reduction='min')],
     {'x': uniform(-2, 2, 3, 4), 'i': np.array([[1, 1], [0, 3], [2, -1]], np.int64), 'u': uniform(-2, 2, 3, 2)}, opset=18)

if __name__ == '__main__':
    gen.main()
