"""The built-in model's training and cache, on a recipe small enough to train in a second:
deterministic from its seed, cached as safetensors under a key of its recipe, loaded (not
trained again) on the second start, and served by the engine unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kairos.andes.engine import builtin_training as bt
from kairos.andes.engine.api import QoESpec, SamplingParams
from kairos.andes.engine.attention import AttentionBatch
from kairos.andes.engine.config import BUILTIN_NAME, EngineConfig, ModelConfig
from kairos.andes.engine.engine import LLMEngine
from kairos.andes.serve_cli import served_model

SMALL = bt.TrainingRecipe(
    model=ModelConfig(
        vocab_size=259,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=1,
        num_key_value_heads=1,
        head_dim=32,
        bos_token_id=256,
        eos_token_id=257,
    ),
    steps=30,
    seq_len=32,
    batch=2,
    warmup_steps=3,
)


def weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v for k, v in model.state_dict().items() if not k.startswith("rope.")}


def same(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    wa, wb = weights(a), weights(b)
    return wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


def test_training_is_deterministic_from_its_seed_and_lowers_the_loss() -> None:
    threads = torch.get_num_threads()
    first, report = bt.train(SMALL, show_progress=False)
    again, _ = bt.train(SMALL, show_progress=False)
    other, _ = bt.train(SMALL.model_copy(update={"seed": 1}), show_progress=False)
    assert same(first, again)
    assert not same(first, other)  # the guard tells two seeds apart
    assert report.final_loss < report.first_loss - 0.5
    assert report.tokens_seen == 30 * 2 * 32
    # training runs on one thread with deterministic kernels, and puts both back
    assert torch.get_num_threads() == threads and not torch.are_deterministic_algorithms_enabled()


def test_windows_trained_in_one_pass_each_see_only_themselves() -> None:
    """One pass over several windows is the mean of a pass per window: each restarts its
    positions and attends to none of the others (a single causal span over all of them, the
    mutant, gives the later windows context they would not have)."""
    model = bt.random_model(SMALL.model, seed=0)
    windows = torch.randint(0, 256, (3, 17), generator=torch.Generator().manual_seed(0))
    alone = torch.stack([bt.windows_loss(model, w[None]) for w in windows]).mean()
    assert torch.allclose(bt.windows_loss(model, windows), alone, rtol=1e-5, atol=0)
    tokens, n = windows[:, :-1].reshape(-1), 16
    spanned = AttentionBatch.dense(3 * n, tokens.device)
    spanned.last_index = torch.arange(3 * n)
    hidden = model.hidden(tokens, torch.arange(n).repeat(3), spanned)
    mutant = torch.nn.functional.cross_entropy(model.logits(hidden), windows[:, 1:].reshape(-1))
    assert not torch.allclose(mutant, alone, rtol=1e-5, atol=0)


def test_the_training_text_is_the_prose_of_pythons_own_reference() -> None:
    text = bt.training_text().decode("utf-8")
    assert len(text) > 300_000
    assert "Assert statements are a convenient way to insert debugging assertions" in text
    assert "  " not in text and '"' not in text  # spaces collapsed, code quotes dropped
    lines = text.splitlines()
    assert not [line for line in lines if line.startswith((">>>", "|", "+"))]  # code, tables
    assert not [line for line in lines if "::=" in line]  # grammar rules


def test_the_cache_key_covers_recipe_text_and_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    key = bt.recipe_key(SMALL)
    assert bt.recipe_key(SMALL.model_copy()) == key
    for change in ({"steps": 31}, {"seed": 1}, {"lr": 1e-3}, {"seq_len": 33}):
        assert bt.recipe_key(SMALL.model_copy(update=change)) != key, change
    assert bt.recipe_key(bt.BUILTIN_RECIPE) != key
    monkeypatch.setattr(torch, "__version__", "0.0.0")
    assert bt.recipe_key(SMALL) != key


def test_the_cache_lives_in_the_users_cache_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("KAIROS_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert bt.cache_root() == Path.home() / ".cache" / "kairos"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert bt.cache_root() == tmp_path / "xdg" / "kairos"
    monkeypatch.setenv("KAIROS_CACHE_DIR", str(tmp_path / "own"))
    assert bt.cache_entry(SMALL) == tmp_path / "own" / "builtin" / bt.recipe_key(SMALL)


def test_a_second_start_loads_the_cached_safetensors_without_training(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    trained = bt.trained_model(SMALL, root=tmp_path, show_progress=False)
    entry = bt.cache_entry(SMALL, tmp_path)
    assert sorted(p.name for p in entry.parent.iterdir()) == [entry.name]  # no staging left
    assert sorted(p.name for p in entry.iterdir()) == [
        "config.json",
        "model.safetensors",
        bt.TRAINING_FILE,
    ]
    report = bt.read_report(entry)
    assert report is not None and report.key == entry.name
    assert report.weights_bytes == (entry / "model.safetensors").stat().st_size

    def no_training(*args: object, **kwargs: object) -> None:
        raise AssertionError("trained again although cached")

    monkeypatch.setattr(bt, "train", no_training)
    assert same(bt.trained_model(SMALL, root=tmp_path), trained)
    (entry / "model.safetensors").unlink()  # an incomplete entry is not a cached model
    with pytest.raises(AssertionError, match="trained again"):
        bt.trained_model(SMALL, root=tmp_path)


def test_the_engine_serves_the_trained_model_by_the_builtin_name(tmp_path: Path) -> None:
    bt.train_into_cache(SMALL, root=tmp_path, show_progress=False)
    entry = bt.cache_entry(SMALL, tmp_path)
    engine = LLMEngine(EngineConfig(model_name=BUILTIN_NAME), **served_model(entry))
    assert engine.model_name == BUILTIN_NAME
    assert engine.model.config == SMALL.model
    qoe = QoESpec(ttft_s=1.0, tokens_per_s=5.0)
    engine.add_request(
        "a", engine.tokenizer.encode("The "), SamplingParams(5, ignore_eos=True), qoe
    )
    events = []
    while engine.has_unfinished:
        events += engine.step()
    assert events[-1].completion_tokens == 5
    assert LLMEngine(EngineConfig()).model_name == "kairos-tiny-llama-random"
