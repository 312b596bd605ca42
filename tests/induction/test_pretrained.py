"""Chapter 5's head scores on a Hugging Face model (lib.induction.pretrained), with no download: a tiny random
GPT-2, a hand-made one, and a stand-in model whose attention is planted."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch import nn

from lib.induction import pretrained, scores

N = 5


def batches(batch: int = 3, n: int = N) -> tuple[torch.Tensor, torch.Tensor]:
    return pretrained.repeat_batches(batch, n, torch.Generator().manual_seed(0), bos=0, band=(1, 40))


def tiny_gpt2(vocab: int = 40, n_embd: int = 16, n_head: int = 2) -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=vocab, n_positions=32, n_embd=n_embd, n_layer=2, n_head=n_head)
    return GPT2LMHeadModel(config).eval()


class Planted(nn.Module):
    """A stand-in for a Hugging Face model: layer 0 holds a previous-token head and a head that looks ``N - 1``
    tokens back; layer 1 an induction head (the key after an earlier occurrence of the query's token) and a head
    on the first token."""

    def __init__(self, vocab: int = 40) -> None:
        super().__init__()
        self.config = SimpleNamespace(vocab_size=vocab)
        self.weight = nn.Parameter(torch.zeros(1))

    def forward(self, input_ids: torch.Tensor, output_attentions: bool, use_cache: bool) -> SimpleNamespace:
        batch, seq = input_ids.shape
        query = torch.arange(seq)[:, None]

        def back(d: int) -> torch.Tensor:  # (seq, seq): each query on the key d back (the first key if none)
            key = (query - d).clamp_min(0)
            return (torch.arange(seq)[None, :] == key).float()

        match = scores.prefix_matching_mask(input_ids).float()  # (batch, q, k)
        first = back(seq).expand(batch, seq, seq)
        induction = torch.where(match.sum(-1, keepdim=True) > 0, match, first)
        induction = induction / induction.sum(-1, keepdim=True)
        layer0 = torch.stack([back(1).expand(batch, seq, seq), back(N - 1).expand(batch, seq, seq)], dim=1)
        layer1 = torch.stack([induction, first], dim=1)
        return SimpleNamespace(attentions=(layer0, layer1))


def test_repeat_batches_repeat_the_first_half_and_the_control_repeats_nothing() -> None:
    repeated, fresh = batches()
    assert repeated.shape == fresh.shape == (3, 1 + 2 * N) and repeated.dtype == torch.int64
    assert (repeated[:, 0] == 0).all() and (fresh[:, 0] == 0).all()
    assert torch.equal(repeated[:, 1 : 1 + N], repeated[:, 1 + N :])
    assert torch.equal(fresh[:, : 1 + N], repeated[:, : 1 + N])
    assert all(len(set(row.tolist())) == 2 * N for row in fresh[:, 1:])
    assert int(repeated[:, 1:].min()) >= 1 and int(repeated.max()) < 40
    assert torch.equal(batches()[0], repeated)  # the generator decides


def test_planted_heads_score_as_built_and_the_control_tells_induction_from_position() -> None:
    repeated, fresh = batches()
    got = pretrained.head_scores(Planted(), repeated, fresh)
    assert set(got) == {"prefix matching", "prefix matching, fresh tokens", "previous token"}
    assert all(v.shape == (2, 2) for v in got.values())
    pm, control = got["prefix matching"], got["prefix matching, fresh tokens"]
    assert pm[1, 0] == pytest.approx(1.0) and control[1, 0] == pytest.approx(0.0)  # induction: only on repeats
    assert pm[0, 1] == pytest.approx(1.0) and control[0, 1] == pytest.approx(1.0)  # N - 1 back: both
    assert pm[1, 1] == pytest.approx(0.0)
    assert got["previous token"][0, 0] == pytest.approx(1.0)


def test_a_tiny_gpt2_gives_patterns_in_the_scores_convention() -> None:
    model = tiny_gpt2()
    repeated, fresh = batches(2)
    pattern = pretrained.attention_patterns(model, repeated)
    assert pattern.shape == (2, 2, 2, 1 + 2 * N, 1 + 2 * N)  # (layers, batch, heads, query, key)
    assert torch.allclose(pattern.sum(-1), torch.ones(()))
    assert model.config._attn_implementation == "eager"
    got = pretrained.head_scores(model, repeated, fresh)
    for name, value in got.items():
        assert value.shape == (2, 2) and ((0 <= value) & (value <= 1)).all(), name
    assert torch.equal(got["previous token"], scores.previous_token_score(pretrained.attention_patterns(model, fresh)))


@pytest.mark.parametrize(("sign", "expected"), [(1.0, 1.0), (-1.0, -1.0)])
def test_copying_of_a_hand_made_gpt2_whose_head_writes_the_token_it_reads(sign: float, expected: float) -> None:
    model = tiny_gpt2(vocab=8, n_embd=8, n_head=1)
    with torch.no_grad():
        model.transformer.wte.weight.copy_(torch.eye(8))  # tied to lm_head
        for block in model.transformer.h:
            block.ln_1.weight.fill_(1.0)
            block.attn.c_attn.weight[:, 16:].copy_(torch.eye(8))  # W_V
            block.attn.c_proj.weight.copy_(sign * torch.eye(8))  # W_O
        model.transformer.ln_f.weight.fill_(1.0)
    got = pretrained.gpt2_copying_score(model, torch.arange(8))
    assert got.shape == (2, 1)
    assert torch.allclose(got, torch.full((2, 1), expected), atol=1e-5)


def test_copying_of_a_random_tiny_gpt2_is_bounded() -> None:
    got = pretrained.gpt2_copying_score(tiny_gpt2(), torch.arange(1, 20))
    assert got.shape == (2, 2) and (got.abs() <= 1).all()


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: pretrained.repeat_batches(2, 1, torch.Generator(), bos=0), "n must be"),
        (lambda: pretrained.repeat_batches(2, 10, torch.Generator(), bos=0, band=(1, 15)), "band must be"),
        (lambda: pretrained.repeat_batches(2, 3, torch.Generator(), bos=-1), "bos must be"),
        (lambda: pretrained.head_scores(Planted(), batches()[0], batches()[0]), "fresh must not repeat"),
        (lambda: pretrained.head_scores(Planted(), batches()[0], batches(2)[1]), "one shape"),
        (lambda: pretrained.attention_patterns(Planted(vocab=10), batches()[0]), "tokens"),
        (lambda: pretrained.attention_patterns(nn.Linear(2, 2), batches()[0]), "config.vocab_size"),
        (lambda: pretrained.attention_patterns(Planted(), batches()[0].float()), "int64"),
        (lambda: pretrained.gpt2_copying_score(Planted(), torch.arange(3)), "GPT-2 model"),
        (lambda: pretrained.gpt2_copying_score(tiny_gpt2(), torch.tensor([0, 99])), "tokens"),
    ],
)
def test_bad_input_is_a_clear_error(call, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=match):
        call()


def test_a_model_that_returns_no_patterns_is_an_error() -> None:
    class Silent(Planted):
        def forward(self, input_ids: torch.Tensor, output_attentions: bool, use_cache: bool) -> SimpleNamespace:
            return SimpleNamespace(attentions=())

    with pytest.raises(ValueError, match="no attention patterns"):
        pretrained.attention_patterns(Silent(), batches()[0])


def test_copying_of_logits_is_chapter_5s_copying_score() -> None:
    logits = torch.randn(2, 3, 4, 9, generator=torch.Generator().manual_seed(1))
    tokens = torch.tensor([0, 3, 8, 3])
    got = scores.copying_of_logits(logits, tokens)
    centred = logits - logits.mean(-1, keepdim=True)
    own = centred[..., torch.arange(4), tokens]
    assert torch.allclose(got, (own / centred.abs().amax(-1)).mean(-1))
    with pytest.raises(ValueError, match="do not match"):
        scores.copying_of_logits(logits, tokens[:3])
