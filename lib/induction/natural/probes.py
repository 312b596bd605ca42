"""Measuring a natural-text model (chapter 8): the per-window loss and ICL score, bootstrap
intervals, and the fixed probes the training script logs at every checkpoint.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from lib.core import seeds, validate
from lib.core.device import check_device
from lib.core.heads import Head
from lib.core.tokens import BOS, EVAL_SEED
from lib.induction import ablation, scores
from lib.induction.natural.corpus import DATA, held_out_ids, windows

if TYPE_CHECKING:
    from transformer_lens.model_bridge import TransformerBridge


WINDOW_CHUNK = 4
"""Windows a forward pass in :func:`window_loss` and :func:`ablated_window_loss`. One pass over all 619 held-out
windows would hold 650 MB of logits. Chunks of 8 windows (8 MB of logits, 16 MB of attention scores) stay below the
size at which the C allocator returns memory to the system after every use, which made larger chunks 1.6 times slower
on a laptop CPU; chunks of 4 (attention scores of 8 MB a layer, which the attention's masking and softmax pass over
four times) ran 1.2-1.5 times faster again than 8 on the book's 2-core machine (2026-12-02, 96 windows, both models)."""


def window_loss(model: torch.nn.Module, tokens: torch.Tensor, chunk: int = WINDOW_CHUNK) -> torch.Tensor:
    """:func:`lib.induction.scores.per_token_loss` of many windows, ``chunk`` windows at a time, under
    ``torch.inference_mode`` (see :data:`WINDOW_CHUNK`).

    Returns:
        ``(batch, seq - 1)``.
    """
    validate.positive_int("chunk", chunk)
    with torch.inference_mode():
        return torch.cat([scores.per_token_loss(model, tokens[i : i + chunk]) for i in range(0, len(tokens), chunk)])


def ablated_window_loss(
    model: TransformerBridge, tokens: torch.Tensor, ablations: Sequence[Iterable[Head]], chunk: int = WINDOW_CHUNK
) -> torch.Tensor:
    """:func:`lib.induction.ablation.ablated_losses` (full, zero) of many windows, ``chunk`` windows and one set of
    heads a pass, as in :func:`window_loss`. All the windows in one pass (what ``ablated_losses`` does with them) ran
    chapter 8's ablations of 619 windows twice as slowly on the book's 2-core machine.

    Args:
        ablations: ``n`` sets of heads (an empty set: the clean model).

    Returns:
        ``(n, batch, seq - 1)``.
    """
    validate.positive_int("chunk", chunk)
    sets = [list(heads) for heads in ablations]
    parts = [
        ablation.ablated_losses(model, tokens[i : i + chunk], sets, max_rows=chunk)
        for i in range(0, len(tokens), chunk)
    ]
    return torch.cat(parts, dim=1)


def loss_and_patterns(model: TransformerBridge, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`lib.induction.scores.per_token_loss` and :func:`lib.induction.scores.attention_patterns` from one
    forward pass, under ``torch.inference_mode``.

    Returns:
        ``(batch, seq - 1)`` loss and ``(n_layers, batch, n_heads, query, key)`` patterns.
    """
    validate.token_batch(tokens)
    names = [f"blocks.{layer}.attn.hook_pattern" for layer in range(model.cfg.n_layers)]
    with torch.inference_mode():
        logits, cache = model.run_with_cache(tokens, names_filter=lambda name: name in names)
    return scores.next_token_loss(logits, tokens), torch.stack([cache[name] for name in names])


BIN = 16
"""Per-position losses are logged in bins of this many positions (bin ``i``: loss positions ``16 i .. 16 i + 15``)."""

EARLY = range(16, 32)
"""Loss positions of the ICL score's early term: the predictions of tokens 17-32 of a window (bin 1)."""

LATE = range(240, 255)
"""Loss positions of the late term: the predictions of tokens 241-255, the last 15 of a 256-token window (bin 15)."""


def loss_bins(loss_by_position: torch.Tensor) -> list[float]:
    """``(seq - 1,)`` mean loss per position -> its means over bins of :data:`BIN` positions (the last bin shorter)."""
    return [loss_by_position[i : i + BIN].mean().item() for i in range(0, len(loss_by_position), BIN)]


def icl_per_window(loss: torch.Tensor) -> torch.Tensor:
    """Each window's ICL score on natural text: :func:`lib.induction.scores.icl_per_sequence` over the bands
    :data:`EARLY` and :data:`LATE`.

    Args:
        loss: ``(..., batch, 255)`` per-token loss of 256-token windows.

    Returns:
        ``(..., batch)``; negative where the window's later tokens are predicted better.
    """
    if loss.ndim < 2 or loss.shape[-1] != LATE.stop:
        raise ValueError(
            f"loss must be (..., batch, {LATE.stop}) per-token loss of 256-token windows, got {tuple(loss.shape)}"
        )
    return scores.icl_per_sequence(loss, EARLY, LATE)


def eligible_positions(tokens: torch.Tensor) -> torch.Tensor:
    """Where induction can help: the loss positions whose current token occurred earlier in its window.

    Loss position ``p`` predicts ``tokens[:, p + 1]`` from ``tokens[:, : p + 1]``; it is eligible when
    ``tokens[:, p]`` occurs at some ``k < p`` (after BOS), so some key (``k + 1``) follows an earlier occurrence of
    the current token (:func:`lib.induction.scores.prefix_matching_mask`).

    Args:
        tokens: ``(batch, seq) int64``.

    Returns:
        ``(batch, seq - 1) bool``.
    """
    validate.token_batch(tokens)
    return scores.prefix_matching_mask(tokens)[:, :-1].any(-1)


def icl_where(loss: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """The ICL score at the positions ``where`` selects, pooled over windows: the mean loss over the selected
    positions of :data:`LATE` minus the mean over the selected positions of :data:`EARLY`.

    Args:
        loss: ``(..., batch, 255)`` per-token loss of 256-token windows (e.g. stacked over ablations).
        where: ``(batch, 255) bool``, e.g. :func:`eligible_positions` or its negation.

    Returns:
        ``loss.shape[:-2]``.
    """
    icl_per_window(loss)  # checks the shape
    if where.dtype != torch.bool or where.shape != loss.shape[-2:]:
        raise ValueError(
            f"where must be a bool tensor of shape {tuple(loss.shape[-2:])}, got {where.dtype} {tuple(where.shape)}"
        )
    late, early = where[:, LATE], where[:, EARLY]
    if not late.any() or not early.any():
        raise ValueError("where selects no position of the early or of the late band: the score is undefined")
    return loss[..., LATE][..., late].mean(-1) - loss[..., EARLY][..., early].mean(-1)


def bootstrap_interval(
    statistic: Callable[[torch.Tensor], torch.Tensor],
    per_window: torch.Tensor,
    level: float = 0.9,
    samples: int = 2000,
    seed: int = seeds.seed(0),
) -> tuple[float, float]:
    """A percentile bootstrap interval of ``statistic`` over windows resampled with replacement.

    Args:
        statistic: maps ``(..., batch)`` per-window values to ``(...)`` with the window axis reduced (e.g. a mean,
            or a share of the ICL score removed); it is called once on ``(..., samples, batch)`` resamples.
        per_window: ``(..., batch)``, e.g. :func:`icl_per_window` of the clean model and of ablations stacked; the
            same windows are drawn for every leading entry (paired resampling).
        level: the interval's coverage, in (0, 1).

    Returns:
        ``(low, high)`` quantiles of the resampled statistic.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    validate.positive_int("samples", samples)
    batch = per_window.shape[-1]
    g = torch.Generator().manual_seed(validate.seed(seed))
    idx = torch.randint(0, batch, (samples, batch), generator=g).to(per_window.device)
    values = statistic(per_window[..., idx]).flatten().cpu().double()
    if values.numel() != samples:
        raise ValueError(f"statistic must return one value per resample ({samples}), got {values.numel()}")
    q = torch.tensor([(1 - level) / 2, (1 + level) / 2], dtype=torch.float64)
    low, high = values.quantile(q).tolist()
    return low, high


COMMON_TOKENS_PATH = DATA / "pystdlib-bpe1024-common256.json"
"""The 256 most frequent tokens of the training text (BOS excluded), most frequent first: the random-repeat probe
draws from them. Pinned, not recomputed: five pairs of them are equally frequent, and the training runs (on a GPU)
ordered three of those pairs the other way round from a stable CPU sort; the file keeps the runs' order
(``tests/induction/test_natural.py`` checks that it is a most-frequent-first order of the training text's counts)."""


@functools.cache
def _common_tokens() -> tuple[int, ...]:
    return tuple(json.loads(COMMON_TOKENS_PATH.read_text()))


def common_tokens(n: int = 256) -> torch.Tensor:
    """``(n,) int64``: the ``n <= 256`` most frequent tokens of the training text (:data:`COMMON_TOKENS_PATH`)."""
    validate.int_at_least("n", n, 1)
    pinned = _common_tokens()
    if n > len(pinned):
        raise ValueError(f"n must be at most {len(pinned)}, got {n}")
    return torch.tensor(pinned[:n], dtype=torch.int64)


def probe_tokens(
    seq_len: int = 256, device: torch.device | str | None = None, random_repeats: bool = True, seed: int = EVAL_SEED
) -> dict[str, torch.Tensor]:
    """The fixed evaluation batches (seed :data:`lib.core.tokens.EVAL_SEED`), each starting with BOS.

    A shipped run's log was measured on the batches of :data:`lib.core.tokens.SHIPPED_EVAL_SEED`: give that ``seed``
    to re-measure it under any ``CIRCUITS_SEED``.

    Returns:
        ``"text"``: ``(64, seq_len)`` held-out windows; ``"nat_repeat"``: ``(32, 2 h + 1)`` a held-out passage of
        ``h = (seq_len - 1) // 2`` tokens, then the same passage again; ``"rand_repeat"``: ``(32, 2 h + 1)`` the
        same for ``h`` tokens drawn from the 256 most common ones (:func:`common_tokens`; left out when
        ``random_repeats`` is False).
    """
    held = held_out_ids()
    g = torch.Generator().manual_seed(validate.seed(seed))
    half = (seq_len - 1) // 2
    text = windows(held, torch.randint(0, len(held) - seq_len, (64,), generator=g), seq_len)
    passages = windows(held, torch.randint(0, len(held) - half, (32,), generator=g), half + 1)[:, 1:]
    bos = torch.full((32, 1), BOS, dtype=torch.int64)
    target = check_device(device)
    probes = {"text": text.to(target), "nat_repeat": torch.cat([bos, passages, passages], 1).to(target)}
    if random_repeats:
        common = common_tokens()
        randoms = common[torch.randint(0, len(common), (32, half), generator=g)]
        probes["rand_repeat"] = torch.cat([bos, randoms, randoms], 1).to(target)
    return probes


OLSSON_SKIP = 32
"""The Olsson-style probe (:func:`olsson_repeat_probe`) leaves out the :data:`OLSSON_SKIP` most frequent tokens
(whitespace, brackets, ``self``), and every token below rank 256 of the training text's counts, which the models
saw too rarely to have learned much about."""


def olsson_repeat_probe(
    n: int = 32, half: int = 127, seed: int = EVAL_SEED, device: torch.device | str | None = None
) -> torch.Tensor:
    """Olsson et al.'s prefix-matching probe on this vocabulary: BOS, ``half`` distinct tokens, the same tokens again.

    Each row draws its tokens *without replacement* from the tokens of frequency rank ``OLSSON_SKIP + 1 .. 256``
    (:func:`common_tokens`, the most and the least frequent left out), so no token repeats within a copy: every query
    of the second copy has exactly one key that followed an earlier occurrence of its token, and chapter 5's
    :func:`lib.induction.scores.prefix_matching_score` measures the attention to that one key.

    Returns:
        ``(n, 2 half + 1) int64``.
    """
    validate.positive_int("n", n)
    pool = common_tokens()[OLSSON_SKIP:]
    validate.int_at_least("half", half, 2, "two tokens a copy")
    if half > len(pool):
        raise ValueError(f"half must be at most {len(pool)} (the distinct tokens to draw from), got {half}")
    g = torch.Generator().manual_seed(validate.seed(seed))
    rows = torch.stack([pool[torch.randperm(len(pool), generator=g)[:half]] for _ in range(n)])
    bos = torch.full((n, 1), BOS, dtype=torch.int64)
    tokens = torch.cat([bos, rows, rows], 1)
    target = check_device(device)
    return tokens if target is None else tokens.to(target)


def copy_losses(loss: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean loss on the first and on the second copy of a repeated batch (BOS, ``h`` tokens, the same again).

    Args:
        loss: ``(..., batch, 2 h)`` per-token loss.

    Returns:
        ``(first, second)``, each ``(...)``: loss positions ``0 .. h - 2`` (the first copy's tokens after BOS; the
        prediction of the second copy's first token is in neither) and ``h .. 2 h - 1`` (the second copy's tokens
        after its first, the ones an induction head can predict).
    """
    if loss.ndim < 2 or loss.shape[-1] % 2 or loss.shape[-1] < 4:
        raise ValueError(f"loss must be (..., batch, 2 h) per-token loss of a repeated batch, got {tuple(loss.shape)}")
    half = loss.shape[-1] // 2
    return loss[..., : half - 1].mean((-1, -2)), loss[..., half:].mean((-1, -2))


def repeat_prefix_matching(pattern: torch.Tensor) -> torch.Tensor:
    """Prefix matching on a repeated batch (BOS, a passage of ``h`` tokens, the passage again).

    The mean attention from each token of the second copy to the token after its first occurrence
    (query ``q`` -> key ``q - h + 1``), over the second copy and the batch.

    Args:
        pattern: ``(..., batch, heads, 2 h + 1, 2 h + 1)``.

    Returns:
        ``(..., heads)``.
    """
    seq = pattern.shape[-1]
    if seq % 2 == 0 or seq < 5:
        raise ValueError(f"a repeated batch has 2 h + 1 positions (h >= 2), got {seq}")
    half = (seq - 1) // 2
    q = torch.arange(half + 1, seq, device=pattern.device)
    return pattern[..., q, q - half + 1].mean(dim=(-1, -3))


@dataclass(frozen=True)
class Measurement:
    """What :func:`measure` finds at a checkpoint, and what ``scripts/train_natural.py`` logs there.

    Attributes:
        held_loss: mean loss on the held-out windows of the probes.
        loss_by_pos16: that loss by position, in bins of :data:`BIN` positions (:func:`loss_bins`).
        nat_repeat_first, nat_repeat_second: the mean loss on the first and on the second copy of a repeated held-out
            passage (``*_first``: loss positions ``0 .. h - 2``; ``*_second``: positions ``h .. 2 h - 1``, the
            predictions of the second copy's tokens).
        nat_repeat_pm: :func:`repeat_prefix_matching` of every head on those passages, ``[layer][head]``.
        prev_token: the previous-token score of every head on the held-out windows, ``[layer][head]``.
        rand_repeat_first, rand_repeat_second, rand_repeat_pm: the same on repeated random common tokens (``None``
            where the probes have none).
    """

    held_loss: float
    loss_by_pos16: list[float]
    nat_repeat_first: float
    nat_repeat_second: float
    nat_repeat_pm: list[list[float]]
    prev_token: list[list[float]]
    rand_repeat_first: float | None = None
    rand_repeat_second: float | None = None
    rand_repeat_pm: list[list[float]] | None = None


def measure(model: TransformerBridge, probes: dict[str, torch.Tensor]) -> Measurement:
    """What ``scripts/train_natural.py`` logs at a checkpoint, on :func:`probe_tokens` (see :class:`Measurement`)."""
    text_loss, text_pattern = loss_and_patterns(model, probes["text"])  # one pass a probe
    loss = text_loss.mean(0)
    repeats: dict[str, object] = {}
    for name in ("nat_repeat", "rand_repeat"):
        if name not in probes:
            continue
        repeat_loss, pattern = loss_and_patterns(model, probes[name])
        first, second = copy_losses(repeat_loss)
        repeats[f"{name}_first"] = first.item()
        repeats[f"{name}_second"] = second.item()
        repeats[f"{name}_pm"] = repeat_prefix_matching(pattern).cpu().tolist()
    previous = scores.previous_token_score(text_pattern).cpu().tolist()
    return Measurement(
        held_loss=loss.mean().item(),
        loss_by_pos16=loss_bins(loss.cpu()),
        prev_token=previous,
        **repeats,  # type: ignore[arg-type]
    )


def induction_guess(tokens: torch.Tensor) -> torch.Tensor:
    """What a perfect induction head would predict: at each position, the token that followed the most recent
    earlier occurrence of the current token.

    Args:
        tokens: ``(batch, seq)`` token ids.

    Returns:
        ``(batch, seq) int64``: ``tokens[b, k + 1]`` for the largest ``k < q`` with ``tokens[b, k] == tokens[b, q]``,
        and ``-1`` where the token at ``q`` has not occurred before in its row.
    """
    if tokens.ndim != 2:
        raise ValueError(f"tokens must be (batch, seq) token ids, got shape {tuple(tokens.shape)}")
    batch, seq = tokens.shape
    earlier = torch.ones(seq, seq, dtype=torch.bool, device=tokens.device).tril(-1)  # (q, k): k < q
    same_token = (tokens[:, :, None] == tokens[:, None, :]) & earlier  # (b, q, k)
    positions = torch.arange(seq, device=tokens.device).expand(batch, seq, seq)
    last = torch.where(same_token, positions, -1).amax(-1)  # (b, q): the most recent earlier occurrence
    following = tokens.gather(1, (last + 1).clamp(max=seq - 1))  # last + 1 <= q: inside the row
    return torch.where(last >= 0, following, -1).long()


def top_key_share(pattern: torch.Tensor, keys: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """How often each head's strongest attention lands on a chosen key.

    Args:
        pattern: ``(..., batch, heads, query, key)`` attention.
        keys: ``(batch, query, key) bool``: the keys that count at each query (e.g.
            :func:`lib.induction.scores.prefix_matching_mask`).
        queries: ``(batch, query) bool``: the queries to count.

    Returns:
        ``(..., heads)``: the share of the selected queries whose most-attended key is selected in ``keys``.
    """
    if pattern.ndim < 4 or keys.shape != (pattern.shape[-4], *pattern.shape[-2:]) or keys.dtype != torch.bool:
        raise ValueError(
            f"keys must be a (batch, query, key) bool tensor matching pattern {tuple(pattern.shape)}, got "
            f"{keys.dtype} {tuple(keys.shape)}"
        )
    if queries.shape != keys.shape[:2] or queries.dtype != torch.bool or not queries.any():
        raise ValueError(
            f"queries must be a non-empty (batch, query) bool tensor, got {queries.dtype} {tuple(queries.shape)}"
        )
    strongest = pattern.argmax(-1)  # (..., batch, heads, query)
    batch, query = keys.shape[:2]
    b = torch.arange(batch, device=keys.device)[:, None, None]
    q = torch.arange(query, device=keys.device)[None, None, :]
    hit = keys[b, q, strongest]  # (..., batch, heads, query)
    chosen = queries[:, None, :].to(pattern.dtype)
    return (hit.to(pattern.dtype) * chosen).sum((-1, -3)) / queries.sum()


def share_removed(per_window: torch.Tensor) -> torch.Tensor:
    """The share of the ICL score an ablation removes, ``1 - mean(ablated) / mean(intact)`` over windows.

    Args:
        per_window: ``(2, ..., batch)`` per-window ICL scores (:func:`icl_per_window`), intact then ablated.

    Returns:
        ``(...)``: 1 where the ablation removes the whole score, 0 where it removes none, below 0 where it
        strengthens it. A ratio: unstable where the intact score is near zero (then see :func:`nats_removed`).
    """
    return 1 - per_window[1].mean(-1) / per_window[0].mean(-1)


def nats_removed(per_window: torch.Tensor) -> torch.Tensor:
    """How far an ablation raises the mean ICL score, in nats: the ICL score removed, as a difference.

    Args:
        per_window: ``(2, ..., batch)`` per-window ICL scores, intact then ablated.

    Returns:
        ``(...)``: ``mean(ablated) - mean(intact)``; positive where the ablation weakens in-context learning.
    """
    return per_window[1].mean(-1) - per_window[0].mean(-1)


def paired_change(
    statistic: Callable[[torch.Tensor], torch.Tensor],
) -> Callable[[torch.Tensor], torch.Tensor]:
    """The change of a two-row ``statistic`` from one (intact, ablated) pair to another, on the same windows.

    ``statistic`` maps ``(2, ..., batch)`` to ``(...)`` (e.g. :func:`share_removed`); the returned function maps
    ``(4, ..., batch)``, the first pair then the second (e.g. one checkpoint then the next), to
    ``statistic(second) - statistic(first)``. Passed to :func:`bootstrap_interval`, the same windows are resampled
    for all four rows: a paired interval of the change.
    """

    def change(per_window: torch.Tensor) -> torch.Tensor:
        if per_window.shape[0] != 4:
            raise ValueError(f"a paired change needs 4 rows (two pairs), got {per_window.shape[0]}")
        return statistic(per_window[2:]) - statistic(per_window[:2])

    return change


def estimate(
    statistic: Callable[[torch.Tensor], torch.Tensor], per_window: torch.Tensor, seed: int = seeds.seed(0)
) -> tuple[float, float, float]:
    """``(value, low, high)``: ``statistic`` on all the windows and its 90% :func:`bootstrap_interval`.

    Args:
        statistic: maps ``(..., batch)`` to a single value (e.g. :func:`share_removed`).
        per_window: ``(..., batch)`` per-window values.
    """
    value = statistic(per_window)
    if value.numel() != 1:
        raise ValueError(f"statistic must return a single value, got shape {tuple(value.shape)}")
    return (value.item(), *bootstrap_interval(statistic, per_window, seed=seed))


def share_interval(
    intact: torch.Tensor, ablated: torch.Tensor, level: float = 0.9, samples: int = 2000, seed: int = seeds.seed(0)
) -> tuple[float, float]:
    """The book's answer to Exercise 8.4: :func:`bootstrap_interval` of the share of the ICL score removed,
    ``1 - mean(ablated) / mean(intact)``, resampling the same windows for both (``(batch,)`` each)."""
    return bootstrap_interval(share_removed, torch.stack([intact, ablated]), level, samples, seed)
