"""Bundles of a fixed set of models and strategies, to show that a change to the compiler leaves
what it writes byte for byte as it was (or to list every file that differs).

    bundle_snapshot.py export  --models DIR
        exports the tiny GPT and the BERT-like encoder (tests/models; dynamic exports, batch 4)
        and four models of the zoo (HF GPT-2, Llama and OPT, nn.TransformerEncoder; static
        exports) into DIR, once: both compilers must read the same files.
    bundle_snapshot.py compile --models DIR --shardc PATH --out OUT
        compiles each model under 1 rank, --strategy zero3 on 2 devices, tp=2, and
        dp=2,tp=2,sp=1 on 4 into OUT/MODEL/STRATEGY/ (program.pb, plan.txt, plan.json,
        weights.bin, bundle.json, source.onnx); a strategy shardc refuses leaves its message in
        OUT/MODEL/STRATEGY.refused instead (nn.TransformerEncoder's batch cannot be split yet),
        so that refusals are compared too.
    bundle_snapshot.py compare A B
        compares two such trees file by file; prints each file that differs (or exists in one
        only) and exits 1 if any does.
"""

import argparse
import filecmp
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_util  # noqa: E402

STRATEGIES = {
    "one": [],
    "dp2_zero3": ["--gpus", "2", "--strategy", "zero3"],
    "tp2": ["--gpus", "2", "--strategy", "tp=2"],
    "dp2_tp2_sp": ["--gpus", "4", "--strategy", "dp=2,tp=2,sp=1"],
}
TEST_MODELS = ["tiny_gpt", "bert_encoder"]
ZOO_MODELS = ["gpt2", "llama", "opt", "torch_encoder"]


def export(models_dir):
    os.makedirs(models_dir, exist_ok=True)
    for name in TEST_MODELS:
        e2e_util.export_test_model(name, os.path.join(models_dir, name))
    import test_model_zoo
    args = argparse.Namespace(work=models_dir)
    zoo = test_model_zoo.Zoo(args)
    for name in ZOO_MODELS:
        if os.path.exists(os.path.join(models_dir, name, "model.onnx")):
            continue
        _, _, path, _, flags = zoo.export(name, "static")
        with open(os.path.join(os.path.dirname(path), "flags.txt"), "w") as f:
            f.write("\n".join(flags))
        os.rename(os.path.dirname(path), os.path.join(models_dir, name))


def model_flags(model_dir):
    flags = e2e_util.input_shape_flags(model_dir)
    extra = os.path.join(model_dir, "flags.txt")
    if os.path.exists(extra):
        flags += [line for line in open(extra).read().split("\n") if line]
    return flags


def compile_all(models_dir, shardc, out):
    for name in sorted(os.listdir(models_dir)):
        model_dir = os.path.join(models_dir, name)
        if not os.path.exists(os.path.join(model_dir, "model.onnx")):
            continue
        for strategy, flags in STRATEGIES.items():
            bundle = os.path.join(out, name, strategy)
            os.makedirs(os.path.dirname(bundle), exist_ok=True)
            # Run from the models folder, so that messages name the model by a relative path.
            res = subprocess.run([os.path.abspath(shardc), os.path.join(name, "model.onnx"),
                                  "-o", os.path.abspath(bundle), *model_flags(model_dir),
                                  *flags], capture_output=True, text=True, cwd=models_dir)
            if res.returncode != 0:
                with open(bundle + ".refused", "w") as f:
                    f.write(res.stderr.replace(os.path.abspath(out), "OUT"))
            status = "ok" if res.returncode == 0 else "refused: " + res.stderr.strip()[-200:]
            print(f"{name:16} {strategy:12} {status}")
    return 0


def compare(a, b):
    differ = []
    for root, _, files in os.walk(a):
        rel = os.path.relpath(root, a)
        for f in files:
            other = os.path.join(b, rel, f)
            if not os.path.exists(other):
                differ.append(f"only in {a}: {os.path.join(rel, f)}")
            elif not filecmp.cmp(os.path.join(root, f), other, shallow=False):
                differ.append(f"differs: {os.path.join(rel, f)}")
    for root, _, files in os.walk(b):
        rel = os.path.relpath(root, b)
        for f in files:
            if not os.path.exists(os.path.join(a, rel, f)):
                differ.append(f"only in {b}: {os.path.join(rel, f)}")
    compared = sum(len(files) for _, _, files in os.walk(a))
    for line in differ:
        print(line)
    print(f"{compared} files compared, {len(differ)} differ")
    return 1 if differ else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export")
    e.add_argument("--models", required=True)
    c = sub.add_parser("compile")
    c.add_argument("--models", required=True)
    c.add_argument("--shardc", required=True)
    c.add_argument("--out", required=True)
    d = sub.add_parser("compare")
    d.add_argument("a")
    d.add_argument("b")
    args = p.parse_args()
    if args.command == "export":
        export(args.models)
        return 0
    if args.command == "compile":
        return compile_all(args.models, args.shardc, args.out)
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
