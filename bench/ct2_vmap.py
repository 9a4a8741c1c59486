#!/usr/bin/env python3
"""translate_ct2.py (../shared/bench/ct2) with CTranslate2's vocabulary map: every translate_batch
call gets use_vmap=True, so the model directory's vmap.txt restricts each batch's output layer
(CTranslate2's counterpart of `dragoman translate --shortlist`). Usage: as translate_ct2.py, with
the path of translate_ct2.py first:
    python3 bench/ct2_vmap.py ../shared/bench/ct2/translate_ct2.py --model DIR ...
"""
import os
import runpy
import sys

import ctranslate2


class VmapTranslator(ctranslate2.Translator):
    def translate_batch(self, *args, **kwargs):
        kwargs.setdefault("use_vmap", True)
        return super().translate_batch(*args, **kwargs)


if __name__ == "__main__":
    script = sys.argv[1]
    model = sys.argv[sys.argv.index("--model") + 1]
    if not os.path.isfile(os.path.join(model, "vmap.txt")):
        sys.exit("ct2_vmap: %s has no vmap.txt" % model)
    ctranslate2.Translator = VmapTranslator
    sys.argv = sys.argv[1:]
    runpy.run_path(script, run_name="__main__")
