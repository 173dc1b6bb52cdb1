"""Writes the seed corpus of program_load_fuzzer.

    python3 make_program_seed_corpus.py SHARDC OUT_DIR WORK_DIR

Valid program.pb images, compiled by SHARDC from small models:
  * forward bundles of onnx_import_fuzzer's models (make_seed_corpus.py: every supported op,
    one rank, the bundle layout of one program per rank);
  * training bundles of tests/models' MLP classifier (AdamW; SGD with momentum and gradient
    clipping) and of the tiny GPT with dropout, on one rank, data parallel (--gpus 2) and
    placed on meshes: tp=2 (strided and vocab-parallel blocks), dp=2,tp=2,zero=1 (four
    ranks, two groups), tp=2 with sequence parallelism, zero3;
followed by truncated and byte-mutated copies. Deterministic: the same seeds every run.

Also leaves WORK_DIR/bundle/weights.bin, the fuzzer's weights file (it runs in that directory):
the largest of the bundles' weights files, so that every seed's weights region and initial
values lie inside it (and that bundle's checksum matches).
"""

import os
import random
import shutil
import subprocess
import sys

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "models")
sys.path.insert(0, HERE)
import make_seed_corpus as onnx_seeds  # noqa: E402

# onnx_import_fuzzer's models that make forward bundles.
FORWARD_MODELS = {
    "elementwise": onnx_seeds.elementwise, "linalg17": lambda: onnx_seeds.linalg(17),
    "linalg20": lambda: onnx_seeds.linalg(20), "reduce13": lambda: onnx_seeds.reductions(13),
    "reduce18": lambda: onnx_seeds.reductions(18), "shapes15": lambda: onnx_seeds.shapes(15),
    "shapes19": lambda: onnx_seeds.shapes(19), "data14": lambda: onnx_seeds.data_movement(14),
    "data18": lambda: onnx_seeds.data_movement(18), "losses": onnx_seeds.losses,
    "gelu20": onnx_seeds.gelu20, "external": onnx_seeds.external_data,
}

# (seed name, export script in tests/models, shardc options)
EXPORTED_BUNDLES = [
    ("mlp_forward", "mlp_classifier", ["--mode", "forward"]),
    ("mlp_train", "mlp_classifier", []),
    ("mlp_sgd_clip", "mlp_classifier",
     ["--optimizer", "sgd", "--momentum", "0.9", "--grad-clip", "1.0"]),
    ("mlp_dp2", "mlp_classifier", ["--gpus", "2", "--strategy", "dp"]),
    ("mlp_tp2", "mlp_classifier", ["--gpus", "2", "--strategy", "tp=2"]),
    ("gpt_train", "dropout_gpt", []),
    ("gpt_dp2", "dropout_gpt", ["--gpus", "2", "--strategy", "dp"]),
    ("gpt_tp2", "dropout_gpt", ["--gpus", "2", "--strategy", "tp=2"]),
    ("gpt_dp2_tp2_zero1", "dropout_gpt", ["--gpus", "4", "--strategy", "dp=2,tp=2,zero=1"]),
    ("gpt_tp2_sp", "dropout_gpt", ["--gpus", "2", "--strategy", "tp=2,sp=1"]),
    ("gpt_zero3", "dropout_gpt", ["--gpus", "2", "--strategy", "zero3"]),
]


def compile_bundle(shardc, model, out, options):
    result = subprocess.run([shardc, model, "-o", out] + options, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"shardc {model} {' '.join(options)} failed:\n{result.stderr}")


def main():
    shardc, out, work = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    build = os.path.join(work, "seed_bundles")
    shutil.rmtree(build, ignore_errors=True)
    os.makedirs(build)
    bundles = {}

    # make_seed_corpus writes the external model's data file into the current directory,
    # where shardc looks for it (next to the model).
    cwd = os.getcwd()
    os.chdir(build)
    try:
        for name, make in FORWARD_MODELS.items():
            onnx.save(make(), name + ".onnx")
            compile_bundle(shardc, name + ".onnx", name, ["--mode", "forward"])
            bundles[name] = os.path.join(build, name)
    finally:
        os.chdir(cwd)

    for model in sorted({model for _, model, _ in EXPORTED_BUNDLES}):
        subprocess.run([sys.executable, os.path.join(MODELS, f"export_{model}.py"),
                        "--out", os.path.join(build, model)], check=True,
                       stdout=subprocess.DEVNULL)
    for name, model, options in EXPORTED_BUNDLES:
        bundles[name] = os.path.join(build, name)
        compile_bundle(shardc, os.path.join(build, model, "model.onnx"), bundles[name], options)

    weights = max((os.path.join(b, "weights.bin") for b in bundles.values()), key=os.path.getsize)
    os.makedirs(os.path.join(work, "bundle"), exist_ok=True)
    shutil.copyfile(weights, os.path.join(work, "bundle", "weights.bin"))

    rng = random.Random(0)
    for name, bundle in bundles.items():
        with open(os.path.join(bundle, "program.pb"), "rb") as f:
            onnx_seeds.write_seed_and_variants(out, name, ".pb", f.read(), rng)
    print(f"wrote {len(bundles) * 6} seeds to {out} ({len(bundles)} bundles); weights file "
          f"{os.path.getsize(weights)} bytes")


if __name__ == "__main__":
    main()
