"""Models written by others, unchanged: their ONNX exports trained by shardc against PyTorch.

    test_model_zoo.py --shardc PATH --shardrun PATH --work DIR [--models gpt2,resnet18]
                      [--table FILE]

Runs under a Python that has `transformers` (tools/setup.sh makes .venv with transformers 4.49,
the newest release that runs on Debian's torch 1.13) and Debian's torchvision. The models:
  Hugging Face   GPT-2, GPT-J (rotary via torch.gather; its dynamic export is refused), Llama
                 (grouped-query attention, RoPE), Mistral, Qwen2, BERT and RoBERTa
                 (masked-LM head), OPT, BLOOM, BART and T5 (encoder-decoder), ViT (image
                 classification), Mamba (softplus step sizes, its scan loop unrolled), CLIP's
                 text tower (pooled at the argmax of the ids) with a classifier head, CLIP with
                 both towers and its contrastive loss (4 image-text pairs), Swin
                 (window padding computed with Mod): built from their config classes with small
                 random sizes (hidden 64, 2 layers, 4 heads, vocab 256), the model's own loss
  torch.nn       nn.TransformerEncoder (batch-first, causal float mask buffer), nn.Transformer
                 with batch_first False (sequence-first [seq, batch] inputs) and True, a
                 sequence-first nn.MultiheadAttention block, and a small CNN of Conv2d (strided,
                 grouped, dilated), BatchNorm2d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d
  torchvision    ResNet-18 (10 classes, 32x32 images; 10 steps instead of 30 for every
                 check below, which its convolutions make the costliest on a CPU)
each exported by torch.onnx.export (opset 17, training mode) in two styles: "static" (no
dynamic_axes: batch and sequence baked into the graph; plain torch.onnx.export, so shardc guesses
the trained set, and BART's final_logits_bias, a zero buffer nothing tells from a parameter, is
settled with --freeze as shardc's warning says) and "dynamic" (batch and sequence symbolic, given to shardc with --input-shape;
exported by the project's tools/export/shardc_export.py, which records the trained parameters).

Per model and style:
  forward    shardrun --mode forward's loss within 1e-5 (relative) of PyTorch's
  train      30 AdamW steps (weight decay 0.01) on one batch: every step's loss within 1e-5 of
             torch.optim.AdamW's on the same module; the trained set equal to PyTorch's
             named_parameters(); BatchNorm's running statistics in the trained model shardrun
             exports equal to PyTorch's buffers after the 30 steps
  dp2_zero3  --gpus 2 --strategy zero3: every step within 1e-5 of the 1-rank run
  tp2        --gpus 2 --strategy tp=2: the same
  dp2_tp2    --gpus 4 --strategy dp=2,tp=2: the same
  mb2        --micro-batches 2 on one device (gradient accumulation, a row per microbatch):
             the same
  remat_full --remat full on one device: every step's loss bit-identical to the 1-rank run
  remat_selective  --remat selective (each attention core): the same
  bf16_storage     (static exports) --precision bf16 on one device, against --half-storage
             off (the same rounded values kept as f32 copies): every step's loss bit-identical,
             with exact bf16 products (shardrun --bf16-products exact; test_mixed_precision.py
             checks both export styles of the test models, and the native products)
  bf16_dp2_zero3   (static exports) --precision bf16 --gpus 2 --strategy zero3 (bf16 weights
             gathered, each rank rounding its half's gradients, as DDP/FSDP do) against one rank
             running the batch as 2 microbatches, which rounds the same halves: within 1e-5;
             skipped (and the table says so) for the models whose training amplifies float32
             rounding (below), where one flipped bf16 rounding grows without a useful bound
  dp4        (CLIP, whose contrastive loss pairs the rows of the batch) --gpus 4 --strategy
             dp=4: the same
Ops that need the whole batch (CLIP's pooling gathers from the flattened batch, its contrastive
loss pairs every text with every image) take their operands whole: the partitioner all-gathers
them there and data parallelism splits the rest. Microbatches would see only their own rows in
such an op, so mb2 must be refused in one line naming it (Spec.refused); the table records the
refusal.
Some trainings amplify float32 rounding: ResNet-18 (BatchNorm over few values per channel in
its last stage) and nn.Transformer (AdamW turns the rounding noise of the attention key bias,
whose exact gradient is zero, into full-size steps). PyTorch's own float32 and float64 runs of
them part by more than 1e-5, so no float32 implementation can meet 1e-5 there. Every model's
tolerance is therefore max(1e-5, twice the worst difference between PyTorch's float32 and
float64 runs of the same 30 steps), measured in the same run and printed beside the results;
for the others it stays 1e-5. nn.Transformer is in the zoo in both layouts, one network with
the same weights: its tolerance is measured on both and the larger gap taken (PyTorch's
sequence-first run shows it, the batch-first one by chance does not; a sharded batch-first run
that splits both the heads and the batch rounds the key bias's gradient differently and parts
by 5e-5, and by 2e-7 with that bias frozen or with SGD).
Writes the table (model x style x check, worst relative difference) to --table, and the ops
each model's static export uses (supported by shardc or not) to --ops-table.
"""

import collections
import json
import os
import re
import shutil
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "export"))
import e2e_util  # noqa: E402
import shardc_export  # noqa: E402

BATCH, SEQ, VOCAB = 2, 16, 256
STEPS = 30
RTOL = 1e-5


class Spec:
    """One zoo model: build() makes the module (forward(*inputs) -> loss, or a tuple starting
    with it); inputs() its batch by name; dynamic the symbolic axes of the dynamic export."""

    def __init__(self, build, inputs, dynamic, lr=1e-3, freeze=None, steps=STEPS,
                 dynamic_refused=None, same_network=(), refused=None, extra_checks=(),
                 mkldnn=True, padding_rows=()):
        self.build, self.inputs, self.dynamic = build, inputs, dynamic
        # Zoo models that are this network (the same module, the same weights) in another
        # layout: PyTorch's float32 rounding of one layout bounds what float32 can promise
        # for the other, so the tolerance's float64 measurement takes the largest gap of all.
        self.same_network = same_network
        # What shardc's one-line refusal of the dynamic export says, for a model whose dynamic
        # export uses ops shardc does not support (None: it trains).
        self.dynamic_refused = dynamic_refused
        self.lr = lr
        # Training steps per run: fewer for a model whose steps cost seconds on a 2-core CPU.
        self.steps = steps
        # A finite buffer nothing in the graph tells from a parameter: without the export's
        # record shardc guesses (and warns), and the user settles it with --freeze REGEX.
        self.freeze = freeze
        # Check name -> what shardc's one-line refusal of it must say (a model that needs its
        # whole batch in one op cannot run it as microbatches: mb2, and bf16_dp2_zero3, whose
        # reference is two bf16 microbatches, is then skipped).
        self.refused = refused or {}
        # More (name, shardc flags) checks against the 1-rank run, for this model alone.
        self.extra_checks = extra_checks
        # False: PyTorch's reference runs without oneDNN (mkldnn), whose convolutions on this
        # model's shapes are not deterministic (two identical float32 runs part after a step).
        self.mkldnn = mkldnn
        # The embeddings' padding rows (nn.Embedding padding_idx) a static export cannot
        # record: its compiles settle them with --padding-row, as shardc's warning suggests;
        # the dynamic export's helper records them.
        self.padding_rows = padding_rows


# CLIP pools each row's hidden state at its argmax by a Gather from the flattened [batch * seq,
# hidden] states at row * seq + argmax, which reads only the row's own states (shardc rewrites
# it as a masked sum over the row: shardc-row-local-gather). Its contrastive loss pairs every
# text with every image of the batch: the product and the losses take the batch whole (the
# partitioner all-gathers their operands), so data parallelism splits the rest; microbatches,
# which would see only their own rows there, are refused naming the op.
NEEDS_WHOLE_BATCH = "needs the whole batch"


def generator():
    return torch.Generator().manual_seed(0)


def token_batch(rows=BATCH):
    ids = torch.randint(1, VOCAB, (rows, SEQ), generator=generator())
    return collections.OrderedDict(input_ids=ids, labels=ids.clone())


TOKENS_DYNAMIC = {"input_ids": {0: "batch", 1: "seq"}, "labels": {0: "batch", 1: "seq"}}


def image_batch(size=32, batch=BATCH):
    g = generator()
    return collections.OrderedDict(pixel_values=torch.randn(batch, 3, size, size, generator=g),
                                   labels=torch.randint(0, 10, (batch,), generator=g))


IMAGES_DYNAMIC = {"pixel_values": {0: "batch"}, "labels": {0: "batch"}}


def plan_summary(bundle):
    """What a sharded bundle's plan.json says for the table: the ops that need the batch whole,
    how many of them are computed in blocks of another dimension, the bytes their resharding
    sends per rank and step and, with tensor parallelism, the share of the
    trained parameters split on tp (and how many dimensions were padded to split)."""
    plan = json.load(open(os.path.join(bundle, "plan.json")))
    parts = []
    lines = plan.get("resharding") or []
    if lines:
        sent = sum(int(m.group(1)) for line in lines
                   for m in [re.search(r"(\d+) bytes sent per rank", line)] if m)
        blocked = sum("computed in blocks" in line for line in lines)
        parts.append(f"reshards at {len(lines)} ops" +
                     (f" ({blocked} in blocks)" if blocked else "") +
                     f", {sent} B sent per rank per step")
    if any(a["name"] == "tp" for a in plan.get("mesh_axes", [])):
        totals = plan["parameter_totals"]
        share = totals["trained_split_elements"] / max(totals["trained_elements"], 1)
        padded = sum(1 for line in plan.get("tp_layout", []) if line.startswith("padded "))
        parts.append(f"{100 * share:.0f}% of trained parameters split on tp" +
                     (f" ({padded} dimensions padded)" if padded else ""))
    return "; ".join(parts)


class HuggingFaceLoss(torch.nn.Module):
    """forward(**batch) -> the model's own loss (HF's loss code, label shift included)."""

    def __init__(self, model, names):
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *inputs):
        return self.model(**dict(zip(self.names, inputs))).loss


def hf_decoder(config_name, model_name, layers=2, inputs=None, **extra):
    def build():
        import transformers
        config = getattr(transformers, config_name)(
            vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
            attention_dropout=0.0, tie_word_embeddings=False, use_cache=False,
            attn_implementation="eager", **extra)
        return HuggingFaceLoss(getattr(transformers, model_name)(config), list(TOKENS_DYNAMIC))
    return Spec(build, inputs or token_batch, TOKENS_DYNAMIC)


def hf_gpt2(layers=2):
    import transformers
    config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=64, n_layer=layers,
                                     n_head=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                     use_cache=False, attn_implementation="eager")
    return HuggingFaceLoss(transformers.GPT2LMHeadModel(config), list(TOKENS_DYNAMIC))


def hf_gptj():
    """GPT-J: rotary embeddings on part of each head (rotary_dim), read from a sin/cos table
    with torch.gather (GatherElements), and attention and the MLP in parallel from one norm."""
    import transformers
    config = transformers.GPTJConfig(vocab_size=VOCAB, n_positions=64, n_embd=64, n_layer=2,
                                     n_head=4, rotary_dim=8, n_inner=128, resid_pdrop=0.0,
                                     embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False,
                                     tie_word_embeddings=False, attn_implementation="eager")
    return HuggingFaceLoss(transformers.GPTJForCausalLM(config), list(TOKENS_DYNAMIC))


def hf_bert():
    import transformers
    config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=128,
                                     max_position_embeddings=64, hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0,
                                     attn_implementation="eager")
    return HuggingFaceLoss(transformers.BertForMaskedLM(config), list(TOKENS_DYNAMIC))


def hf_roberta():
    import transformers
    config = transformers.RobertaConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, intermediate_size=128,
                                        max_position_embeddings=SEQ + 2, hidden_dropout_prob=0.0,
                                        attention_probs_dropout_prob=0.0,
                                        attn_implementation="eager")
    return HuggingFaceLoss(transformers.RobertaForMaskedLM(config), list(TOKENS_DYNAMIC))


def hf_opt():
    import transformers
    config = transformers.OPTConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                                    ffn_dim=128, num_attention_heads=4, max_position_embeddings=64,
                                    dropout=0.0, attention_dropout=0.0, word_embed_proj_dim=64,
                                    use_cache=False, attn_implementation="eager")
    return HuggingFaceLoss(transformers.OPTForCausalLM(config), list(TOKENS_DYNAMIC))


def hf_bloom():
    """BLOOM: ALiBi position biases, and its attention scale traced as a float64 constant cast
    to float32."""
    import transformers
    config = transformers.BloomConfig(vocab_size=VOCAB, hidden_size=64, n_layer=2, n_head=4,
                                      hidden_dropout=0.0, attention_dropout=0.0,
                                      use_cache=False, attn_implementation="eager")
    return HuggingFaceLoss(transformers.BloomForCausalLM(config), list(TOKENS_DYNAMIC))


def hf_seq2seq(kind):
    """BART, Pegasus or T5 with its own loss: the decoder's inputs are the labels shifted right,
    which the export computes with ScatterND."""
    def build():
        import transformers
        if kind == "bart":
            config = transformers.BartConfig(
                vocab_size=VOCAB, d_model=64, encoder_layers=2, decoder_layers=2,
                encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                decoder_ffn_dim=128, max_position_embeddings=64, dropout=0.0,
                attention_dropout=0.0, activation_dropout=0.0, use_cache=False)
            model = transformers.BartForConditionalGeneration(config)
        elif kind == "pegasus":
            # Sinusoidal positions (buffers PyTorch keeps fixed) and a zero final_logits_bias.
            config = transformers.PegasusConfig(
                vocab_size=VOCAB, d_model=64, encoder_layers=2, decoder_layers=2,
                encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                decoder_ffn_dim=128, max_position_embeddings=64, dropout=0.0,
                attention_dropout=0.0, activation_dropout=0.0, use_cache=False)
            model = transformers.PegasusForConditionalGeneration(config)
        else:
            config = transformers.T5Config(
                vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4,
                dropout_rate=0.0, use_cache=False, decoder_start_token_id=0, pad_token_id=0)
            model = transformers.T5ForConditionalGeneration(config)
        return HuggingFaceLoss(model, list(TOKENS_DYNAMIC))
    return build


def hf_vit():
    import transformers
    config = transformers.ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=64,
                                    num_hidden_layers=2, num_attention_heads=4,
                                    intermediate_size=128, hidden_dropout_prob=0.0,
                                    attention_probs_dropout_prob=0.0, num_labels=10,
                                    attn_implementation="eager")
    return HuggingFaceLoss(transformers.ViTForImageClassification(config),
                           list(IMAGES_DYNAMIC))


def hf_whisper():
    """Whisper: a convolutional front end over log-mel frames, the encoder's sinusoidal
    positions (a buffer PyTorch keeps fixed), a decoder fed the labels shifted right."""
    import transformers
    config = transformers.WhisperConfig(
        vocab_size=VOCAB, num_mel_bins=16, d_model=64, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
        decoder_ffn_dim=128, max_source_positions=16, max_target_positions=32, dropout=0.0,
        attention_dropout=0.0, activation_dropout=0.0, use_cache=False,
        decoder_start_token_id=1, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return HuggingFaceLoss(transformers.WhisperForConditionalGeneration(config),
                           ["input_features", "labels"])


def whisper_batch():
    g = generator()
    return collections.OrderedDict(input_features=torch.randn(BATCH, 16, 32, generator=g),
                                   labels=torch.randint(3, VOCAB, (BATCH, 8), generator=g))


WHISPER_DYNAMIC = {"input_features": {0: "batch"}, "labels": {0: "batch", 1: "seq"}}


def hf_gemma2():
    """Gemma2: logit soft-capping (tanh), alternating sliding-window and global attention, and
    a causal mask the exporter types float64 (torch.where(mask, finfo.min, x)), which puts each
    layer's scores through a float64 region cast back to float32."""
    import transformers
    config = transformers.Gemma2Config(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
        attention_dropout=0.0, use_cache=False, attn_implementation="eager", sliding_window=8)
    return HuggingFaceLoss(transformers.Gemma2ForCausalLM(config), list(TOKENS_DYNAMIC))


def hf_phi3():
    """Phi-3 (its mini's layout: as many key-value heads as heads): Q, K and V from one fused
    projection, and the gate and up projections from another, each cut by Slice into equal
    parts; tensor parallelism splits them by heads and columns as a Split's groups."""
    import transformers
    config = transformers.Phi3Config(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64,
        pad_token_id=None, attention_dropout=0.0, resid_pdrop=0.0, embd_pdrop=0.0,
        use_cache=False, attn_implementation="eager", tie_word_embeddings=False)
    return HuggingFaceLoss(transformers.Phi3ForCausalLM(config), list(TOKENS_DYNAMIC))


def hf_wav2vec2():
    """Wav2Vec2 for sequence classification: a convolutional feature encoder whose first
    layer's GroupNorm exports as InstanceNormalization, a weight-normed positional
    convolution, mean pooling over time."""
    import transformers
    import transformers.models.wav2vec2.modeling_wav2vec2 as wav2vec2
    # Its encoder asks whether FSDP manages it, which imports torch.distributed.fsdp: that
    # module does not load on Debian's torch 1.13 under Python 3.11. No FSDP here.
    wav2vec2.is_fsdp_managed_module = lambda module: False
    config = transformers.Wav2Vec2Config(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4, feat_extract_norm="group", hidden_dropout=0.0,
        attention_dropout=0.0, activation_dropout=0.0, feat_proj_dropout=0.0, final_dropout=0.0,
        layerdrop=0.0, mask_time_prob=0.0, num_labels=4, apply_spec_augment=False)
    return HuggingFaceLoss(transformers.Wav2Vec2ForSequenceClassification(config),
                           ["input_values", "labels"])


def audio_batch():
    g = generator()
    return collections.OrderedDict(input_values=torch.randn(BATCH, 400, generator=g),
                                   labels=torch.randint(0, 4, (BATCH,), generator=g))


AUDIO_DYNAMIC = {"input_values": {0: "batch", 1: "samples"}, "labels": {0: "batch"}}


def hf_mamba():
    """Mamba: its selective scan's step sizes through softplus (ONNX Softplus), a depthwise
    causal Conv1d, and the scan as PyTorch's sequential loop over the sequence (no fused
    kernels on a CPU), which the export unrolls."""
    import transformers
    config = transformers.MambaConfig(vocab_size=VOCAB, hidden_size=32, state_size=8,
                                      num_hidden_layers=2, expand=2, conv_kernel=4,
                                      use_cache=False)
    return HuggingFaceLoss(transformers.MambaForCausalLM(config), list(TOKENS_DYNAMIC))


class ClipTextClassifier(torch.nn.Module):
    """CLIP's text tower with its projection: the pooled embedding is the hidden state at each
    row's largest token id (ONNX ArgMax over the ids, then a gather), classified by a linear
    head."""

    def __init__(self):
        super().__init__()
        import transformers
        config = transformers.CLIPTextConfig(vocab_size=VOCAB, hidden_size=64,
                                             intermediate_size=128, num_hidden_layers=2,
                                             num_attention_heads=4, max_position_embeddings=64,
                                             projection_dim=32, attention_dropout=0.0)
        self.text = transformers.CLIPTextModelWithProjection(config)
        self.head = torch.nn.Linear(32, 10)

    def forward(self, input_ids, labels):
        embeds = self.text(input_ids=input_ids).text_embeds
        return torch.nn.functional.cross_entropy(self.head(embeds), labels)


def text_class_batch():
    g = generator()
    return collections.OrderedDict(input_ids=torch.randint(1, VOCAB, (BATCH, SEQ), generator=g),
                                   labels=torch.randint(0, 10, (BATCH,), generator=g))


TEXT_CLASS_DYNAMIC = {"input_ids": {0: "batch", 1: "seq"}, "labels": {0: "batch"}}


class ClipContrastive(torch.nn.Module):
    """CLIP with both towers and its own contrastive loss (return_loss=True): the logits pair
    every text of the batch with every image, cross-entropy along both axes."""

    def __init__(self):
        super().__init__()
        import transformers
        text = transformers.CLIPTextConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                                           num_hidden_layers=2, num_attention_heads=4,
                                           max_position_embeddings=32, attention_dropout=0.0)
        vision = transformers.CLIPVisionConfig(image_size=16, patch_size=8, num_channels=3,
                                               hidden_size=32, intermediate_size=64,
                                               num_hidden_layers=2, num_attention_heads=4,
                                               attention_dropout=0.0)
        config = transformers.CLIPConfig(text_config=text.to_dict(),
                                         vision_config=vision.to_dict(), projection_dim=16)
        self.clip = transformers.CLIPModel(config)

    def forward(self, input_ids, pixel_values):
        return self.clip(input_ids=input_ids, pixel_values=pixel_values, return_loss=True).loss


# Four pairs: the contrastive loss is checked on 2 and on 4 data-parallel ranks.
CLIP_BATCH = 4


def clip_batch():
    g = generator()
    return collections.OrderedDict(
        input_ids=torch.randint(1, VOCAB, (CLIP_BATCH, 8), generator=g),
        pixel_values=torch.randn(CLIP_BATCH, 3, 16, 16, generator=g))


CLIP_DYNAMIC = {"input_ids": {0: "batch", 1: "seq"}, "pixel_values": {0: "batch"}}


def hf_swin():
    """Swin: windowed attention over a 8x8 patch grid in windows of 3, so that its padding
    arithmetic (width % window_size, exported as ONNX Mod) pads the grid to 9x9, and shifted
    windows with their attention mask."""
    import transformers
    config = transformers.SwinConfig(image_size=32, patch_size=4, num_channels=3, embed_dim=16,
                                     depths=[1, 1], num_heads=[2, 2], window_size=3,
                                     num_labels=10, drop_path_rate=0.0, hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0)
    return HuggingFaceLoss(transformers.SwinForImageClassification(config),
                           list(IMAGES_DYNAMIC))


class ClassifierLoss(torch.nn.Module):
    """forward(pixel_values, labels) -> cross-entropy of an image classifier's logits."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, pixel_values, labels):
        return torch.nn.functional.cross_entropy(self.model(pixel_values), labels)


def resnet18():
    import torchvision
    return ClassifierLoss(torchvision.models.resnet18(num_classes=10))


def torchvision_vit():
    """torchvision's VisionTransformer (vit_b_16's code, small sizes): class token, learned
    positions, nn.MultiheadAttention inside its encoder blocks."""
    import torchvision
    return ClassifierLoss(torchvision.models.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128,
        num_classes=10))


def small_cnn():
    nn = torch.nn
    return ClassifierLoss(nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
        nn.MaxPool2d(3, stride=2, padding=1),
        nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=2, bias=False), nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.AvgPool2d(2, ceil_mode=True),
        nn.Conv2d(8, 16, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10)))


def causal_mask(n):
    return torch.nn.Transformer.generate_square_subsequent_mask(n)


class TorchEncoderLM(torch.nn.Module):
    """A decoder-only LM from nn.TransformerEncoder, batch-first, its causal float mask (-inf
    above the diagonal) a registered buffer."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.embed = nn.Embedding(VOCAB, 64)
        layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(64, VOCAB)
        self.register_buffer("mask", causal_mask(SEQ))

    def forward(self, input_ids, labels):
        h = self.encoder(self.embed(input_ids), mask=self.mask)
        logits = self.head(h)
        return torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1))


class TorchSeq2Seq(torch.nn.Module):
    """nn.Transformer translating src_ids to tgt_ids (labels: tgt shifted), with batch_first
    as given: False takes [seq, batch] inputs."""

    def __init__(self, batch_first):
        super().__init__()
        nn = torch.nn
        self.batch_first = batch_first
        self.src_embed = nn.Embedding(VOCAB, 64)
        self.tgt_embed = nn.Embedding(VOCAB, 64)
        self.transformer = nn.Transformer(64, 4, num_encoder_layers=2, num_decoder_layers=2,
                                          dim_feedforward=128, dropout=0.0,
                                          batch_first=batch_first)
        self.head = nn.Linear(64, VOCAB)
        self.register_buffer("tgt_mask", causal_mask(SEQ))

    def forward(self, src_ids, tgt_ids, labels):
        h = self.transformer(self.src_embed(src_ids), self.tgt_embed(tgt_ids),
                             tgt_mask=self.tgt_mask)
        logits = self.head(h)
        return torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1))


def seq2seq_batch(batch_first):
    def make():
        g = generator()
        shape = (BATCH, SEQ) if batch_first else (SEQ, BATCH)
        return collections.OrderedDict(src_ids=torch.randint(1, VOCAB, shape, generator=g),
                                       tgt_ids=torch.randint(1, VOCAB, shape, generator=g),
                                       labels=torch.randint(1, VOCAB, shape, generator=g))
    return make


def seq2seq_dynamic(batch_first):
    axes = {0: "batch", 1: "seq"} if batch_first else {0: "seq", 1: "batch"}
    return {name: axes for name in ("src_ids", "tgt_ids", "labels")}


class TorchAttentionBlock(torch.nn.Module):
    """A pre-norm causal self-attention block on nn.MultiheadAttention, sequence-first."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.embed = nn.Embedding(VOCAB, 64)
        self.norm = nn.LayerNorm(64)
        self.attention = nn.MultiheadAttention(64, 4, dropout=0.0)
        self.head = nn.Linear(64, VOCAB)
        self.register_buffer("mask", causal_mask(SEQ))

    def forward(self, input_ids, labels):
        x = self.embed(input_ids)
        h = self.norm(x)
        x = x + self.attention(h, h, h, attn_mask=self.mask, need_weights=False)[0]
        logits = self.head(x)
        return torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1))


def token_batch_seq_first():
    ids = torch.randint(1, VOCAB, (SEQ, BATCH), generator=generator())
    return collections.OrderedDict(input_ids=ids, labels=ids.clone())


TOKENS_SEQ_FIRST = {"input_ids": {0: "seq", 1: "batch"}, "labels": {0: "seq", 1: "batch"}}

MODELS = {
    "gpt2": Spec(hf_gpt2, token_batch, TOKENS_DYNAMIC),
    "llama": hf_decoder("LlamaConfig", "LlamaForCausalLM"),
    "mistral": hf_decoder("MistralConfig", "MistralForCausalLM", sliding_window=None),
    "qwen2": hf_decoder("Qwen2Config", "Qwen2ForCausalLM", sliding_window=None),
    # Its dynamic export traces repeat_interleave over a dynamic length as a Loop over
    # sequence ops, which the importer unrolls once the shapes are given.
    "gptj": Spec(hf_gptj, token_batch, TOKENS_DYNAMIC),
    "bert_mlm": Spec(hf_bert, token_batch, TOKENS_DYNAMIC,
                     padding_rows=("model.bert.embeddings.word_embeddings.weight=0",)),
    "roberta": Spec(hf_roberta, token_batch, TOKENS_DYNAMIC,
                    padding_rows=("model.roberta.embeddings.word_embeddings.weight=1",
                                  "model.roberta.embeddings.position_embeddings.weight=1")),
    "opt": Spec(hf_opt, token_batch, TOKENS_DYNAMIC,
                padding_rows=("model.model.decoder.embed_tokens.weight=1",)),
    "bloom": Spec(hf_bloom, token_batch, TOKENS_DYNAMIC),
    "bart": Spec(hf_seq2seq("bart"), token_batch, TOKENS_DYNAMIC,
                 freeze="model.final_logits_bias",
                 padding_rows=("model.model.shared.weight=1",)),
    # Its decoder starts every row with the pad id, whose embedding row PyTorch never trains
    # (padding_idx): the static export settles it with --padding-row, the recorded one knows.
    "pegasus": Spec(hf_seq2seq("pegasus"), token_batch, TOKENS_DYNAMIC,
                    freeze="model.final_logits_bias|model.model.(en|de)coder.embed_positions.weight",
                    padding_rows=("model.model.shared.weight=0",)),
    "t5": Spec(hf_seq2seq("t5"), token_batch, TOKENS_DYNAMIC),
    "vit": Spec(hf_vit, image_batch, IMAGES_DYNAMIC),
    "mamba": Spec(hf_mamba, token_batch, TOKENS_DYNAMIC),
    # lr 3e-4: at 1e-3 its two rows are learnt within 20 steps and the loss falls to 0.01, where
    # AdamW turns the float32 rounding of a split's reordered sums into steps that part the
    # losses by 1e-5 (dp=2,tp=2: 1.1e-5 with AdamW, 8e-7 with SGD).
    "clip_text": Spec(ClipTextClassifier, text_class_batch, TEXT_CLASS_DYNAMIC, lr=3e-4),
    # lr 1e-4: at 1e-3 the four pairs are told apart within 20 steps and the loss falls to 1e-4,
    # where float32 resolves it to a few parts in 1e4 only (log of a sum within 1e-4 of 1).
    "clip": Spec(ClipContrastive, clip_batch, CLIP_DYNAMIC, lr=1e-4,
                 refused={"mb2": NEEDS_WHOLE_BATCH},
                 extra_checks=(("dp4", ["--gpus", "4", "--strategy", "dp=4"]),)),
    "swin": Spec(hf_swin, image_batch, IMAGES_DYNAMIC),
    # Its static export has no record of the trained set: shardc's warning names the encoder's
    # sinusoidal positions, which PyTorch keeps fixed.
    # Its convolutional front end under oneDNN makes PyTorch's float32 runs differ from run to
    # run by 2e-4 (without oneDNN: identical, within 7e-7 of float64).
    "whisper": Spec(hf_whisper, whisper_batch, WHISPER_DYNAMIC,
                    freeze="model.model.encoder.embed_positions.weight", mkldnn=False),
    "gemma2": Spec(hf_gemma2, token_batch, TOKENS_DYNAMIC),
    "phi3": Spec(hf_phi3, token_batch, TOKENS_DYNAMIC),
    # oneDNN's convolutions of its feature encoder make PyTorch's float32 runs differ from run
    # to run (and reach NaN by step 9 at lr 1e-4); without oneDNN they are within 2e-6 of
    # float64.
    "wav2vec2": Spec(hf_wav2vec2, audio_batch, AUDIO_DYNAMIC, mkldnn=False),
    "torch_encoder": Spec(TorchEncoderLM, token_batch, TOKENS_DYNAMIC),
    "torch_transformer_seq_first": Spec(lambda: TorchSeq2Seq(False), seq2seq_batch(False),
                                        seq2seq_dynamic(False),
                                        same_network=("torch_transformer_batch_first",)),
    "torch_transformer_batch_first": Spec(lambda: TorchSeq2Seq(True), seq2seq_batch(True),
                                          seq2seq_dynamic(True),
                                          same_network=("torch_transformer_seq_first",)),
    "torch_mha": Spec(TorchAttentionBlock, token_batch_seq_first, TOKENS_SEQ_FIRST),
    "torchvision_vit": Spec(torchvision_vit, image_batch, IMAGES_DYNAMIC),
    "small_cnn": Spec(small_cnn, lambda: image_batch(16, batch=4), IMAGES_DYNAMIC),
    # 11M parameters and convolutions on 32x32 images: 10 steps keep its ten checks within
    # about a minute on 2 cores. Its training amplifies float32 rounding (7e-4 between
    # PyTorch's float32 and float64 runs), but on an AVX-512/AMX machine oneDNN's float32
    # convolutions happened to land within 1.5e-5 of float64, a floor that says nothing of
    # the noise every float32 run has (shardc's and PyTorch's own runs without oneDNN part
    # from it by 7e-4); without oneDNN the reference runs the same plain float32 algorithms on
    # every CPU and shardc follows it within 1e-5.
    "resnet18": Spec(resnet18, lambda: image_batch(32, batch=8), IMAGES_DYNAMIC, lr=1e-5,
                     steps=10, mkldnn=False),
}


def export_onnx(model, batch, path, style, dynamic):
    """Exports `model` (forward(*batch values) -> loss) to `path` in training mode: "static",
    plain torch.onnx.export with the shapes baked in, or "dynamic", shardc_export with
    `dynamic` as its dynamic_axes."""
    names, args = list(batch), tuple(batch.values())
    with torch.no_grad():
        if style == "static":
            torch.onnx.export(model, args, path, opset_version=17,
                              training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=False, input_names=names,
                              output_names=["loss"])
        else:
            shardc_export.export(model, args, path, input_names=names, output_names=["loss"],
                                 dynamic_axes=dynamic)


def worst_relative(a, b):
    return max(abs(x - y) / abs(y) for x, y in zip(a, b))


def buffer_names(module):
    """BatchNorm's running statistics (the float buffers PyTorch updates as it trains)."""
    return [n for n, b in module.named_buffers() if b.is_floating_point() and "running_" in n]


class Zoo:
    def __init__(self, args):
        self.args = args
        self.rows = []  # (model, style, check, worst relative difference or error, tolerance)
        self.plans = {}  # (model, style, check): what its plan says (plan_summary)
        self.ops = {}  # model -> Counter of the op types of its static export

    def module(self, name):
        torch.manual_seed(0)
        model = MODELS[name].build()
        model.train()
        return model

    def copy_of(self, name, model):
        """A fresh module of `name` holding `model`'s parameters and buffers (deepcopy fails on
        modules with hook-based weight norm, Wav2Vec2's positional convolution)."""
        fresh = self.module(name)
        fresh.load_state_dict(model.state_dict())
        return fresh

    def export(self, name, style):
        spec = MODELS[name]
        model, batch = self.module(name), spec.inputs()
        out = os.path.join(self.args.work, f"{name}_{style}")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(os.path.join(out, "data"))
        for input_name, tensor in batch.items():
            np.save(os.path.join(out, "data", e2e_util.npy_name(input_name)), tensor.numpy())
        path = os.path.join(out, "model.onnx")
        args = tuple(batch.values())
        # Exporting in training mode runs the model: plain torch.onnx.export moves BatchNorm's
        # running statistics (the file holds the moved ones); shardc_export puts them back.
        # The reference is the exported module, in the state the file holds.
        with torch.no_grad():
            loss = float(self.copy_of(name, model)(*args))
        export_onnx(model, batch, path, style, spec.dynamic)
        reference = model
        if style == "static":
            self.ops[name] = collections.Counter(
                n.op_type for n in onnx.load(path, load_external_data=False).graph.node)
        flags = []
        if style == "static" and spec.freeze:
            flags += ["--freeze", spec.freeze]
        if style == "static":
            for row in spec.padding_rows:
                flags += ["--padding-row", row]
        if style == "dynamic":
            for input_name, tensor in batch.items():
                flags += ["--input-shape",
                          f"{input_name}={'x'.join(str(d) for d in tensor.shape)}"]
        return reference, batch, path, loss, flags

    def compile(self, path, out, shape_flags, *flags):
        res = e2e_util.run_tool([self.args.shardc, path, "-o", out, *shape_flags, *flags,
                                 *self.args.shardc_flag],
                                self.args.timeout)
        return None if res.ok else f"shardc {' '.join(flags)}: {res.describe()}"

    def train(self, bundle, data, metrics, lr, steps, *flags):
        res = e2e_util.run_tool([self.args.shardrun, bundle, "--steps", str(steps), "--data",
                                 data, "--lr", str(lr), "--metrics", metrics, *flags],
                                self.args.timeout)
        if not res.ok:
            return f"shardrun {bundle}: {res.describe()}"
        return [json.loads(line)["loss"] for line in open(metrics)]

    def torch_run(self, name, model, batch, lr, steps, dtype):
        """`steps` AdamW steps of a copy of `model` (a module of `name`) in `dtype`: the losses
        and the final buffers."""
        model = self.copy_of(name, model).to(dtype)
        args = [t.to(dtype) if t.is_floating_point() else t for t in batch.values()]
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
        losses = []
        with torch.backends.mkldnn.flags(enabled=MODELS[name].mkldnn):
            for _ in range(steps):
                optimizer.zero_grad()
                loss = model(*args)
                loss.backward()
                optimizer.step()
                losses.append(float(loss))
        buffers = {n: b.detach().double().numpy() for n, b in model.named_buffers()}
        return losses, buffers

    def run(self, name, style):
        """All checks of one export; returns the case's verdict."""
        spec = MODELS[name]
        model, batch, path, torch_loss, shape_flags = self.export(name, style)
        out = os.path.dirname(path)
        data = os.path.join(out, "data")
        errors, details = [], []

        def check(check_name, result, tolerance=RTOL):
            """`result`: the worst relative difference, or an error string."""
            self.rows.append((name, style, check_name, result, tolerance))
            if isinstance(result, str):
                errors.append(f"{check_name}: {result}")
            else:
                details.append(f"{check_name} {result:.2g}")
                if result > tolerance:
                    errors.append(f"{check_name}: relative difference {result:.3g} > "
                                  f"{tolerance:.3g}")

        forward = os.path.join(out, "forward.shard")
        if style == "dynamic" and spec.dynamic_refused:
            res = e2e_util.run_tool([self.args.shardc, path, "-o", forward, *shape_flags,
                                     *self.args.shardc_flag], self.args.timeout)
            # The message without this machine's directories (it goes into docs/model-zoo.md).
            lines = res.stderr.replace(out + os.sep, "").strip().splitlines()
            refused = (res.returncode == 1 and len(lines) == 1 and
                       spec.dynamic_refused in lines[0])
            self.rows.append((name, style, "import", "refused: " + lines[0] if refused
                              else res.describe(), 0.0))
            return (None if refused else f"expected a one-line refusal naming "
                    f"'{spec.dynamic_refused}': {res.describe()}"), \
                f"refused in one line: {lines[0] if lines else ''}"
        err = self.compile(path, forward, shape_flags, "--mode", "forward")
        if err is None:
            res = e2e_util.run_tool([self.args.shardrun, forward, "--data", data, "--outputs",
                                     os.path.join(out, "outputs")], self.args.timeout)
            if res.ok:
                got = float(np.load(os.path.join(out, "outputs", "loss.npy")))
                check("forward", abs(got - torch_loss) / abs(torch_loss))
            else:
                check("forward", f"shardrun: {res.describe()}")
        else:
            check("forward", err)

        reference, torch_buffers = self.torch_run(name, model, batch, spec.lr, spec.steps,
                                                  torch.float32)
        try:
            reference64, buffers64 = self.torch_run(name, model, batch, spec.lr, spec.steps,
                                                    torch.float64)
            floor = worst_relative(reference, reference64)
        except RuntimeError as e:
            # Some models do not run in float64 (BART's mask fill converts float64's minimum
            # to float32); their tolerance stays 1e-5.
            buffers64, floor = None, 0.0
            details.append(f"no float64 reference ({str(e).splitlines()[0]})")
        for twin in spec.same_network:
            twin_model, twin_batch = self.module(twin), MODELS[twin].inputs()
            twin_gap = worst_relative(
                self.torch_run(twin, twin_model, twin_batch, spec.lr, spec.steps,
                               torch.float32)[0],
                self.torch_run(twin, twin_model, twin_batch, spec.lr, spec.steps,
                               torch.float64)[0])
            if twin_gap > floor:
                floor = twin_gap
                details.append(f"the same network as {twin}")
        tolerance = max(RTOL, 2 * floor)
        if tolerance > RTOL:
            details.append(f"tolerance {tolerance:.2g} (PyTorch float32 vs float64: {floor:.2g})")
        one = os.path.join(out, "train.shard")
        exported = os.path.join(out, "trained.onnx")
        err = self.compile(path, one, shape_flags)
        single = err or self.train(one, data, os.path.join(out, "train.jsonl"), spec.lr,
                                   spec.steps, "--export-onnx", exported)
        if isinstance(single, str):
            check("train", single)
            return "; ".join(errors)
        check("train", worst_relative(single, reference), tolerance)
        plan = json.load(open(os.path.join(one, "plan.json")))
        trained = sorted(p["name"] for p in plan["parameters"] if p.get("trained"))
        expected = sorted(n for n, p in model.named_parameters() if p.requires_grad)
        if trained != expected:
            errors.append(f"trained set differs from PyTorch's: only shardc "
                          f"{sorted(set(trained) - set(expected))}, only PyTorch "
                          f"{sorted(set(expected) - set(trained))}")
        stats = buffer_names(model)
        if stats:
            ours = {t.name: numpy_helper.to_array(t).astype(np.float64)
                    for t in onnx.load(exported).graph.initializer}
            missing = [n for n in stats if n not in ours]
            if missing:
                check("running_stats", f"not in the exported model: {missing[:3]}")
            else:
                def gap(a, b):
                    return max(float(np.abs(a[n] - b[n]).max() / np.abs(b[n]).max())
                               for n in stats)
                stat_tolerance = (max(RTOL, 2 * gap(torch_buffers, buffers64))
                                  if buffers64 is not None else RTOL)
                check("running_stats", gap(ours, torch_buffers), stat_tolerance)

        def refused(check_name, err):
            """For a check this model must refuse (Spec.refused): records shardc's refusal when
            it is one clear line naming why, a failure otherwise."""
            expected = spec.refused[check_name]
            if (err is not None and len(err.splitlines()) == 1 and "exited 1" in err and
                    expected in err):
                why = err.split(".onnx: ", 1)[-1]
                self.rows.append((name, style, check_name, "refused: " + why, tolerance))
                details.append(f"{check_name} refused")
            else:
                check(check_name, f"expected a one-line refusal naming '{expected}', got: "
                                  f"{err or 'a bundle'}")

        def run_check(check_name, flags, run_flags=()):
            bundle = os.path.join(out, f"{check_name}.shard")
            err = self.compile(path, bundle, shape_flags, *flags)
            if err is None:
                self.plans[(name, style, check_name)] = plan_summary(bundle)
            return err or self.train(bundle, data, os.path.join(out, f"{check_name}.jsonl"),
                                     spec.lr, spec.steps, *run_flags)

        for check_name, flags in (
                ("dp2_zero3", ["--gpus", "2", "--strategy", "zero3"]),
                ("tp2", ["--gpus", "2", "--strategy", "tp=2"]),
                ("dp2_tp2", ["--gpus", "4", "--strategy", "dp=2,tp=2"]),
                ("mb2", ["--micro-batches", "2"]),
                *spec.extra_checks,
                ("remat_full", ["--remat", "full"]),
                ("remat_selective", ["--remat", "selective"])):
            if check_name in spec.refused:
                # Expected: one clear line, exit 1, naming why.
                refused(check_name, self.compile(path, os.path.join(out, f"{check_name}.shard"),
                                                 shape_flags, *flags))
                continue
            sharded = run_check(check_name, flags)
            if isinstance(sharded, str):
                check(check_name, sharded)
                continue
            # Recomputation runs the same kernels on the same inputs: bit-identical losses.
            check(check_name, worst_relative(sharded, single),
                  0.0 if check_name.startswith("remat") else tolerance)

        # --precision bf16: the 16-bit storage computes the same bits as f32 copies of the
        # rounded values. ZeRO-3 on 2 ranks, each rounding the gradients of its half of the
        # batch (as DDP/FSDP do), computes the math of one rank running the batch as 2
        # microbatches (each half's gradients rounded, then added in f32): they must agree to
        # float32 noise, the model's tolerance. Both run on the static export (the casts do
        # not depend on the export style; the CI run's time does).
        if style == "static":
            # (Exact products: native bf16 ones, where the CPU has them, sum in oneDNN's order,
            # which the f32 copies' sgemm does not.)
            bf16 = run_check("bf16", ["--precision", "bf16"], ["--bf16-products", "exact"])
            copies = run_check("bf16_f32copies",
                               ["--precision", "bf16", "--half-storage", "off"])
            check("bf16_storage", next((r for r in (bf16, copies) if isinstance(r, str)), None)
                  or worst_relative(bf16, copies), 0.0)
            flags = ["--precision", "bf16", "--gpus", "2", "--strategy", "zero3"]
            if "mb2" in spec.refused:
                # Its reference, one rank running the batch as 2 bf16 microbatches, is refused.
                self.rows.append((name, style, "bf16_dp2_zero3", "skipped: its reference (2 "
                                  "microbatches) is refused", tolerance))
                details.append("bf16_dp2_zero3 skipped")
            elif tolerance > RTOL:
                # A training that turns float32 rounding noise into visible differences turns
                # a bf16 rounding that one float32 bit flips into larger ones: no bound on the
                # two runs' difference would mean anything.
                self.rows.append((name, style, "bf16_dp2_zero3",
                                  "skipped: the training amplifies rounding (float32 tolerance "
                                  f"{tolerance:.2g})", tolerance))
                details.append("bf16_dp2_zero3 skipped")
            else:
                halves = run_check("bf16_mb2", ["--precision", "bf16", "--micro-batches", "2"])
                sharded = run_check("bf16_dp2_zero3", flags)
                failed = next((r for r in (halves, sharded) if isinstance(r, str)), None)
                check("bf16_dp2_zero3", failed or worst_relative(sharded, halves), tolerance)
        return ("; ".join(errors) or None), ", ".join(details)

    def write_table(self, path):
        lines = ["| model | style | check | worst relative difference | tolerance | plan |",
                 "|---|---|---|---|---|---|"]
        for name, style, check, result, tolerance in self.rows:
            if not isinstance(result, str):
                cell = f"{result:.3g}"
            elif result.startswith("refused: ") or result.startswith("skipped: "):
                cell = result  # an expected refusal (see Spec.refused), or a skip
            else:
                cell = f"FAILED: {result}"
            plan = self.plans.get((name, style, check), "")
            lines.append(f"| {name} | {style} | {check} | {cell} | {tolerance:.2g} | {plan} |")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")


    def write_ops_table(self, path):
        """Op x model: how many nodes of the op each model's static export has, every op
        marked supported or not."""
        models = [m for m in MODELS if m in self.ops]
        ops = sorted(set().union(*self.ops.values())) if models else []
        lines = ["| op | shardc | " + " | ".join(models) + " |",
                 "|---|---|" + "---|" * len(models)]
        for op in ops:
            supported = "yes" if op in e2e_util.SUPPORTED_OPS else "**no**"
            counts = [str(self.ops[m][op]) if self.ops[m][op] else "" for m in models]
            lines.append(f"| {op} | {supported} | " + " | ".join(counts) + " |")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")


def main():
    p = e2e_util.argument_parser(__doc__, timeout=300)
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--table")
    p.add_argument("--ops-table")
    p.add_argument("--shardc-flag", action="append", default=[],
                   help="one more flag for every shardc call, e.g. --shardc-flag=--fuse-attention "
                        "--shardc-flag=on (repeatable)")
    args = e2e_util.parse_args(p)
    import torchvision
    import transformers
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
          f"torchvision {torchvision.__version__}", flush=True)
    zoo = Zoo(args)
    cases = [(f"{name}_{style}", lambda n=name, s=style: zoo.run(n, s))
             for name in args.models.split(",") for style in ("static", "dynamic")]
    try:
        e2e_util.run_cases(cases)
    finally:
        if args.table:
            zoo.write_table(args.table)
        if args.ops_table:
            zoo.write_ops_table(args.ops_table)


if __name__ == "__main__":
    main()
