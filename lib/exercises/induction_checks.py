"""Checks of the exercises of Part II, induction heads (chapters 5-8)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch

from lib.exercises.framework import CheckFailed, compare, kind_of
from lib.induction.natural.probes import induction_guess, share_interval

if TYPE_CHECKING:
    from lib.induction.ablation import Kind, Replacement


def _small_two_layer_model() -> tuple[Any, torch.Tensor]:
    """A small two-layer model with random weights and a batch of repeated sequences, for the ablation checks.

    Weights of std 0.3 give attention sharp enough that a layer-0 head moves layer-1 patterns (so that a full and a
    pattern-preserving ablation, or a cut of the keys and of the queries, give different answers).
    """
    from lib.induction import models, sequences

    config = sequences.InductionConfig(
        n_layers=2, n_heads=2, d_model=32, d_head=8, vocab=20, seq_len=17, max_repeat=8, prefix_segment=4, init_std=0.3
    )
    # Any: a TransformerBridge, whose methods (reset_hooks) mypy cannot see through nn.Module's __getattr__.
    model: Any = models.make_model(config, seed=1)
    model.eval()
    return model, sequences.repeated_sequences(4, sequences.seeded_generator(2), config)[0]


def _no_hook_left(name: str, model: Any, learner: Callable[..., Any]) -> Callable[..., Any]:
    """``learner(model, *args)``, failing if it leaves a hook on ``model`` beyond those the model had (a smeared model
    keeps its smearing hooks for good)."""
    from lib.induction.ablation import hooks_on

    before = hooks_on(model, include_permanent=True)

    def run(*args: Any) -> Any:
        try:
            return learner(model, *args)
        finally:
            left = hooks_on(model, include_permanent=True) - before
            if left:
                # a model with no hooks of its own is cleaned completely; otherwise its permanent hooks stay
                model.reset_hooks(including_permanent=before == 0)
                raise CheckFailed(
                    f"{name}: {left} hook(s) left on the model after the call with {', '.join(map(repr, args))}; "
                    "add hooks with `with model.hooks(fwd_hooks=...)` so they are removed"
                )

    return run


def check_prefix_matching_score(learner: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Exercise: ``prefix_matching_score(pattern (batch, heads, q, k), tokens (batch, seq)) -> (heads,)``."""
    from lib.induction.scores import prefix_matching_score

    g = torch.Generator().manual_seed(5)
    cases = []
    for batch, heads, seq, vocab in ((1, 1, 6, 3), (2, 3, 12, 5), (4, 2, 20, 8)):
        tokens = torch.randint(0, vocab, (batch, seq), generator=g)
        tokens[:, -1] = tokens[:, 0]  # at least one repeat per row
        scores = torch.randn(batch, heads, seq, seq, generator=g).masked_fill(
            torch.ones(seq, seq, dtype=torch.bool).triu(1), float("-inf")
        )
        cases.append((scores.softmax(-1), tokens))
    compare("prefix_matching_score", learner, prefix_matching_score, cases)


def _hand_built_behaviour(head_weights: dict[str, torch.Tensor], layer: int, layout: Any, strength: float) -> dict:
    """What chapter 5's hand-built model does with ``head_weights`` as the head of ``layer`` (the book's head in the
    other layer), on repeated sequences: the head's attention pattern ``(batch, query, key)`` and what its layer
    writes into the residual stream ``(batch, seq, d_model)``."""
    from lib.induction import handbuilt, sequences

    config = handbuilt.hand_built_config(layout.vocab, layout.seq_len)
    model: Any = handbuilt.blank_model(config, layout, strength)
    heads = {
        0: handbuilt.previous_token_head_weights(layout, strength),
        1: handbuilt.induction_head_weights(layout, strength),
    }
    heads[layer] = head_weights
    for at, weights in heads.items():
        handbuilt.set_head(model, at, 0, **weights)
    tokens = sequences.repeated_sequences(4, sequences.seeded_generator(layout.vocab), config)[0]
    names = (f"blocks.{layer}.attn.hook_pattern", f"blocks.{layer}.hook_attn_out")
    with torch.inference_mode():
        _, cache = model.run_with_cache(tokens, names_filter=lambda name: name in names)
    return {"attention pattern": cache[names[0]][:, 0], "what the layer writes": cache[names[1]]}


def _check_weight_shapes(name: str, got: Any, expected: dict[str, torch.Tensor], case: str) -> None:
    """The learner's head weights have the reference's keys and shapes (plus, if wanted, the query and key biases
    ``b_Q`` and ``b_K`` that :func:`lib.induction.handbuilt.set_head` also takes), or a :class:`CheckFailed` that says
    which not."""
    if not isinstance(got, dict):
        raise CheckFailed(
            f"{name}: return a dict of weights with keys {sorted(expected)}, got {kind_of(got)} (for {case})"
        )
    d_head = expected["W_Q"].shape[1]
    shapes = {key: tuple(value.shape) for key, value in expected.items()} | {"b_Q": (d_head,), "b_K": (d_head,)}
    missing, unknown = sorted(set(expected) - set(got)), sorted(set(got) - set(shapes))
    if missing or unknown:
        raise CheckFailed(
            f"{name}: return a dict with keys {sorted(expected)} (b_Q, b_K allowed), got {sorted(got)} (for {case})"
        )
    for key, value in got.items():
        shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
        if shape != shapes[key]:
            raise CheckFailed(f"{name}: your {key} has shape {shape}, expected {shapes[key]} (for {case})")


def _check_hand_built_head(name: str, learner: Callable[..., dict], reference: Callable[..., dict], layer: int) -> None:
    """``learner(layout, strength)`` against ``reference`` on three layouts, weak and strong attention, by what the
    head does in the hand-built model (its attention pattern and what it writes), not by its exact weights: an
    equivalent circuit (e.g. the shift by one position on the query side instead of the key side) passes."""
    from lib.induction.handbuilt import HandBuiltLayout

    def behaviour(heads: Callable[..., dict], mine: bool) -> Callable[..., dict]:
        def run(layout: Any, strength: float) -> dict:
            weights = heads(layout, strength)
            if mine:
                _check_weight_shapes(name, weights, reference(layout, strength), f"{layout}, strength {strength}")
            return _hand_built_behaviour(weights, layer, layout, strength)

        return run

    cases = [
        (HandBuiltLayout(vocab, seq), strength)
        for vocab, seq, strength in ((5, 8, 1.0), (12, 10, 20.0), (32, 45, 20.0))
    ]
    compare(name, behaviour(learner, True), behaviour(reference, False), cases, atol=1e-4)


def check_previous_token_head(learner: Callable[..., dict]) -> None:
    """Exercise: ``previous_token_head_weights(layout, strength) -> {"W_Q", "W_K", "W_V", "W_O"}``, judged by the
    head's attention and what it writes in layer 0 of the hand-built model."""
    from lib.induction.handbuilt import previous_token_head_weights

    _check_hand_built_head("previous_token_head_weights", learner, previous_token_head_weights, layer=0)


def check_induction_head(learner: Callable[..., dict]) -> None:
    """Chapter 5: ``induction_head_weights(layout, strength) -> {"W_Q", "b_Q", "W_K", "W_V", "W_O"}``, judged by the
    head's attention and what it writes in layer 1 of the hand-built model."""
    from lib.induction.handbuilt import induction_head_weights

    _check_hand_built_head("induction_head_weights", learner, induction_head_weights, layer=1)


def check_olsson_copying_score(learner: Callable[[Any, torch.Tensor], torch.Tensor]) -> None:
    """Chapter 5: ``olsson_copying_score(model, tokens (batch, seq)) -> (n_layers, n_heads)``.

    On a small random two-layer model, whose layer-1 heads read a residual stream that layer 0 wrote to, and whose
    value biases are not zero.
    """
    from lib.core.tokens import BOS
    from lib.induction.circuits import olsson_copying_score

    model, _ = _small_two_layer_model()
    with torch.no_grad():
        model.blocks[1].attn.v.bias.normal_(0.0, 0.3, generator=torch.Generator().manual_seed(3))
    g = torch.Generator().manual_seed(4)
    cases = []
    for batch, seq in ((1, 6), (3, 11), (2, 17)):
        tokens = torch.randint(1, model.cfg.d_vocab, (batch, seq), generator=g)
        tokens[:, 0] = BOS
        cases.append((model, tokens))
    compare("olsson_copying_score", learner, olsson_copying_score, cases, atol=1e-4)


def check_repeat_mask(learner: Callable[[torch.Tensor, Any], torch.Tensor]) -> None:
    """Chapter 5: ``repeat_mask(period (batch,), config) -> (batch, config.seq_len - 1) bool``."""
    from lib.induction import sequences

    g = torch.Generator().manual_seed(10)
    cases = []
    for seq_len, low, high, batch in ((11, 2, 5, 3), (49, 5, 24, 6), (30, 3, 14, 8)):
        config = sequences.InductionConfig(seq_len=seq_len, min_repeat=low, max_repeat=high, prefix_segment=2)
        period = torch.randint(low, high + 1, (batch,), generator=g)
        period[0] = low
        cases.append((period, config))
    compare("repeat_mask", learner, sequences.repeat_mask, cases)


def check_previous_token_score(learner: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Chapter 5: ``previous_token_score(pattern (batch, heads, query, key)) -> (heads,)``."""
    from lib.induction.scores import previous_token_score

    g = torch.Generator().manual_seed(11)
    cases = []
    for batch, heads, seq in ((1, 1, 4), (2, 3, 9), (5, 4, 16)):
        logits = 2 * torch.randn(batch, heads, seq, seq, generator=g)
        logits = logits.masked_fill(torch.ones(seq, seq, dtype=torch.bool).triu(1), float("-inf"))
        cases.append((logits.softmax(-1),))
    compare("previous_token_score", learner, previous_token_score, cases)


def check_smear_keys(learner: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Exercise: ``smear_keys(keys (batch, seq, heads, d_head), sigma (heads,)) -> (batch, seq, heads, d_head)``."""
    from lib.induction.smear import smear_keys

    g = torch.Generator().manual_seed(6)
    cases = []
    for batch, seq, heads, d_head, sigma in (
        (1, 4, 1, 2, [0.0]),
        (2, 5, 3, 4, [1.0, 0.0, 0.3]),
        (3, 1, 2, 3, [0.5, 0.2]),
        (2, 9, 4, 8, None),
    ):
        keys = torch.randn(batch, seq, heads, d_head, generator=g)
        weights = torch.rand(heads, generator=g) if sigma is None else torch.tensor(sigma)
        cases.append((keys, weights))
    compare("smear_keys", learner, smear_keys, cases)


def check_run_with_smear(learner: Callable[[Any, torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Chapter 6: ``run_with_smear(model, tokens (batch, seq), alpha (n_layers, n_heads)) -> logits``.

    On a small plain two-layer model, against the same model with :func:`lib.induction.smear.attach_smear`; fails if a
    hook is left on the model.
    """
    from lib.induction import smear

    model, tokens = _small_two_layer_model()
    g = torch.Generator().manual_seed(5)
    alphas = [torch.zeros(2, 2), torch.tensor([[-2.0, 1.0], [0.5, -1.0]]), 3 * torch.randn(2, 2, generator=g)]
    learners = _no_hook_left("run_with_smear", model, learner)
    compare(
        "run_with_smear",
        lambda alpha: learners(tokens, alpha),
        lambda alpha: smear.run_with_smear(model, tokens, alpha),
        [(alpha,) for alpha in alphas],
        atol=1e-4,
    )


def check_prediction_shares(learner: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], Any]) -> None:
    """Chapter 6: ``prediction_shares(logits (batch, seq, vocab), tokens (batch, seq), mask (batch, seq - 1))``
    -> ``(right, current)``."""
    from lib.induction.scores import prediction_shares

    g = torch.Generator().manual_seed(7)
    cases = []
    for batch, seq, vocab in ((1, 5, 4), (3, 9, 5), (8, 20, 6)):
        tokens = torch.randint(0, vocab, (batch, seq), generator=g)
        logits = torch.randn(batch, seq, vocab, generator=g)
        # make the current and the next token likely guesses, so that both shares are far from 0
        logits.scatter_add_(-1, tokens[:, :, None], 1.5 * torch.rand(batch, seq, 1, generator=g))
        logits[:, :-1].scatter_add_(-1, tokens[:, 1:, None], 1.5 * torch.rand(batch, seq - 1, 1, generator=g))
        mask = torch.rand(batch, seq - 1, generator=g) < 0.6
        mask[0, -1] = True
        cases.append((logits, tokens, mask))
    compare("prediction_shares", learner, prediction_shares, cases)


def check_smeared_induction_head(learner: Callable[..., dict]) -> None:
    """Chapter 6: ``smeared_induction_head_weights(layout, strength)``, judged by what the head does.

    The weights go into :func:`lib.induction.smear.hand_built_model` (one layer, keys fully smeared); on sequences whose
    segment repeats, the model must predict every repeated token (the argmax is the next token) with a loss below
    0.01 nats on the repeated tokens. Any weights that do this pass.
    """
    from dataclasses import replace

    from lib.induction import handbuilt, models, scores, sequences, smear

    def run(vocab: int, seq: int, period: int, head: dict | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        model = smear.hand_built_model(vocab, seq, head=head)
        config = replace(models.config_of(model), min_repeat=period, max_repeat=period)
        tokens, periods = sequences.repeated_sequences(16, sequences.seeded_generator(vocab), config)
        mask = sequences.repeat_mask(periods, config)
        with torch.inference_mode():
            logits = model(tokens)
        return logits, tokens, mask

    cases = [(12, 20, 5), (32, 45, 15), (20, 33, 11)]

    def learners(layout: Any) -> dict:
        weights = learner(layout, 20.0)
        expected = smear.hand_built_head_weights(layout, 20.0)
        _check_weight_shapes("smeared_induction_head_weights", weights, expected, f"{layout}, strength 20.0")
        return weights

    def predicted(vocab: int, seq: int, period: int) -> torch.Tensor:
        logits, tokens, mask = run(vocab, seq, period, learners(handbuilt.HandBuiltLayout(vocab, seq)))
        return logits[:, :-1].argmax(-1)[mask]

    def answers(vocab: int, seq: int, period: int) -> torch.Tensor:
        _, tokens, mask = run(vocab, seq, period, None)
        return tokens[:, 1:][mask]

    compare("smeared_induction_head_weights", predicted, answers, cases)  # the predicted repeated tokens
    for vocab, seq, period in cases:
        logits, tokens, mask = run(vocab, seq, period, learners(handbuilt.HandBuiltLayout(vocab, seq)))
        loss = scores.masked_mean(scores.next_token_loss(logits, tokens), mask).item()
        if not loss < 0.01:
            raise CheckFailed(
                f"smeared_induction_head_weights: vocab {vocab}, seq_len {seq}, period {period}: the repeated tokens "
                f"are predicted, but with a loss of {loss:.3f} nats (want < 0.01): is the attention sharp enough "
                "(strength)?"
            )
    print("PASSED smeared_induction_head_weights: repeated-token loss < 0.01 nats.")


def check_sigma_trajectory(learner: Callable[[dict, Sequence[int]], torch.Tensor]) -> None:
    """Chapter 6: ``sigma_trajectory(checkpoints {step: state dict}, steps) -> (len(steps), n_layers, n_heads)``.

    On made-up checkpoints of a smeared model (its ``smear.alpha`` among other weights), read at some of the stored
    steps, not all, and not in the dictionary's order.
    """
    from lib.induction import smear

    g = torch.Generator().manual_seed(12)
    cases = []
    for layers, heads, stored, wanted in (
        (1, 1, [0, 10], [0, 10]),
        (2, 3, [0, 10, 20, 30], [10, 30]),
        (1, 4, [5, 0, 15], [0, 5, 15]),
    ):
        checkpoints = {
            step: {
                "embed.W_E": torch.randn(5, 4, generator=g),
                smear.STATE_KEY: 2 * torch.randn(layers, heads, generator=g),
                "blocks.0.attn.b_O": torch.randn(4, generator=g),
            }
            for step in stored
        }
        cases.append((checkpoints, wanted))
    compare(
        "sigma_trajectory",
        learner,
        smear.sigma_trajectory,
        cases,
    )


def check_half_change_step(learner: Callable[[Sequence[int], torch.Tensor], int]) -> None:
    """Chapter 6: ``half_change_step(steps, values (K,)) -> step``, on falling, rising and wiggling curves."""
    from lib.induction.dynamics import half_change_step

    cases = [
        ([0, 10, 20, 30, 40], torch.tensor([0.5, 0.45, 0.3, 0.1, 0.05])),  # falling, like sigma
        ([0, 20, 40, 60], torch.tensor([4.0, 4.0, 1.0, 0.1])),  # falling, like the loss
        ([0, 10, 20, 30, 40, 50], torch.tensor([0.0, 0.1, 0.6, 0.9, 0.8, 1.0])),  # rising, like a score
        ([0, 10, 20, 30, 40, 50], torch.tensor([0.5, 0.3, 0.0, 0.15, 0.2, 0.2])),  # overshoots the end, then comes back
        ([5, 15, 25], torch.tensor([1.0, 0.5, 0.0])),  # exactly half at the middle step
    ]
    compare("half_change_step", learner, half_change_step, cases)


def check_icl_score(learner: Callable[[torch.Tensor, int, int], torch.Tensor]) -> None:
    """Chapter 7: ``icl_score(loss (..., batch, seq - 1), early, late) -> loss.shape[:-2]``."""
    from lib.induction.scores import icl_score

    g = torch.Generator().manual_seed(8)
    cases = [
        (torch.tensor([[4.0, 4.0, 1.0, 0.5]]), 0, 3),  # learns in context: negative
        (torch.rand(5, 12, generator=g) * 4, 1, 10),
        (torch.rand(3, 6, 20, generator=g) * 4, 1, 19),  # stacked: one score per ablation
        (torch.rand(2, 4, 8, 9, generator=g), 0, 8),
    ]
    compare("icl_score", learner, icl_score, cases)


def _check_ablation(
    name: str, learner: Callable[..., torch.Tensor], kind: Kind, replacement: Replacement = "zero"
) -> None:
    """``learner(model, tokens, layer, head)`` against :func:`lib.induction.ablation.ablated_loss` of one head, on a
    small random two-layer model, for heads of both layers (in layer 0 a full and a pattern-preserving ablation
    differ, and so do a zero and a mean ablation); fails if a hook is left on the model."""
    from lib.induction import ablation

    model, tokens = _small_two_layer_model()
    learners = _no_hook_left(name, model, learner)
    compare(
        name,
        lambda layer, head: learners(tokens, layer, head),
        lambda layer, head: ablation.ablated_loss(model, tokens, [(layer, head)], kind, replacement=replacement),
        [(0, 0), (0, 1), (1, 1)],
        atol=1e-4,
    )


def check_full_ablation(learner: Callable[..., torch.Tensor]) -> None:
    """Chapter 7: ``full_ablation(model, tokens (batch, seq), layer, head)``, the per-token loss ``(batch, seq - 1)``
    with the head's ``z`` set to zero and nothing else touched."""
    _check_ablation("full_ablation", learner, "full")


def check_pattern_preserving_ablation(learner: Callable[..., torch.Tensor]) -> None:
    """Chapter 7: ``pattern_preserving_ablation(model, tokens (batch, seq), layer, head)``, the per-token loss
    ``(batch, seq - 1)`` with the head's ``z`` set to zero and every attention pattern kept as in the clean run."""
    _check_ablation("pattern_preserving_ablation", learner, "pattern-preserving")


def check_qk_from_embeddings(learner: Callable[..., torch.Tensor]) -> None:
    """Chapter 7: ``qk_from_embeddings(model, tokens (batch, seq), sides) -> logits (batch, seq, vocab)``.

    Layer 1's keys and/or queries (``sides``, a tuple of ``"keys"``, ``"queries"``) computed from the embeddings
    alone; on a small random two-layer model with non-zero query and key biases; fails if a hook is left on the model.
    """
    from lib.induction.circuits import run_with_qk_from_embeddings

    model, tokens = _small_two_layer_model()
    g = torch.Generator().manual_seed(9)
    with torch.no_grad():
        for linear in (model.blocks[1].attn.q, model.blocks[1].attn.k):
            linear.bias.normal_(0.0, 0.5, generator=g)
    learners = _no_hook_left("qk_from_embeddings", model, learner)
    compare(
        "qk_from_embeddings",
        lambda sides: learners(tokens, sides),
        lambda sides: run_with_qk_from_embeddings(model, tokens, sides)[0],
        [((),), (("keys",),), (("queries",),), (("keys", "queries"),)],
        atol=1e-4,
    )


def check_fraction_removed(learner: Callable[[Any, torch.Tensor], torch.Tensor]) -> None:
    """Chapter 7: ``fraction_removed(clean (float or tensor), ablated (tensor)) -> tensor``: ``1 - ablated / clean``."""
    from lib.induction.ablation import fraction_removed

    cases = [
        (-4.0, torch.tensor([-4.0, -2.0, 0.0, 0.5])),  # intact, half, all of it, beyond
        (-3.2, torch.tensor([[-3.0, -0.1], [-3.5, -1.6]])),
        (torch.tensor([-2.0, -1.0]), torch.tensor([-1.5, -0.25])),
        (2.0, torch.tensor([1.0, 3.0])),  # a positive score
    ]
    compare("fraction_removed", learner, fraction_removed, cases)


def check_mean_ablation(learner: Callable[..., torch.Tensor]) -> None:
    """Chapter 7: ``mean_ablation(model, tokens (batch, seq), layer, head)``, the per-token loss ``(batch, seq - 1)``
    with the head's ``z`` replaced by its mean over the batch, position by position."""
    _check_ablation("mean_ablation", learner, "full", replacement="mean")


def check_icl_per_window(learner: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Chapter 8: ``icl_per_window(loss (..., batch, 255)) -> (..., batch)``: each window's mean loss over
    :data:`lib.induction.natural.probes.LATE` minus its mean loss over :data:`lib.induction.natural.probes.EARLY`."""
    from lib.induction.natural import probes

    g = torch.Generator().manual_seed(80)
    falling = torch.linspace(6.0, 1.0, 255)[None]  # later tokens easier: negative
    cases = [
        (falling,),
        (torch.rand(5, 255, generator=g) * 6,),
        (torch.rand(3, 4, 255, generator=g) * 6,),  # stacked: one row per model or ablation
        (torch.rand(2, 2, 3, 255, generator=g) * 6,),
    ]
    compare("icl_per_window", learner, probes.icl_per_window, cases)


def check_induction_guess(learner: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Chapter 8: ``induction_guess(tokens (batch, seq)) -> (batch, seq) int64`` (:func:`induction_guess`)."""
    g = torch.Generator().manual_seed(81)
    cases = [
        # 5 occurs at 1, 4 and 7, followed by 6 then 8: the most recent one counts; 9 and 0 are new
        (torch.tensor([[0, 5, 6, 9, 5, 8, 3, 5, 6]]),),
        (torch.tensor([[0, 1, 1, 1, 2, 1]]),),  # a run of one token: it follows itself
        (torch.randint(1, 6, (3, 20), generator=g),),  # small vocabulary: many repeats
        (torch.randint(0, 40, (4, 32), generator=g),),
    ]
    compare("induction_guess", learner, induction_guess, cases)


def check_ablate_head(learner: Callable[..., torch.Tensor]) -> None:
    """Chapter 8: ``ablate_head(model, tokens (batch, 256), layer, head)``, the per-token loss ``(batch, 255)`` with
    the head's ``z`` set to zero.

    On the shipped smeared one-layer model and 4 held-out windows, for three heads; fails if a hook is left on the
    model.
    """
    from lib.induction import ablation
    from lib.induction.natural import corpus, runs

    run = runs.load_run("one layer, smeared")
    model = run.model_at(max(run.checkpoints))
    tokens = corpus.tiled_windows(corpus.held_out_ids())[:4]
    learners = _no_hook_left("ablate_head", model, learner)
    compare(
        "ablate_head",
        lambda layer, head: learners(tokens, layer, head),
        lambda layer, head: ablation.ablated_losses(model, tokens, [[(layer, head)]])[0],
        [(0, 0), (0, 3), (0, 6)],
        atol=1e-4,
    )


def check_share_interval(learner: Callable[..., tuple[float, float]]) -> None:
    """Chapter 8: ``share_interval(intact (batch,), ablated (batch,), level, samples, seed) -> (low, high)``.

    Any random number generator will do, so the ends are compared with :func:`share_interval` within 0.02: in these
    cases a paired percentile bootstrap with another generator (numpy's, 20 seeds) lands within 0.007 of it, while
    resampling the two sides independently widens the first case's interval five-fold (each end moves by 0.05), and
    not resampling at all shrinks every interval to a point (0.07 inside each end of the second case).
    """
    g = torch.Generator().manual_seed(84)

    def windows(batch: int, mean: float, kept: float, noise: float) -> tuple[torch.Tensor, torch.Tensor]:
        # windows differ a lot; the ablation keeps a share of each window's own score, plus a little noise
        intact = mean + 0.6 * torch.randn(batch, generator=g)
        return intact, kept * intact + noise * torch.randn(batch, generator=g)

    cases = [
        (*windows(200, -0.5, 0.3, 0.05), 0.9, 2000, 0),
        (*windows(300, -0.4, 0.0, 0.3), 0.9, 2000, 1),  # all of it removed: an interval around 1
        (*windows(150, -0.6, 0.6, 0.1), 0.5, 2000, 2),
        (*windows(400, -0.3, -0.2, 0.3), 0.8, 4000, 3),  # beyond 1: the ablation reverses the sign
    ]
    compare("share_interval", learner, share_interval, cases, atol=0.02, rtol=0.0)


def check_onset_tokens(learner: Callable[[Sequence[int], torch.Tensor, int, int], int | None]) -> None:
    """Chapter 10: ``onset_tokens(steps, repeated_loss (K,), batch_size, seq_len) -> tokens or None``."""
    from lib.induction.sizes import onset_tokens

    cases = [
        ([0, 20, 40, 60], torch.tensor([4.1, 3.8, 0.6, 0.1]), 32, 49),  # a phase change at step 40
        ([0, 20, 40, 60], torch.tensor([4.1, 3.8, 0.6, 0.1]), 8, 97),  # the same curve, another B and C
        ([0, 10, 20, 30], torch.tensor([4.1, 1.0, 0.99, 0.5]), 16, 49),  # exactly 1 nat is not below it
        ([0, 10, 20, 30], torch.tensor([4.1, 0.8, 1.5, 0.5]), 16, 49),  # the first crossing counts
        ([0, 10, 20], torch.tensor([4.1, 3.0, 2.9]), 32, 49),  # the one-layer control: none
    ]
    compare("onset_tokens", learner, onset_tokens, cases)


def check_cross_prefix_matching_score(
    learner: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
) -> None:
    """Exercise: ``cross_prefix_matching_score(pattern (batch, heads, q, k), tokens (batch, seq), translate (vocab,))
    -> (heads,)``, on random patterns over two-language sequences with both kinds of repeat (so that a score that
    also counts queries with an exact earlier occurrence, or the keys of the same token, comes out different)."""
    from lib.induction import fuzzy
    from lib.induction.sequences import seeded_generator

    g = torch.Generator().manual_seed(9)
    cases = []
    for batch, heads, language, seq in ((2, 1, 3, 9), (3, 2, 5, 13), (6, 3, 8, 25)):
        config = fuzzy.FuzzyConfig(language=language, seq_len=seq, min_repeat=2, max_repeat=min(language, 4))
        translated = fuzzy.fuzzy_sequences(batch - 1, seeded_generator(language), config, translated=True)[0]
        mixed = fuzzy.fuzzy_sequences(1, seeded_generator(seq), config, translated=False)[0]
        tokens = torch.cat([translated, mixed])
        scores = torch.randn(batch, heads, seq, seq, generator=g).masked_fill(
            torch.ones(seq, seq, dtype=torch.bool).triu(1), float("-inf")
        )
        cases.append((scores.softmax(-1), tokens, fuzzy.translation(language)))
    compare("cross_prefix_matching_score", learner, fuzzy.cross_prefix_matching_score, cases)
