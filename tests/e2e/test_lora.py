"""`shardc --lora` against PEFT, end to end.

    test_lora.py --shardc PATH --shardrun PATH --work DIR

For Hugging Face GPT-2 (Conv1D projections: Gemm on W [in, out]) and Llama (nn.Linear
projections without bias: MatMul on a transposed W [out, in]), tiny configurations of the
model zoo's, each exported in both styles (plain torch.onnx.export with the shapes baked in,
and with dynamic_axes): PEFT (peft 0.14, LoraConfig r=8, lora_alpha=16, PEFT's default targets
for the architecture: c_attn; q_proj and v_proj) wraps the model with both adapter matrices
random (init_lora_weights=False, so that the adapters change the loss from the first step) and
saves them as save_pretrained does (adapter_model.safetensors); shardc compiles the base model's
export with --lora r=8,alpha=16,targets=... --lora-init that file, and shardrun trains 30
AdamW steps on the batch PEFT trains on. Checks:

  peft      every step's loss within 1e-5 (relative) of PEFT's (AdamW over the adapters only)
  saved     shardrun --save-adapters writes the trained adapters as a PEFT directory, which
            peft.PeftModel.from_pretrained loads onto the base model: its forward loss on the
            batch within 1e-5 of the PEFT-trained model's after the same 30 steps
  trained   the plan trains exactly the adapters: their element count, and no base parameter
            (plan.json's trained elements, 2 * r * (in + out) per targeted weight)
  sharded   the same compile under --gpus 2 --strategy zero3, tp=2 and --gpus 4 dp=2,tp=2:
            every step within 1e-5 of the 1-rank LoRA run, planned = measured peak memory on
            every rank (the adapters are split on tp and their state sharded; the frozen base
            stays whole on every rank so far)
  dropout   --lora ...,dropout=0.1 (a Philox mask per adapter input, keyed like the model's own
            dropouts, so not PEFT's torch masks): the losses leave the dropout-free run's and
            dp=2 ZeRO-3 follows 1 rank within 1e-5 (each rank draws its rows' part of the same
            masks)
  default   --lora without --lora-init (PEFT's own initialisation, B zeros): step 1's loss
            equals the base model's (the adapters start as the identity), later ones differ
  resume    a checkpoint holds the adapters (and their state) only, with the frozen weights'
            checksum: resuming it on the same bundle goes on, on a bundle of the same model
            whose base differs in one weight it is refused in one line
  refused   a target regex that matches nothing, r larger than a targeted weight, a file whose
            adapters the targets do not match, and --lora-init without --lora: one error
            line, exit 1 or 2

Prints PASS/FAIL per case with the worst difference, and `N passed, M failed`.
"""

import json
import os
import shutil
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_util  # noqa: E402
import test_model_zoo as zoo  # noqa: E402

RANK, ALPHA, STEPS, LR, RTOL = 8, 16, 30, 1e-3, 1e-5
MODELS = {
    # name: (build, PEFT's default target modules for the architecture)
    "hf_gpt2": (zoo.hf_gpt2, ["c_attn"]),
    "hf_llama": (zoo.hf_decoder("LlamaConfig", "LlamaForCausalLM").build, ["q_proj", "v_proj"]),
}


def build(name):
    torch.manual_seed(0)
    return MODELS[name][0]()


def export(model, batch, path, style):
    """Exports as the model zoo does; returns the --input-shape flags the style needs."""
    zoo.export_onnx(model, batch, path, style, zoo.TOKENS_DYNAMIC)
    if style == "static":
        return []
    return [flag for input_name, tensor in batch.items()
            for flag in ("--input-shape", f"{input_name}={'x'.join(map(str, tensor.shape))}")]


def peft_run(name, batch, adapter_dir, base=None):
    """PEFT's LoRA on a fresh copy of the model (its parameters named in `base`, {name: numpy
    value}, replaced first): saves the adapters, then trains STEPS AdamW steps over them;
    returns the losses, the adapters' element count and the final forward loss."""
    import peft
    wrapper = build(name)
    if base:
        params = dict(wrapper.named_parameters())
        with torch.no_grad():
            for param_name, value in base.items():
                params[param_name].copy_(torch.from_numpy(value))
    torch.manual_seed(1)
    config = peft.LoraConfig(r=RANK, lora_alpha=ALPHA, lora_dropout=0.0,
                             target_modules=MODELS[name][1], init_lora_weights=False)
    wrapper.model = peft.get_peft_model(wrapper.model, config)
    # What save_pretrained writes (less its model card, which needs Jinja2): the adapters'
    # state dict as safetensors and the config.
    import safetensors.torch
    os.makedirs(adapter_dir, exist_ok=True)
    safetensors.torch.save_file(peft.get_peft_model_state_dict(wrapper.model),
                                os.path.join(adapter_dir, "adapter_model.safetensors"),
                                metadata={"format": "pt"})
    wrapper.model.peft_config["default"].save_pretrained(adapter_dir)
    trained = [p for p in wrapper.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trained, lr=LR, weight_decay=0.01)
    losses = []
    args = tuple(batch.values())
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = wrapper(*args)
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    with torch.no_grad():
        final = float(wrapper(*args))
    return losses, sum(p.numel() for p in trained), final


def peft_loaded_loss(name, batch, adapter_dir):
    """The forward loss of the base model with the adapters of `adapter_dir` loaded by PEFT."""
    import peft
    wrapper = build(name)
    wrapper.model = peft.PeftModel.from_pretrained(wrapper.model, adapter_dir)
    with torch.no_grad():
        return float(wrapper(*tuple(batch.values())))


PEAKS = {}  # bundle -> [(planned, measured) peak bytes per rank]


def compile_and_train(args, model_path, bundle, data, flags, run_flags=()):
    res = e2e_util.run_tool([args.shardc, model_path, "-o", bundle, *flags], 600)
    if not res.ok:
        return None, f"shardc {' '.join(flags)}: {res.describe()}"
    metrics = bundle + ".jsonl"
    res = e2e_util.run_tool([args.shardrun, bundle, "--steps", str(STEPS), "--data", data,
                             "--lr", str(LR), "--metrics", metrics, *run_flags], 600)
    if not res.ok:
        return None, f"shardrun {bundle}: {res.describe()}"
    PEAKS[bundle] = e2e_util.memory_peaks(res.stdout + res.stderr)
    return [json.loads(line)["loss"] for line in open(metrics)], None


def sharded_result(label, sharded, error, bundle, one_rank):
    """(ok, message) of a sharded run's losses (or its error) against the 1-rank run's: every
    step within RTOL, and planned = measured peak memory on every rank."""
    if error:
        return False, f"{label}: {error}"
    diff = zoo.worst_relative(sharded, one_rank)
    peaks = PEAKS[bundle]
    equal = bool(peaks) and all(p == m for p, m in peaks)
    return (diff <= RTOL and equal, f"{label}: vs 1 rank worst {diff:.2e} (<= {RTOL:g}); planned "
                                    f"= measured peak memory: {equal}")


def check_model(args, name, style, results):
    work = os.path.join(args.work, f"{name}_{style}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "data"))
    batch = zoo.token_batch()
    for input_name, tensor in batch.items():
        np.save(os.path.join(work, "data", e2e_util.npy_name(input_name)), tensor.numpy())
    model_path = os.path.join(work, "model.onnx")
    shape_flags = export(build(name), batch, model_path, style)
    adapter_dir = os.path.join(work, "peft_adapter")
    reference, adapter_elements, reference_final = peft_run(name, batch, adapter_dir)
    targets = "|".join(MODELS[name][1])
    lora = ["--lora", f"r={RANK},alpha={ALPHA},targets={targets}"]
    bundle = os.path.join(work, "lora.shard")
    ours, error = compile_and_train(
        args, model_path, bundle, os.path.join(work, "data"),
        [*shape_flags, *lora, "--lora-init", os.path.join(adapter_dir, "adapter_model.safetensors")],
        ["--save-adapters", os.path.join(work, "saved_adapter")])
    label = f"{name}_{style}"
    if error:
        results.append((False, f"{label} peft: {error}"))
        return
    diff = zoo.worst_relative(ours, reference)
    results.append((diff <= RTOL, f"{label} peft: {STEPS} steps, worst relative loss difference "
                                  f"{diff:.2e} (<= {RTOL:g}); first loss {ours[0]:.6f} "
                                  f"(PEFT {reference[0]:.6f}), last {ours[-1]:.6f} "
                                  f"(PEFT {reference[-1]:.6f})"))
    loaded = peft_loaded_loss(name, batch, os.path.join(work, "saved_adapter"))
    diff = abs(loaded - reference_final) / abs(reference_final)
    results.append((diff <= RTOL, f"{label} saved: PEFT's forward loss with the saved adapters "
                                  f"{loaded:.7f}, the PEFT-trained model's {reference_final:.7f} "
                                  f"(relative {diff:.2e}, <= {RTOL:g})"))
    totals = json.load(open(os.path.join(bundle, "plan.json")))["parameter_totals"]
    results.append((totals["trained_elements"] == adapter_elements,
                    f"{label} trained: {totals['trained_elements']} trained elements in the plan, "
                    f"PEFT's adapters {adapter_elements}"))

    init = ["--lora-init", os.path.join(adapter_dir, "adapter_model.safetensors")]
    for gpus, strategy in (("2", "zero3"), ("2", "tp=2"), ("4", "dp=2,tp=2")):
        sharded_bundle = os.path.join(work, f"lora_{strategy.replace(',', '_')}.shard")
        sharded, error = compile_and_train(
            args, model_path, sharded_bundle, os.path.join(work, "data"),
            [*shape_flags, *lora, *init, "--gpus", gpus, "--strategy", strategy])
        results.append(sharded_result(f"{label} {strategy}", sharded, error, sharded_bundle, ours))

    dropout_lora = ["--lora", f"r={RANK},alpha={ALPHA},dropout=0.1,targets={targets}", *init]
    dropped, error = compile_and_train(args, model_path, os.path.join(work, "dropout.shard"),
                                       os.path.join(work, "data"), [*shape_flags, *dropout_lora])
    dropped2, error2 = compile_and_train(
        args, model_path, os.path.join(work, "dropout_zero3.shard"), os.path.join(work, "data"),
        [*shape_flags, *dropout_lora, "--gpus", "2", "--strategy", "zero3"])
    if error or error2:
        results.append((False, f"{label} dropout: {error or error2}"))
    else:
        diff = zoo.worst_relative(dropped2, dropped)
        moved = zoo.worst_relative(dropped, ours)
        results.append((diff <= RTOL and moved > 1e-4,
                        f"{label} dropout: 0.1 moves the losses by {moved:.2e} from dropout 0; "
                        f"zero3 vs 1 rank worst {diff:.2e} (<= {RTOL:g})"))

    # PEFT's own initialisation: B = 0, so the first step's loss is the base model's.
    base, error = compile_and_train(args, model_path, os.path.join(work, "base.shard"),
                                    os.path.join(work, "data"), shape_flags)
    default, error2 = compile_and_train(args, model_path, os.path.join(work, "default.shard"),
                                        os.path.join(work, "data"), [*shape_flags, *lora])
    if error or error2:
        results.append((False, f"{label} default: {error or error2}"))
        return
    results.append((default[0] == base[0] and default[1] != base[1],
                    f"{label} default: first loss {default[0]:.8f} against the base model's "
                    f"{base[0]:.8f}; second {default[1]:.8f} against {base[1]:.8f}"))


def check_resume(args, results):
    """Checkpoints of a LoRA run: adapters only, and bound to the base they were trained on."""
    import onnx
    from onnx import numpy_helper
    work = os.path.join(args.work, "hf_gpt2_static")
    model_path = os.path.join(work, "model.onnx")
    data = os.path.join(work, "data")
    lora = ["--lora", f"r={RANK},alpha={ALPHA},targets=c_attn"]
    bundle = os.path.join(work, "resume.shard")
    ckpt = os.path.join(work, "resume.ckpt")
    shutil.rmtree(ckpt, ignore_errors=True)
    res = e2e_util.run_tool([args.shardc, model_path, "-o", bundle, *lora], 300)
    if res.ok:
        res = e2e_util.run_tool([args.shardrun, bundle, "--steps", "5", "--data", data,
                                 "--save", ckpt], 300)
    if not res.ok:
        results.append((False, f"resume: {res.describe()}"))
        return
    manifest = json.load(open(os.path.join(ckpt, "manifest.json")))
    from safetensors.numpy import load_file
    saved = sorted(load_file(os.path.join(ckpt, manifest["files"]["params"]["name"])))
    same = e2e_util.run_tool([args.shardrun, bundle, "--steps", "8", "--data", data,
                              "--resume", ckpt], 300)
    # The same model with one frozen weight changed: same parameters, another base.
    model = onnx.load(model_path)
    for init in model.graph.initializer:
        if init.name.endswith("wte.weight"):
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) + 1e-3, init.name))
    other_path = os.path.join(work, "model_other_base.onnx")
    onnx.save(model, other_path)
    other = os.path.join(work, "resume_other.shard")
    res = e2e_util.run_tool([args.shardc, other_path, "-o", other, *lora], 300)
    refused = e2e_util.run_tool([args.shardrun, other, "--steps", "8", "--data", data,
                                 "--resume", ckpt], 300)
    lines = refused.stderr.strip().splitlines()
    ok = (all(name.endswith((".lora_A.weight", ".lora_B.weight"))
              for name in saved) and len(saved) == 4 and
          "frozen_weights_xxh3_64" in manifest and same.ok and res.ok and
          refused.returncode != 0 and len(lines) == 1 and
          "the checkpoint was trained against other frozen weights" in lines[0])
    results.append((ok, f"resume: checkpoint params {saved}; manifest frozen_weights_xxh3_64 "
                        f"{manifest.get('frozen_weights_xxh3_64')}; same bundle resumes: "
                        f"{same.ok}; other base: exit {refused.returncode}: "
                        f"{lines[0] if lines else '(no message)'}"))


def check_refusals(args, results):
    work = os.path.join(args.work, "hf_gpt2_static")
    model_path = os.path.join(work, "model.onnx")
    adapter = os.path.join(work, "peft_adapter", "adapter_model.safetensors")
    cases = [
        (["--lora", "r=8,targets=no_such_module"], 1,
         "--lora targets=no_such_module: no MatMul or Gemm weight's module matches"),
        (["--lora", "r=100,targets=c_attn"], 1, "--lora r=100: larger than weight"),
        (["--lora", "r=8,alpha=16,targets=c_proj", "--lora-init", adapter], 1,
         "no single tensor base_model.model.<module path>.lora_X.weight for adapter"),
        (["--lora-init", adapter], 2, "--lora-init applies to LoRA adapters; give --lora too"),
        (["--lora", "r=8,dropout=1.5"], 2, "--lora dropout=1.5: the ratio must be in [0, 1)"),
    ]
    for flags, code, message in cases:
        res = e2e_util.run_tool([args.shardc, model_path, "-o", os.path.join(work, "refused"),
                                 *flags], 300)
        lines = res.stderr.strip().splitlines()
        ok = res.returncode == code and len(lines) == 1 and message in lines[0]
        results.append((ok, f"refused {' '.join(flags)}: exit {res.returncode}: "
                            f"{lines[0] if lines else '(no message)'}"))


def main():
    args = e2e_util.parse_args(e2e_util.argument_parser(__doc__))
    results = []
    for name in MODELS:
        for style in ("static", "dynamic"):
            check_model(args, name, style, results)
    check_resume(args, results)
    check_refusals(args, results)
    sys.exit(e2e_util.report(results))


if __name__ == "__main__":
    main()
