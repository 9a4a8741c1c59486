#!/usr/bin/env python3
"""Writes tests/fixtures/safetensors/python.safetensors with Python's own `safetensors` library,
so the C++ reader is tested on a file it did not write. Deterministic.

    pip install safetensors numpy && python3 tests/io/gen_safetensors_fixtures.py

The values are simple formulas that tests/io/test_safetensors.cpp checks literally.
"""
import os

import numpy as np
from safetensors.numpy import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "safetensors")

tensors = {
    "encoder.weight": (np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5),  # [[0, .5, 1], [1.5, 2, 2.5]]
    "decoder.bias": np.array([1e-300, -2.5, 3.25], dtype=np.float64),
    "ids": np.array([[1, -2], [3, 2147483647]], dtype=np.int32),
    "vocab": np.frombuffer(b"spm\x00\xff", dtype=np.uint8),
    "half": np.array([1.0, -0.5, 65504.0], dtype=np.float16),
    "scalar": np.array(7.0, dtype=np.float32),
    "empty": np.zeros((0, 4), dtype=np.float32),
}
os.makedirs(OUT, exist_ok=True)
save_file(tensors, os.path.join(OUT, "python.safetensors"),
          metadata={"format_version": "1", "config": '{"d_model": 16}', "step": "42"})
