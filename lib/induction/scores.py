"""Detecting induction heads, and measuring in-context learning, from a model's activations and weights.

Head scores follow Olsson et al. (2022); each is a number per head, computed on a fixed evaluation set:

- **prefix matching**: on a random segment repeated several times after a BOS token, the attention a
  head pays, from each token, to the tokens that *followed earlier occurrences* of that token (1 = all
  of it, 0 = none);
- **copying** (the book's weight-path variant; Olsson et al.'s own reads the head's output on a run, see
  :func:`lib.induction.circuits.olsson_copying_score`): whether the head's direct path from a token's embedding to the
  logits (``W_E W_V W_O W_U``, the OV circuit) raises the logit of that same token; in ``[-1, 1]``;
- **previous token**: the attention a head pays from each position to the one just before it.

An *induction head* has high prefix matching (>= 0.75 here) and copying far above random heads'
(>= :data:`COPYING_THRESHOLD`; about half of random heads have positive copying).

**The phase change (one definition for the whole book)** is read off the loss on repeated tokens (the
predictions an induction head can make, :func:`lib.induction.sequences.repeat_mask`), measured at checkpoints:

- it *happens* at the first checkpoint whose loss is below :data:`PHASE_CHANGE_LOSS`, 1 nat: the
  *phase-change step* (:func:`phase_change_step`);
- it *spans* the fall of that loss from 3 nats to 0.3 nats around that step (:data:`PHASE_CHANGE_BAND`):
  the *phase-change window* (:func:`phase_change_window`).

Why these levels. Chance is ``log(vocab - 1)`` = 4.14 nats (63 content tokens; BOS is never a target).
A model that does not know *which* earlier token comes next stays far above 1 nat: spreading the
probability evenly over the other tokens of the segment costs ``log(period - 1)``, 2.4 nats on average
over the training distribution, and the best fixed mix of "copy the token ``d`` back" about 2.3 nats
(:func:`lib.induction.sequences.best_offset_mix`; chapter 5 computes both). A loss below 1 nat needs induction:
the one-layer models, which cannot form induction heads, never get there. The window marks the drop itself:
it opens at the last checkpoint still at 3 nats or more (about three quarters of chance; the models of
chapters 5 and 6 start their drops from just above it) and closes at the first below 0.3 nats, where the
drop is over. Absolute levels, unlike fractions of a run's first and last loss, do not depend on how long
the run goes on after the drop, and find no phase change in a run that only creeps down its plateau (a
window relative to the run's own first and last loss would find one in the one-layer control too).

**ICL score sign convention (used everywhere in the book):** ``icl_score = loss at a late token -
loss at an early token``. It is *negative* when the model predicts later tokens better than early
ones, i.e. when it learns in context; more negative = more in-context learning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args

import torch
import torch.nn.functional as F
from torch import nn

from lib.core import validate

if TYPE_CHECKING:
    from transformer_lens.model_bridge import TransformerBridge


T = TypeVar("T")

INDUCTION_THRESHOLD = 0.75
"""Prefix-matching score from which (with copying >= :data:`COPYING_THRESHOLD`) a head counts as an induction head."""

COPYING_THRESHOLD = 0.5
"""Copying score (:func:`copying_score`) from which :func:`induction_heads` counts a head as copying.

Set from a random-head baseline: on freshly initialised models of chapter 5's shape (2 layers x 4 heads,
``d_model`` 64, vocabulary 64; seeds 0-199, 1,600 heads, scored on :func:`lib.induction.sequences.eval_sets`' 25 copy
tokens) the copying score has mean -0.00 and standard deviation 0.10, and about half the heads score above 0;
the largest is 0.30. The threshold is that mean plus five standard deviations; trained induction heads score
about 0.99. Chapter 5 checks it on random heads of other seeds (200-239) when it runs.
"""

ScoreName = Literal["prefix matching", "copying", "previous token"]

SCORE_NAMES: tuple[ScoreName, ...] = get_args(ScoreName)
"""The head scores of :func:`head_scores`, in the order the book shows them."""


def per_token_loss(model: nn.Module, tokens: torch.Tensor, *, check_ids: bool = True) -> torch.Tensor:
    """Cross-entropy of predicting each next token.

    Args:
        tokens: ``(batch, seq) int64``.
        check_ids: check that every id is in ``[0, d_vocab)`` (one read-back from the tokens' device). Training
            loops that feed lib's own batches pass ``False``: on a GPU the read-back would wait for every step.

    Returns:
        ``(batch, seq - 1) float32``; entry ``p`` is the loss (nats) of predicting ``tokens[:, p + 1]``
        from ``tokens[:, : p + 1]``.
    """
    tokens = _loss_tokens(tokens)
    return _next_token_loss(model(_model_tokens(model, tokens) if check_ids else tokens), tokens)


def _loss_tokens(tokens: torch.Tensor) -> torch.Tensor:
    validate.token_batch(tokens)
    validate.int_at_least("the number of positions in tokens", tokens.shape[1], 2, "a token and the next one")
    return tokens


def _model_tokens(model: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """``tokens`` if ``model`` can embed them: ``(batch, seq) int64``, ids in ``[0, d_vocab)``.

    ``model`` has a ``cfg`` with ``d_vocab`` (a TransformerBridge, a SlimModel; both check ``n_ctx`` themselves).
    One min/max pair is read back from the tokens' device (:func:`lib.core.validate.token_range`).
    """
    cfg: Any = model.cfg  # a TransformerBridgeConfig or a SlimConfig
    return validate.token_range(validate.token_batch(tokens), cfg.d_vocab)


def next_token_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """:func:`per_token_loss` from logits already computed (e.g. by a run with hooks).

    Args:
        logits: ``(..., batch, seq, vocab)``; leading axes (e.g. one per ablation) broadcast over ``tokens``.
        tokens: ``(batch, seq) int64``.

    Returns:
        ``(..., batch, seq - 1) float32``.
    """
    _loss_tokens(tokens)
    if logits.shape[-3:-1] != tokens.shape:
        raise ValueError(
            f"logits (..., batch, seq, vocab) {tuple(logits.shape)} "
            f"do not match tokens (batch, seq) {tuple(tokens.shape)}"
        )
    return _next_token_loss(logits, validate.token_range(tokens, logits.shape[-1]))


def _next_token_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    logprobs = F.log_softmax(logits[..., :-1, :].float(), dim=-1)
    target = tokens[:, 1:, None].expand(*logprobs.shape[:-1], 1)
    return -logprobs.gather(-1, target)[..., 0]


def prediction_shares(logits: torch.Tensor, tokens: torch.Tensor, mask: torch.Tensor) -> tuple[float, float]:
    """What a model's most likely next token is, at the loss positions ``mask`` selects.

    Args:
        logits: ``(batch, seq, vocab)``; position ``p`` predicts ``tokens[:, p + 1]``.
        tokens: ``(batch, seq) int64``.
        mask: ``(batch, seq - 1) bool``, aligned with :func:`per_token_loss` (e.g.
        :func:`lib.induction.sequences.repeat_mask`).

    Returns:
        ``(right, current)``: the share of the selected positions where the argmax is the next token, and where
        it is the current token ``tokens[:, p]`` itself (what an induction head without its shift copies).
    """
    validate.token_batch(tokens)
    if logits.ndim != 3 or logits.shape[:2] != tokens.shape:
        raise ValueError(
            f"logits (batch, seq, vocab) {tuple(logits.shape)} do not match tokens (batch, seq) {tuple(tokens.shape)}"
        )
    validate.token_range(tokens, logits.shape[-1])
    if mask.shape != (tokens.shape[0], tokens.shape[1] - 1) or mask.dtype != torch.bool:
        raise ValueError(f"mask must be a (batch, seq - 1) bool tensor, got {tuple(mask.shape)} {mask.dtype}")
    if not mask.any():
        raise ValueError("mask selects no position: the shares are undefined")
    guess = logits[:, :-1].argmax(dim=-1)  # (batch, seq - 1)
    right = (guess == tokens[:, 1:])[mask].float().mean().item()
    current = (guess == tokens[:, :-1])[mask].float().mean().item()
    return right, current


def icl_positions(seq_len: int) -> tuple[int, int]:
    """``(early, late)``: the loss positions the book's ICL score compares, for sequences of ``seq_len`` tokens.

    Position ``p`` of a per-token loss predicts ``tokens[:, p + 1]``, so these are the predictions of
    ``tokens[:, 2]`` (the second token after BOS, the first with a content token before it) and of the last token.
    """
    validate.int_at_least("seq_len", seq_len, 4, "BOS, then an early and a later prediction")
    return 1, seq_len - 2


def masked_mean(loss: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of a per-token loss over the entries where ``mask`` is True (e.g. the repeated tokens).

    Args:
        loss: ``(..., batch, seq - 1)``, e.g. stacked over checkpoints or ablations.
        mask: ``(batch, seq - 1) bool``, e.g. :func:`lib.induction.sequences.repeat_mask`; use ``~mask`` for the rest.

    Returns:
        ``loss.shape[:-2]`` (a scalar for a single loss matrix).
    """
    validate.float_tensor("loss", loss, "(..., batch, seq - 1)", 2)
    if mask.dtype != torch.bool or loss.shape[-2:] != mask.shape:
        raise ValueError(
            f"mask must be a bool tensor of the loss's last two axes {tuple(loss.shape[-2:])}, "
            f"got {mask.dtype} {tuple(mask.shape)}"
        )
    if not mask.any():
        raise ValueError("mask selects no entry: the mean is undefined")
    return loss[..., mask].mean(dim=-1)


Band = int | range
"""Loss positions of one term of the ICL score: one position, or a range of positions whose mean is taken."""


def _band(name: str, band: Band, n: int) -> range:
    if isinstance(band, range):
        if band.step != 1 or len(band) == 0 or band.start < 0 or band.stop > n:
            raise ValueError(f"{name} must be a non-empty range of loss positions within 0 .. {n - 1}, got {band!r}")
        return band
    position = validate.index(name, band, n)
    return range(position, position + 1)


def icl_per_sequence(loss: torch.Tensor, early: Band, late: Band) -> torch.Tensor:
    """Each sequence's in-context-learning score: its mean loss over ``late`` minus its mean loss over ``early``.

    Negative means in-context learning (later tokens are predicted better); see the module docstring. Chapters
    5-7 compare two positions (:func:`icl_positions`), chapter 8 two bands of positions
    (:data:`lib.induction.natural.probes.EARLY`, :data:`~lib.induction.natural.probes.LATE`).

    Args:
        loss: ``(..., batch, seq - 1)`` per-token loss (e.g. stacked over checkpoints or ablations), or a
            ``(seq - 1,)`` loss by position.
        early, late: a loss position or a range of them; ``early`` lies wholly before ``late``.

    Returns:
        ``loss.shape[:-1]``: one score per sequence (a scalar for a ``(seq - 1,)`` loss).
    """
    n = validate.float_tensor("loss", loss, "(..., batch, seq - 1) or (seq - 1,)", 1).shape[-1]
    first, second = _band("early", early, n), _band("late", late, n)
    if not first.stop <= second.start:
        raise ValueError(f"early must lie before late, got early={early!r}, late={late!r}")
    return loss[..., second].mean(-1) - loss[..., first].mean(-1)


def icl_score(loss: torch.Tensor, early: Band, late: Band) -> torch.Tensor:
    """The in-context-learning score: :func:`icl_per_sequence` averaged over the sequences.

    Returns:
        ``loss.shape[:-2]`` (a scalar for a single loss matrix, or for a ``(seq - 1,)`` loss by position).
    """
    per_sequence = icl_per_sequence(loss, early, late)
    return per_sequence if loss.ndim == 1 else per_sequence.mean(-1)


def attention_patterns(model: TransformerBridge, tokens: torch.Tensor) -> torch.Tensor:
    """Every head's attention pattern.

    Returns:
        ``(n_layers, batch, n_heads, query, key)``; rows sum to 1 over the keys.
    """
    _model_tokens(model, tokens)
    names = [f"blocks.{layer}.attn.hook_pattern" for layer in range(model.cfg.n_layers)]
    with torch.inference_mode():
        _, cache = model.run_with_cache(tokens, names_filter=lambda name: name in names)
    return torch.stack([cache[name] for name in names])


def _check_pattern(pattern: torch.Tensor, tokens: torch.Tensor | None = None) -> None:
    validate.float_tensor("pattern", pattern, "(..., batch, heads, query, key)", 4)
    if pattern.shape[-1] != pattern.shape[-2]:
        raise ValueError(
            f"pattern must be (..., batch, heads, query, key) with query == key, got shape {tuple(pattern.shape)}"
        )
    if tokens is not None and (tokens.shape[0] != pattern.shape[-4] or tokens.shape[1] != pattern.shape[-1]):
        batch_seq = (pattern.shape[-4], pattern.shape[-1])
        raise ValueError(f"tokens {tuple(tokens.shape)} do not match pattern (batch, seq) {batch_seq}")


def prefix_matching_mask(tokens: torch.Tensor) -> torch.Tensor:
    """Where an induction head should look: keys that follow an earlier occurrence of the query's token.

    ``mask[b, i, j]`` is True when ``1 <= j <= i`` and ``tokens[b, j - 1] == tokens[b, i]``.

    Returns:
        ``(batch, seq, seq) bool``: key ``j`` follows an earlier occurrence of query ``i``'s token.
    """
    batch, seq = validate.token_batch(tokens).shape
    same = tokens[:, None, :-1] == tokens[:, :, None]  # (batch, i, j - 1)
    mask = torch.zeros(batch, seq, seq, dtype=torch.bool, device=tokens.device)
    mask[:, :, 1:] = same
    return mask & torch.ones(seq, seq, dtype=torch.bool, device=tokens.device).tril()


def prefix_matching_score(pattern: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Mean attention from each token to the tokens that followed its earlier occurrences.

    Averaged over the query positions that have an earlier occurrence (others are skipped).

    Args:
        pattern: ``(..., batch, heads, query, key)`` attention, e.g. from :func:`attention_patterns`.
        tokens: ``(batch, seq) int64``, the tokens the pattern was computed on.

    Returns:
        ``(..., heads)``, each in ``[0, 1]``.
    """
    _check_pattern(pattern, validate.token_batch(tokens))
    mask = prefix_matching_mask(tokens)  # (batch, q, k)
    has_match = mask.any(dim=-1)  # (batch, q)
    if not has_match.any():
        raise ValueError("no token in `tokens` occurs twice: the prefix-matching score is undefined")
    attended = (pattern * mask[:, None].to(pattern.dtype)).sum(dim=-1)  # (..., batch, heads, q)
    weights = has_match[:, None, :].to(pattern.dtype)
    return (attended * weights).sum(dim=-1).sum(dim=-2) / has_match.sum()


def previous_token_score(pattern: torch.Tensor) -> torch.Tensor:
    """Mean attention from each position ``i >= 1`` to position ``i - 1``.

    Args:
        pattern: ``(..., batch, heads, query, key)``.

    Returns:
        ``(..., heads)``, each in ``[0, 1]``.
    """
    _check_pattern(pattern)
    if pattern.shape[-1] < 2:
        raise ValueError("the previous-token score needs sequences of at least 2 tokens")
    diagonal = pattern.diagonal(offset=-1, dim1=-2, dim2=-1)  # (..., batch, heads, seq - 1)
    return diagonal.mean(dim=(-3, -1))


def ov_logits(model: TransformerBridge, tokens: torch.Tensor) -> torch.Tensor:
    """Each head's direct effect on the logits when it attends to a token: ``W_E[t] W_V W_O W_U``.

    Args:
        tokens: ``(n,) int64``.

    Returns:
        ``(n_layers, n_heads, n, vocab)``; the model has no LayerNorm, so this is exactly what the head
        adds to the logits (biases aside) when it puts all its attention on a token ``t``.
    """
    validate.token_range(validate.token_ids(tokens, ("n",)), model.W_E.shape[0])
    with torch.inference_mode():
        embed = model.W_E[tokens]  # (n, d_model)
        ov = torch.einsum("nd,lhde,lhef->lhnf", embed, model.W_V, model.W_O)
        return ov @ model.W_U


def copying_score(model: TransformerBridge, tokens: torch.Tensor) -> torch.Tensor:
    """How much each head's OV circuit raises the logit of the token it reads, relative to the others.

    For each token ``t``: take the head's direct logits ``l = W_E[t] W_V W_O W_U``, centre them over
    the vocabulary, and divide ``l[t] - mean(l)`` by the largest absolute centred logit. Averaged over
    the tokens. A signed version of Olsson et al.'s copying measure: ``1`` = the head's largest effect
    is to raise ``t`` itself, ``0`` = no preference, ``-1`` = it suppresses ``t`` the most.

    Args:
        tokens: ``(n,) int64`` content tokens (Olsson et al. use 25 random ones).

    Returns:
        ``(n_layers, n_heads)`` in ``[-1, 1]``.
    """
    return copying_of_logits(ov_logits(model, tokens), tokens)


def copying_of_logits(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """:func:`copying_score` from heads' direct logits: centre each token's logits over the vocabulary, divide
    the token's own by the largest absolute one, average over the tokens.

    Args:
        logits: ``(..., n, vocab)``: what each head adds to the logits when it reads token ``tokens[i]``.
        tokens: ``(n,) int64``, the tokens read.

    Returns:
        ``logits.shape[:-2]`` in ``[-1, 1]``.
    """
    validate.token_ids(tokens, ("n",))
    validate.float_tensor("logits", logits, "(..., n, vocab)", 2)
    if logits.shape[-2] != tokens.shape[0]:
        raise ValueError(f"logits (..., n, vocab) {tuple(logits.shape)} do not match tokens (n,) {tuple(tokens.shape)}")
    validate.token_range(tokens, logits.shape[-1])
    centred = logits - logits.mean(dim=-1, keepdim=True)
    own = centred.gather(-1, tokens.view(-1, 1).expand(*centred.shape[:-1], 1))[..., 0]
    scale = centred.abs().amax(dim=-1).clamp_min(1e-12)
    return (own / scale).mean(dim=-1)


def head_scores(
    model: TransformerBridge, prefix_tokens: torch.Tensor, train_tokens: torch.Tensor, copy_tokens: torch.Tensor
) -> dict[ScoreName, torch.Tensor]:
    """The three scores of every head (:data:`SCORE_NAMES`).

    Args:
        prefix_tokens: ``(batch, seq)`` a repeated random segment after BOS (prefix matching).
        train_tokens: ``(batch, seq)`` a sample of the training distribution (previous token).
        copy_tokens: ``(n,)`` random content tokens (copying).

    Returns:
        ``{"prefix matching", "copying", "previous token"}`` -> ``(n_layers, n_heads)`` on the CPU.
    """
    return {
        "prefix matching": prefix_matching_score(attention_patterns(model, prefix_tokens), prefix_tokens).cpu(),
        "copying": copying_score(model, copy_tokens).cpu(),
        "previous token": previous_token_score(attention_patterns(model, train_tokens)).cpu(),
    }


def is_induction_head(
    prefix_matching: torch.Tensor,
    copying: torch.Tensor,
    threshold: float = INDUCTION_THRESHOLD,
    copying_threshold: float = COPYING_THRESHOLD,
) -> torch.Tensor:
    """The classifier: prefix matching ``>= threshold`` and copying ``>= copying_threshold`` (element-wise ``bool``).

    ``copying_threshold`` defaults to :data:`COPYING_THRESHOLD`, five standard deviations above the copying score of
    random heads, where ``copying > 0`` would accept about half of them.
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    if not 0 < copying_threshold <= 1:
        raise ValueError(f"copying_threshold must be in (0, 1], got {copying_threshold!r}")
    return (prefix_matching >= threshold) & (copying >= copying_threshold)


def induction_heads(
    scores: Mapping[ScoreName, torch.Tensor],
    threshold: float = INDUCTION_THRESHOLD,
    copying_threshold: float = COPYING_THRESHOLD,
) -> list[tuple[int, int]]:
    """The induction heads, layer by layer: prefix matching ``>= threshold`` and copying ``>= copying_threshold``.

    Args:
        scores: :func:`head_scores` of one model: ``"prefix matching"`` and ``"copying"``, ``(n_layers, n_heads)``.
        threshold: the prefix-matching threshold, in ``(0, 1]``.
        copying_threshold: the copying threshold, in ``(0, 1]``; the default sits five standard deviations above
            the copying score of random heads (:data:`COPYING_THRESHOLD`), where ``copying > 0`` would accept
            about half of them.

    Returns:
        ``[(layer, head), ...]``.
    """
    found = is_induction_head(scores["prefix matching"], scores["copying"], threshold, copying_threshold)
    if found.ndim != 2:
        raise ValueError(f"scores must be (n_layers, n_heads), got shape {tuple(found.shape)}")
    return [(layer, head) for layer, head in found.nonzero().tolist()]


def over_checkpoints(
    model: nn.Module,
    checkpoints: Mapping[int, dict[str, torch.Tensor]],
    measure: Callable[[nn.Module], T],
    steps: Iterable[int] | None = None,
) -> tuple[list[int], list[T]]:
    """Load each checkpoint into ``model`` (in step order) and call ``measure(model)``.

    Leaves ``model`` holding the last checkpoint measured.

    Returns:
        ``(steps, results)``, two lists in step order.
    """
    chosen = sorted(checkpoints) if steps is None else list(steps)
    missing = [s for s in chosen if s not in checkpoints]
    if missing:
        raise ValueError(f"no checkpoint at steps {missing}; available: {sorted(checkpoints)}")
    was_training = model.training
    model.eval()
    results = []
    for step in chosen:
        model.load_state_dict(checkpoints[step])
        with torch.inference_mode():
            results.append(measure(model))
    model.train(was_training)
    return chosen, results
