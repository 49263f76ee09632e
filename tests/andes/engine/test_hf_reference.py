"""Our decoder against transformers' own: checkpoints saved by `save_pretrained`, read in both
config dialects, must give the reference's logits within float32 tolerance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypedDict

import pytest
import torch
import transformers

from kairos.andes.engine.config import ModelConfig
from kairos.andes.engine.model import LlamaForCausalLM
from kairos.andes.engine.weights import load_checkpoint

from .hf_reference import ARCHS, ROPES, VOCAB, as_transformers4, hf_checkpoint, reference_logits


class Tolerance(TypedDict):
    """`assert_close`'s tolerances, typed so `**TOL` checks against its keywords."""

    atol: float
    rtol: float


TOL: Tolerance = {"atol": 1e-4, "rtol": 1e-4}  # float32: observed differences are about 1e-6
SEQ = 32  # positions 0..31: past llama3's and yarn's original lengths


def prompt(seed: int = 1) -> torch.Tensor:
    return torch.randint(0, VOCAB, (SEQ,), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("dialect", ["transformers5", "transformers4"])
@pytest.mark.parametrize("rope", sorted(ROPES))
@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_logits_match_transformers(tmp_path: Path, arch: str, rope: str, dialect: str) -> None:
    reference = hf_checkpoint(tmp_path, arch, ROPES[rope])
    if dialect == "transformers4":
        raw = as_transformers4(tmp_path)
        assert "rope_parameters" not in raw
        # the rewritten file means the same thing to the reference
        reread = transformers.AutoConfig.from_pretrained(tmp_path)
        assert reread.rope_parameters == reference.config.rope_parameters
    ours = load_checkpoint(tmp_path)
    assert ours.config.rope_theta == ROPES[rope]["rope_theta"]
    ids = prompt()
    torch.testing.assert_close(ours.dense_logits(ids), reference_logits(reference, ids), **TOL)


def test_transformers5_llama3_theta_500000_is_not_read_as_10000(tmp_path: Path) -> None:
    """The defect: this config used to load silently with theta 10000 and no scaling."""
    reference = hf_checkpoint(tmp_path, "llama", ROPES["llama3"])
    raw = json.loads((tmp_path / "config.json").read_text())
    assert "rope_theta" not in raw and "rope_scaling" not in raw  # transformers 5's dialect
    ids = prompt(2)
    want = reference_logits(reference, ids)
    ours = load_checkpoint(tmp_path)
    assert ours.config.rope_scaling is not None
    assert ours.config.rope_scaling.rope_type == "llama3"
    torch.testing.assert_close(ours.dense_logits(ids), want, **TOL)

    # what the old reading computed is far outside that tolerance, so the check above can fail
    old = ModelConfig.from_hf(tmp_path / "config.json").model_copy(
        update={"rope_theta": 10_000.0, "rope_scaling": None}
    )
    wrong = LlamaForCausalLM(old)
    wrong.load_state_dict(ours.state_dict())
    assert (wrong.eval().dense_logits(ids) - want).abs().max() > 100 * TOL["atol"]


@pytest.mark.parametrize("rope", ["llama3", "yarn", "linear"])
def test_scaling_changes_the_logits(tmp_path: Path, rope: str) -> None:
    """Each schedule's own arithmetic matters at these sizes: ignoring the scaling (keeping
    theta) gives logits far from the reference's, so the match above tests the schedule."""
    reference = hf_checkpoint(tmp_path, "llama", ROPES[rope])
    ours = load_checkpoint(tmp_path)
    plain = LlamaForCausalLM(ours.config.model_copy(update={"rope_scaling": None}))
    plain.load_state_dict(ours.state_dict())
    ids = prompt(3)
    gap = (plain.eval().dense_logits(ids) - reference_logits(reference, ids)).abs().max()
    assert gap > 100 * TOL["atol"]
