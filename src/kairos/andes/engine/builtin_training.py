"""The built-in model trained on text that ships with Python, once, then cached.

No weights may be downloaded, yet a served model that answers in random bytes looks broken. The
language reference in `pydoc_data.topics` (465 KB of English, part of every CPython; about
370 KB of prose once tables, grammar rules and code are left out) is enough for a small
byte-level Llama (`BUILTIN_TRAINED_MODEL`, this engine's own
`LlamaForCausalLM` and `ByteTokenizer`) to learn words and phrases in a couple of minutes on
two CPU cores, so the engine serves it unchanged.

Deterministic from the recipe: `torch.manual_seed`, windows drawn from a seeded generator,
deterministic algorithms, and one intra-op thread. The thread is also the speed choice: on two
cores shared with other processes (load 10), two OpenMP threads trained this model 14 times
slower than one (190 against 2,700 bytes a second: each waits for the other at every small
product).

Cached under `cache_root()/builtin/<key>/` as a Hugging Face-layout checkpoint (safetensors,
never pickle) plus `training.json` (time, final loss, size), where `key` hashes the recipe,
the training text and the torch version: a changed recipe trains afresh, a second start loads
in well under a second.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, PositiveFloat, PositiveInt

from kairos.andes.engine.attention import AttentionBatch
from kairos.andes.engine.config import BUILTIN_TRAINED_MODEL, ModelConfig
from kairos.andes.engine.model import LlamaForCausalLM
from kairos.andes.engine.weights import load_checkpoint, random_model, save_checkpoint

TRAINING_FILE = "training.json"
_ALNUM = re.compile(r"[A-Za-z0-9]")
# table rows and rules; doctest lines; grammar rules; lines of code (a compound statement's
# header, a simple statement, or a line ending as code does)
_NOT_PROSE = re.compile(
    r"^[|+]|^(>>>|\.\.\.)|::=|[=(\[{]$"
    r"|^(if|elif|else|for|while|with|try|except|finally|def|class|async)\b.*:$"
    r"|^(import \w+$|from \w+ import|return\b|raise \w+\(|print\()"
)


class TrainingRecipe(BaseModel):
    """Everything that decides the trained weights (with the text and the torch version)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: ModelConfig = BUILTIN_TRAINED_MODEL
    steps: PositiveInt = 700
    seq_len: PositiveInt = 256  # bytes per training window
    batch: PositiveInt = 4  # windows per step
    lr: PositiveFloat = 3e-3  # peak; linear warm-up, then cosine decay to a tenth
    warmup_steps: int = 30
    seed: int = 0


BUILTIN_RECIPE = TrainingRecipe()


class TrainingReport(BaseModel):
    """What `training.json` beside the cached weights says."""

    model_config = ConfigDict(extra="forbid")

    key: str
    recipe: TrainingRecipe
    text_sha256: str
    text_bytes: int
    torch_version: str
    parameters: int
    weights_bytes: int
    train_s: float  # wall clock
    train_cpu_s: float  # this process's CPU time: the wall clock less other processes' share
    tokens_seen: int
    first_loss: float  # mean cross-entropy (nats per byte) of the first step
    final_loss: float  # mean of the last tenth of the steps


@cache
def training_text() -> bytes:
    """The language reference's topics, in name order, as UTF-8 bytes, made prose: each
    line's spaces collapsed to one and indentation dropped; table rows, rules, grammar rules
    and lines of code left out (`_NOT_PROSE`); and the double quotes that mark code words
    removed. A model this small then spends its few minutes on English words: trained on the
    text as is, its greedy answers were runs of spaces, then runs of "| | |", then of quotes."""
    from pydoc_data.topics import topics

    text = "\n\n".join(topics[name] for name in sorted(topics))
    lines = (" ".join(line.replace('"', "").split()) for line in text.splitlines())
    prose = (
        line for line in lines if not line or (_ALNUM.search(line) and not _NOT_PROSE.search(line))
    )
    return re.sub(r"\n{3,}", "\n\n", "\n".join(prose)).encode("utf-8")


def cache_root() -> Path:
    """`$KAIROS_CACHE_DIR`, else `$XDG_CACHE_HOME/kairos`, else `~/.cache/kairos`."""
    if own := os.environ.get("KAIROS_CACHE_DIR"):
        return Path(own)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "kairos"


def recipe_key(recipe: TrainingRecipe = BUILTIN_RECIPE) -> str:
    """A hash of what the weights depend on: the recipe, the text and the torch version."""
    ingredients = {
        "recipe": recipe.model_dump(mode="json"),
        "text": hashlib.sha256(training_text()).hexdigest(),
        "torch": torch.__version__,
    }
    blob = json.dumps(ingredients, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def cache_entry(recipe: TrainingRecipe = BUILTIN_RECIPE, root: Path | None = None) -> Path:
    return (root or cache_root()) / "builtin" / recipe_key(recipe)


def read_report(entry: Path) -> TrainingReport | None:
    """The cached entry's report, or None when nothing complete is cached there."""
    path = entry / TRAINING_FILE
    if not path.is_file() or not (entry / "model.safetensors").is_file():
        return None
    return TrainingReport.model_validate_json(path.read_text())


def cached_entry(
    recipe: TrainingRecipe = BUILTIN_RECIPE, root: Path | None = None, show_progress: bool = True
) -> Path:
    """The recipe's cache entry, trained into the cache now if it is not there yet."""
    entry = cache_entry(recipe, root)
    if read_report(entry) is None:
        train_into_cache(recipe, root, show_progress)
    return entry


def trained_model(
    recipe: TrainingRecipe = BUILTIN_RECIPE, root: Path | None = None, show_progress: bool = True
) -> LlamaForCausalLM:
    """The built-in trained model: loaded from the cache, else trained now and cached."""
    return load_checkpoint(cached_entry(recipe, root, show_progress))


def train_into_cache(
    recipe: TrainingRecipe = BUILTIN_RECIPE, root: Path | None = None, show_progress: bool = True
) -> TrainingReport:
    """Train and write the cache entry (replacing any), atomically: a run killed midway
    leaves no entry that looks complete."""
    from kairos.experiments.progress import note

    entry = cache_entry(recipe, root)
    if show_progress:
        note(f"training the built-in model once (about two minutes); it is cached in {entry}")
    model, report = train(recipe, show_progress)
    entry.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{entry.name}-", dir=entry.parent))
    try:
        save_checkpoint(model, recipe.model, staging)
        report.weights_bytes = (staging / "model.safetensors").stat().st_size
        (staging / TRAINING_FILE).write_text(report.model_dump_json(indent=2) + "\n")
        shutil.rmtree(entry, ignore_errors=True)
        staging.rename(entry)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return report


@contextlib.contextmanager
def _reproducible(seed: int) -> Iterator[None]:
    """One intra-op thread and deterministic kernels while training; both restored after."""
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(seed)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(deterministic)
        torch.set_num_threads(threads)


def _lr(recipe: TrainingRecipe, step: int) -> float:
    if step < recipe.warmup_steps:
        return recipe.lr * (step + 1) / recipe.warmup_steps
    done = (step - recipe.warmup_steps) / max(1, recipe.steps - recipe.warmup_steps)
    return recipe.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * done)))


def windows_loss(model: LlamaForCausalLM, windows: torch.Tensor) -> torch.Tensor:
    """Next-byte cross-entropy over equal windows `[B, n + 1]`, through the engine's own dense
    forward: one pass for all of them (each attends only to itself), so every product is one
    GEMM over B * n rows; on a model this small, a pass per window costs its ops' overhead B
    times."""
    b, n = windows.shape[0], windows.shape[1] - 1
    batch = AttentionBatch.dense(n, windows.device, sequences=b)
    batch.last_index = torch.arange(b * n)
    hidden = model.hidden(windows[:, :-1].reshape(-1), torch.arange(n).repeat(b), batch)
    return F.cross_entropy(model.logits(hidden), windows[:, 1:].reshape(-1))


def train(
    recipe: TrainingRecipe = BUILTIN_RECIPE, show_progress: bool = True
) -> tuple[LlamaForCausalLM, TrainingReport]:
    """AdamW on windows of the text drawn by a generator seeded from the recipe."""
    from kairos.experiments.progress import progress

    text = training_text()
    data = torch.frombuffer(bytearray(text), dtype=torch.uint8).long()
    losses: list[float] = []
    with _reproducible(recipe.seed):
        model = random_model(recipe.model, seed=recipe.seed).train()
        opt = torch.optim.AdamW(model.parameters(), lr=recipe.lr, weight_decay=0.01)
        order = torch.Generator().manual_seed(recipe.seed)
        start, cpu_start = time.monotonic(), time.process_time()
        with progress("training the built-in model", recipe.steps, show_progress) as advance:
            for step in range(recipe.steps):
                starts = torch.randint(
                    0, len(data) - recipe.seq_len - 1, (recipe.batch,), generator=order
                )
                windows = data[starts[:, None] + torch.arange(recipe.seq_len + 1)]
                loss = windows_loss(model, windows)
                for group in opt.param_groups:
                    group["lr"] = _lr(recipe, step)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                losses.append(loss.item())
                advance(1)
        train_s, cpu_s = time.monotonic() - start, time.process_time() - cpu_start
    tail = losses[-max(1, len(losses) // 10) :]
    report = TrainingReport(
        key=recipe_key(recipe),
        recipe=recipe,
        text_sha256=hashlib.sha256(text).hexdigest(),
        text_bytes=len(text),
        torch_version=torch.__version__,
        parameters=sum(p.numel() for p in model.parameters()),
        weights_bytes=0,  # known once saved
        train_s=round(train_s, 2),
        train_cpu_s=round(cpu_s, 2),
        tokens_seen=recipe.steps * recipe.batch * recipe.seq_len,
        first_loss=round(losses[0], 4),
        final_loss=round(sum(tail) / len(tail), 4),
    )
    return model.eval(), report


def describe(report: TrainingReport, entry: Path) -> dict[str, Any]:
    """The numbers a reader wants (`kairos andes train-builtin`), with the cached start
    measured now: the seconds to load the entry, as `kairos serve` does."""
    start = time.perf_counter()
    load_checkpoint(entry)
    load_s = time.perf_counter() - start
    return {
        "entry": str(entry),
        "parameters": report.parameters,
        "weights_bytes": report.weights_bytes,
        "train_s": report.train_s,
        "train_cpu_s": report.train_cpu_s,
        "tokens_seen": report.tokens_seen,
        "first_loss": report.first_loss,
        "final_loss": report.final_loss,
        "load_s": round(load_s, 4),
        "torch_version": report.torch_version,
    }
