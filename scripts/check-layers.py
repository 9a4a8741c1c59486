#!/usr/bin/env python3
"""Checks that src/'s layers depend one way: every #include "..." of a file in src/ names a header of
its own directory or of a directory its layer may use (LAYERS below, docs/ARCHITECTURE.md draws it);
and that each file opens only its directory's namespaces (NAMESPACES below).

    scripts/check-layers.py [SRC_DIR]     exit 1 and one line per violation (file:line: what and why)
    scripts/check-layers.py --self-test   the checker on small trees it makes: it must refuse an
                                          upward include, a cycle in LAYERS, an unknown directory
                                          and another directory's namespace

Run by ctest (the `layers` test) and so by scripts/test.sh and CI. Needs only Python 3's standard
library: it is test tooling, the toolkit itself never runs it.
"""
import os
import re
import sys
import tempfile

# Each directory of src/ and the directories it may include, besides its own. A directory may use
# only lower layers: a change that needs an upward include moves the code down instead (or up the
# includer). Only ops/ calls kernels; the device runtimes sit below the tensor; kernels never see a
# Tensor (no core/).
DEVICE = ["device", "device/cpu", "device/cuda"]
KERNELS = ["kernels", "kernels/common", "kernels/cpu", "kernels/cuda"]
LAYERS = {
    "base": [],
    "device/cpu": ["base"],
    "device/cuda": ["base"],
    "device": ["base", "device/cpu", "device/cuda"],
    "core": ["base"] + DEVICE,
    "kernels/common": ["base"],
    # kernels/<op>.h: the declarations of an op's CPU kernels and of their CUDA twins (which take a
    # cuda::Stream, a CUDA-free handle).
    "kernels": ["base", "device/cuda", "kernels/common"],
    "kernels/cpu": ["base", "device/cpu", "kernels", "kernels/common"],
    "kernels/cuda": ["base", "device/cuda", "kernels", "kernels/common", "kernels/cpu"],
    "ops": ["base", "core"] + DEVICE + KERNELS,
    "io": ["base"],
    "text": ["base", "io"],
    "eval": ["base", "io", "text"],
    "model": ["base", "core", "ops", "io", "text"] + DEVICE,
    "data": ["base", "core", "io", "text", "model"] + DEVICE,
    "convert": ["base", "core", "ops", "io", "text", "model"] + DEVICE,
    "decode": ["base", "core", "ops", "io", "text", "model", "eval"] + DEVICE,
    "train": ["base", "core", "ops", "io", "text", "model", "data", "decode", "eval"] + DEVICE,
    "serve": ["base", "core", "ops", "io", "text", "model", "decode", "eval"] + DEVICE,
    "cli": ["base", "core", "ops", "io", "text", "model", "data", "decode", "eval", "convert", "train", "serve"]
    + DEVICE,
    ".": None,  # main.cpp: anything
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')

# The namespaces each directory's files may open (docs/ARCHITECTURE.md, "Conventions"): the
# foundation is `dragoman`, every other directory `dragoman::<directory>`, a backend one namespace
# across its runtime and kernels. "X::*" allows X and any namespace nested in it.
NAMESPACES = {
    "base": ["dragoman", "dragoman::philox", "dragoman::utf8"],
    "core": ["dragoman"],
    "device": ["dragoman"],
    "device/cpu": ["dragoman::cpu::*"],
    "device/cuda": ["dragoman::cuda::*"],
    "kernels": ["dragoman::cpu::*", "dragoman::cuda::*"],
    "kernels/common": ["dragoman::common::*"],
    "kernels/cpu": ["dragoman::cpu::*"],
    "kernels/cuda": ["dragoman::cuda::*"],
    ".": None,  # main.cpp
}
NAMESPACE = re.compile(r"^namespace (dragoman(?:::\w+)*) \{")


def namespace_allowed(directory, namespace):
    allowed = NAMESPACES.get(directory, [f"dragoman::{directory}::*"])
    if allowed is None:
        return True
    for a in allowed:
        if a.endswith("::*") and (namespace == a[:-3] or namespace.startswith(a[:-1])):
            return True
        if namespace == a:
            return True
    return False


def find_cycle(layers):
    """A cycle of LAYERS as a list of directories, or None."""
    state = {}

    def visit(d, path):
        state[d] = 1
        for u in layers.get(d) or []:
            if state.get(u) == 1:
                return path + [d, u]
            if u not in state:
                found = visit(u, path + [d])
                if found:
                    return found
        state[d] = 2
        return None

    for d in layers:
        if d not in state:
            found = visit(d, [])
            if found:
                return found[found.index(found[-1]):]
    return None


def check(src, layers):
    """The violations under src, as 'file:line: message' strings."""
    problems = []
    cycle = find_cycle(layers)
    if cycle:
        problems.append("LAYERS has a cycle: " + " -> ".join(cycle))
    for d, uses in layers.items():
        for u in uses or []:
            if u not in layers:
                problems.append(f"LAYERS: {d} uses {u}, which is not a layer")
    for root, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith((".h", ".cpp", ".cu", ".cuh")):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)
            here = os.path.dirname(rel) or "."
            if here not in layers:
                problems.append(f"{rel}: directory {here}/ is not in LAYERS (scripts/check-layers.py)")
                continue
            allowed = layers[here]
            with open(path, encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    n = NAMESPACE.match(line)
                    if n and not namespace_allowed(here, n.group(1)):
                        problems.append(f"{rel}:{number}: namespace {n.group(1)} in {here}/, which holds "
                                        f"{', '.join(NAMESPACES.get(here, [f'dragoman::{here}::*']))}"
                                        " (namespaces follow the directories)")
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = m.group(1)
                    if not os.path.exists(os.path.join(src, target)):
                        # relative to the file (a private header beside it)
                        if os.path.exists(os.path.join(root, target)):
                            target = os.path.relpath(os.path.join(root, target), src)
                        else:
                            continue  # a generated or outside header: not ours to order
                    there = os.path.dirname(os.path.normpath(target)) or "."
                    if there == here or allowed is None or there in allowed:
                        continue
                    problems.append(f"{rel}:{number}: {here}/ includes {target}, but {here}/ may use only "
                                    f"{', '.join(allowed) or 'nothing of ours'} (a lower layer never includes a higher one)")
    return problems


def self_test():
    layers = {"low": [], "high": ["low"]}
    with tempfile.TemporaryDirectory() as src:
        os.makedirs(os.path.join(src, "low"))
        os.makedirs(os.path.join(src, "high"))
        with open(os.path.join(src, "high", "a.h"), "w") as f:
            f.write('#include "low/b.h"\n')
        with open(os.path.join(src, "low", "b.h"), "w") as f:
            f.write("// nothing\n")
        assert check(src, layers) == [], check(src, layers)
        with open(os.path.join(src, "low", "c.cpp"), "w") as f:
            f.write('#include "low/b.h"\n\n#include "high/a.h"\n')
        found = check(src, layers)
        assert len(found) == 1 and found[0].startswith("low/c.cpp:3: low/ includes high/a.h"), found
        os.makedirs(os.path.join(src, "other"))
        with open(os.path.join(src, "other", "d.cpp"), "w") as f:
            f.write("\n")
        assert any("other/ is not in LAYERS" in p for p in check(src, layers))
        with open(os.path.join(src, "high", "e.cpp"), "w") as f:
            f.write("namespace dragoman::high::detail {\n}\nnamespace dragoman::low {\n}\n")
        found = [p for p in check(src, layers) if p.startswith("high/e.cpp")]
        assert len(found) == 1 and found[0].startswith("high/e.cpp:3: namespace dragoman::low in high/"), found
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) is not None
    assert find_cycle(LAYERS) is None
    print("check-layers self-test: an upward include, an unknown directory, a cycle and a namespace "
          "that is not its directory's are refused")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    problems = check(src, LAYERS)
    for p in problems:
        print(p)
    if problems:
        print(f"check-layers: {len(problems)} violation(s) of the layers (docs/ARCHITECTURE.md)")
        return 1
    print(f"check-layers: src/ follows its {len(LAYERS)} layers, and each directory its namespace")
    return 0


if __name__ == "__main__":
    sys.exit(main())
