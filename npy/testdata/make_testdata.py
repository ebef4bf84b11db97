"""Writes the .npy and .npz files that npy's tests read, with NumPy itself.

Run from this directory with /usr/bin/python3 (NumPy 1.24). The values are
small and exact in binary so that the Go tests can state them literally; the
files NumPy writes in version 1.0 are also what npy.Write must reproduce byte
for byte.
"""
import numpy as np
from numpy.lib import format as npformat

def save(name, a):
    np.save(name, a, allow_pickle=False)

save("f4.npy", (np.arange(6, dtype=np.float32) / 4 - 0.5).reshape(2, 3))
save("f8.npy", np.array([0.1, -2.5, 1e300], dtype=np.float64))
save("i8.npy", np.array([[-1, 2**40], [3, -2**62]], dtype=np.int64))
save("i4.npy", np.array([-2**31, 0, 7, 2**31 - 1], dtype=np.int32))
save("b1.npy", np.array([[True, False], [False, True]]))
save("u1.npy", np.arange(250, 256, dtype=np.uint8).reshape(1, 2, 3))
save("scalar.npy", np.float64(3.5))
save("empty.npy", np.zeros((0, 3), dtype=np.float32))
save("big_f4.npy", np.array([1.5, -2, 3.25], dtype=">f4"))
save("big_i8.npy", np.array([-5, 2**40], dtype=">i8"))
# Column-major data, which spore refuses (a 1-D array is the same either way).
save("fortran.npy", np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
save("f2.npy", np.array([1, 2], dtype=np.float16))
np.save("obj.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
for v in (2, 3):
    with open("v%d.npy" % v, "wb") as f:
        npformat.write_array(f, np.array([[1, 2], [3, 4]], dtype=np.float32), version=(v, 0))
np.savez("arrays.npz", x=(np.arange(6, dtype=np.float32) / 4 - 0.5).reshape(2, 3),
         y=np.array([7, 8, 9], dtype=np.int64))
np.savez_compressed("compressed.npz", a=np.full((4, 4), 0.25, dtype=np.float64),
                    b=np.array([True, False, True]))
np.savez("positional.npz", np.array([1, 2], dtype=np.int32))
save("i1.npy", np.array([-128, -1, 0, 127], dtype=np.int8))
save("i2.npy", np.array([[-32768, -1], [2, 32767]], dtype=np.int16))
save("u2.npy", np.array([0, 1, 65535], dtype=np.uint16))
save("u4.npy", np.array([0, 2**31, 2**32 - 1], dtype=np.uint32))
save("u8.npy", np.array([0, 2**63, 2**64 - 1], dtype=np.uint64))
save("big_u4.npy", np.array([1, 2**32 - 2], dtype=">u4"))
save("big_i2.npy", np.array([-2, 300], dtype=">i2"))
