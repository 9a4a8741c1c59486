#!/usr/bin/env python3
"""Writes tests/fixtures/half/cases.txt: float32 bit patterns and their bfloat16 and float16
roundings as two independent implementations compute them (ml_dtypes' bfloat16, numpy's float16),
for tests/base/test_half.cpp. NaN inputs are left out (their payload bits differ between
implementations; the test checks NaN handling on its own).

    pip install numpy ml_dtypes && python3 tests/base/gen_half_fixtures.py
"""
import os

import ml_dtypes
import numpy as np

rng = np.random.default_rng(20261123)
special = [
    0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.141592653589793, -2.718281828459045, 1e-3, 1e3, 6.1e-5,
    65504.0, 65505.0, 65519.99, 65520.0, 65536.0, 1e5, 3.4e38, -3.4e38, np.inf, -np.inf,
    2.0 ** -14, 2.0 ** -15, 2.0 ** -24, 2.0 ** -25, 1.5 * 2.0 ** -25, 2.0 ** -26, 1e-8, 1e-40, -1e-40,
    1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11,  # ties for bf16 / f16
    np.finfo(np.float32).max, np.finfo(np.float32).tiny, 1.17549421e-38,
]
values = np.array(special, dtype=np.float32)
bits = [values.view(np.uint32)]
bits.append(rng.integers(0, 2 ** 32, size=6000, dtype=np.uint64).astype(np.uint32))  # every exponent
# Values in float16's range, and ties: low mantissa bits exactly half an ulp.
near = rng.uniform(-70000, 70000, size=1500).astype(np.float32).view(np.uint32)
bits.append(near)
bits.append((near & ~np.uint32(0x1FFF)) | np.uint32(0x1000))  # f16 ties
bits.append((near & ~np.uint32(0xFFFF)) | np.uint32(0x8000))  # bf16 ties
small = rng.uniform(-2.0 ** -13, 2.0 ** -13, size=1500).astype(np.float32).view(np.uint32)  # f16 subnormals
bits.append(small)
all_bits = np.concatenate(bits).astype(np.uint32)
floats = all_bits.view(np.float32)
keep = ~np.isnan(floats)
all_bits, floats = all_bits[keep], floats[keep]
with np.errstate(over="ignore"):
    as_bf16 = floats.astype(ml_dtypes.bfloat16).view(np.uint16)
    as_f16 = floats.astype(np.float16).view(np.uint16)
out = os.path.join(os.path.dirname(__file__), "..", "fixtures", "half", "cases.txt")
with open(out, "w") as f:
    f.write("# float32-bits bfloat16-bits float16-bits (hex), from ml_dtypes %s and numpy %s\n"
            % (ml_dtypes.__version__, np.__version__))
    for u, b, h in zip(all_bits, as_bf16, as_f16):
        f.write("%08x %04x %04x\n" % (u, b, h))
print("wrote", out, len(all_bits), "cases")
