"""Hugging Face on axon: the recipe docs/huggingface.md gives, and the limits it records.

transformers and accelerate are optional; scripts/setup.sh installs them, so CI runs these. Accelerate reads
ACCELERATE_TORCH_DEVICE once per process (its state is a singleton), so training runs in fresh interpreters."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import run_python

transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install transformers)")
pytest.importorskip("accelerate", reason="accelerate is not installed (pip install accelerate)")

_TRAIN = """
    import json, os, torch
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
    torch.manual_seed(0)
    config = GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=32,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(config)
    generator = torch.Generator().manual_seed(1)
    data = [{{"input_ids": t, "labels": t}} for t in torch.randint(0, 64, (32, 16), generator=generator)]
    args = TrainingArguments(output_dir=os.environ["OUT"], per_device_train_batch_size=8, max_steps=4,
                             logging_steps=1, report_to=[], save_strategy="no", learning_rate=1e-3,
                             disable_tqdm=True, {extra})
    trainer = Trainer(model=model, args=args, train_dataset=data)
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    print("RESULT", json.dumps({{"device": str(trainer.args.device),
                                "parameters": str(next(model.parameters()).device), "losses": losses}}))
"""


def _train(tmp_path, device: str | None, extra: str = "") -> dict:
    env = {"OUT": str(tmp_path)}
    if device is not None:
        env["ACCELERATE_TORCH_DEVICE"] = device
    result = run_python(_TRAIN.format(extra=extra), env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def test_trainer_with_accelerate_torch_device_trains_on_axon_with_the_cpus_losses(tmp_path):
    axon = _train(tmp_path, "axon")
    assert axon["device"] == "axon" and axon["parameters"] == "axon:0"
    cpu = _train(tmp_path, None)
    assert cpu["device"] == "cpu"  # without the variable, Trainer picks the CPU (docs/huggingface.md)
    torch.testing.assert_close(axon["losses"], cpu["losses"], rtol=1e-4, atol=1e-5)


def test_trainer_default_torch_compile_runs_on_axon(tmp_path):
    result = _train(tmp_path, "axon", "torch_compile=True")
    assert result["parameters"] == "axon:0" and len(result["losses"]) == 4


def test_trainer_bf16_is_refused_by_transformers_as_documented(tmp_path):
    env = {"OUT": str(tmp_path), "ACCELERATE_TORCH_DEVICE": "axon"}
    result = run_python(_TRAIN.format(extra="bf16=True"), env, timeout=300)
    assert result.returncode != 0 and "doesn't support bf16/gpu" in result.stderr


def test_accelerate_bf16_autocasts_on_axon():
    result = run_python("""
        import torch
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="bf16")
        inner = torch.nn.Linear(8, 8)
        seen = []
        inner.register_forward_hook(lambda module, args, out: seen.append((out.device.type, str(out.dtype))))
        model = accelerator.prepare(torch.nn.Sequential(inner))
        accelerator.backward(model(torch.randn(4, 8, device=accelerator.device)).sum())
        print("SEEN", seen, str(inner.weight.grad.device))
    """, {"ACCELERATE_TORCH_DEVICE": "axon"}, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "SEEN [('axon', 'torch.bfloat16')] axon:0" in result.stdout


def _tiny_checkpoint(directory):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    word_level = Tokenizer(models.WordLevel({f"w{i}": i for i in range(64)}, unk_token="w0"))
    word_level.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=word_level, unk_token="w0", pad_token="w0", eos_token="w1")
    torch.manual_seed(0)
    GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=64)).save_pretrained(
        directory)
    tokenizer.save_pretrained(directory)


def test_from_pretrained_device_map_and_pipeline_device(tmp_path):
    from transformers import AutoModelForCausalLM, pipeline

    _tiny_checkpoint(tmp_path)
    model = AutoModelForCausalLM.from_pretrained(tmp_path, device_map="axon")
    assert {p.device for p in model.parameters()} == {torch.device("axon", 0)}
    on_axon = pipeline("text-generation", model=str(tmp_path), device="axon")
    on_cpu = pipeline("text-generation", model=str(tmp_path), device="cpu")
    assert on_axon.device.type == "axon" and next(on_axon.model.parameters()).device.type == "axon"
    prompt = "w3 w4 w5 w6"
    assert on_axon(prompt, max_new_tokens=8, do_sample=False) == on_cpu(prompt, max_new_tokens=8, do_sample=False)
