"""Reading a trained attention-only model's weights as circuits (Elhage et al. 2021; Olsson et al. 2022).

Everything here reads a model built by :mod:`lib.induction` (a transformer_lens bridge with no LayerNorm and
no MLPs, so the residual stream is a plain sum of what the embeddings and the heads write).

**Orientation.** transformer_lens multiplies *row* vectors from the right. For a residual-stream row
``x (d_model,)``, a head computes ``q = x W_Q + b_Q``, ``k = x W_K + b_K``, ``v = x W_V + b_V`` and writes
``v W_O``. So, biases aside:

- its **OV matrix** is ``W_OV = W_V W_O`` ``(d_model, d_model)``: attending to ``x``, it writes ``x W_OV``;
- its **QK matrix** is ``W_QK = W_Q W_Kᵀ`` ``(d_model, d_model)``: the attention score of a query residual
  ``x`` on a key residual ``y`` is ``x W_QK yᵀ / sqrt(d_head)``.

Elhage et al. multiply *column* vectors from the left and write ``W_OV = W_O W_V`` and ``W_QK = W_Qᵀ W_K``:
the transposes of the matrices above, with the same norms and eigenvalues.

**Composition scores** (Elhage et al., "A Mathematical Framework for Transformer Circuits"). A later head
``B`` reads, among other things, what an earlier head ``A`` wrote, ``x W_OV^A``. Depending on where ``B``
reads it, the product that carries ``A``'s output into ``B``'s computation is

- **Q-composition**, into ``B``'s queries: score ``(x W_OV^A) W_QK^B yᵀ``, the product ``W_OV^A W_QK^B``
  (Elhage: ``W_QK^Bᵀ W_OV^A``);
- **K-composition**, into ``B``'s keys: score ``x W_QK^B (y W_OV^A)ᵀ``, the product ``W_QK^B W_OV^Aᵀ``,
  whose transpose ``W_OV^A W_QK^Bᵀ`` is computed (Elhage: ``W_QK^B W_OV^A``);
- **V-composition**, into ``B``'s values: ``W_OV^A W_OV^B`` (Elhage: ``W_OV^B W_OV^A``);

and the score is ``‖W_OV^A M_B‖_F / (‖W_OV^A‖_F ‖M_B‖_F)`` with ``M_B`` the right factor above. It lies in
``[0, 1]`` and reaches 1 only for rank-one matrices that line up: two aligned rank-``r`` projections score
``1/sqrt(r)``. Random matrices score well above 0 too (about ``1/sqrt(d_model)``), so a score means
something only against a **random baseline**: the same scores on freshly initialised models of the same
shape (:func:`at_initialisation`), or, closer to the question, the same trained matrices with their singular
values kept and their singular vectors rotated at random (:func:`composition_baseline`), which controls for
what training does to a matrix's spectrum by itself.

**Positional QK** (:func:`positional_qk`): a head's attention score from the positional embeddings alone,
``W_pos W_Q W_Kᵀ W_posᵀ``. The virtual QK circuit says which *token* a key holds once an earlier head moved
it there; the positional QK says which *position* that earlier head reads from.

**Eigenvalue copying score** (Elhage et al.): for a circuit matrix ``M`` from tokens to tokens (the full OV
circuit ``W_E W_V W_O W_U``, a ``(vocab, vocab)`` map from the attended token to the logits), the eigenvalues
``λ`` summarise it as ``Σλ / Σ|λ|`` (the sum of the eigenvalues is the trace, a real number): 1 when every
non-zero eigenvalue is real and positive (the circuit copies: ``v`` attended raises ``v``'s logit and its
look-alikes'), -1 when all are negative, near 0 for a random matrix.

**Olsson et al.'s copying score** (:func:`olsson_copying_score`) asks the same question of the head's actual
output on a run of the model over random tokens (see its docstring). It is a different definition from
:func:`lib.induction.scores.copying_score`, which reads only the weight path ``W_E W_V W_O W_U`` and normalises by the
largest logit change.

**Keys or queries?** (:func:`run_with_qk_from_embeddings`) An intervention, not a weight reading: a layer's
keys, or its queries, are computed from the embeddings alone, as if no earlier layer had written anything,
while everything else sees the full residual stream.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, get_args

import torch

from lib.core import seeds, validate
from lib.core.heads import Head, check_head

if TYPE_CHECKING:
    from transformer_lens.hook_points import HookPoint
    from transformer_lens.model_bridge import TransformerBridge

    from lib.induction.sequences import InductionConfig


CompositionKind = Literal["Q", "K", "V"]

COMPOSITION_KINDS: tuple[CompositionKind, ...] = get_args(CompositionKind)
"""The three kinds of composition (see the module docstring), in Elhage et al.'s order."""

QKSide = Literal["keys", "queries"]

QK_SIDES: tuple[QKSide, ...] = get_args(QKSide)
"""The two sides of an attention score that :func:`run_with_qk_from_embeddings` can cut off from earlier layers."""

CUT_KEEPS_BELOW = 0.2
"""Nats: with layer 0 cut from one side of layer 1's attention (:func:`run_with_qk_from_embeddings`), chapters 5
and 7 say the induction heads still predict the repeated tokens when the loss on them stays below this. Set from
the spread over seeds, not from one seed: chapter 5's two-layer model (the book's seeds 0-3) ends at 0.007-0.07
nats intact and 0.005-0.09 with its queries cut, against 4.6-5.0 nats, above chance, with its keys cut."""


def ov_matrices(model: TransformerBridge) -> torch.Tensor:
    """Every head's OV matrix ``W_V W_O`` (row-vector orientation: a head attending to ``x`` writes ``x W_OV``).

    Returns:
        ``(n_layers, n_heads, d_model, d_model)``.
    """
    with torch.inference_mode():
        return model.W_V @ model.W_O


def qk_matrices(model: TransformerBridge) -> torch.Tensor:
    """Every head's QK matrix ``W_Q W_Kᵀ``: the score of query residual ``x`` on key residual ``y`` is ``x W_QK yᵀ``.

    Before the ``1 / sqrt(d_head)`` scale and without the query and key biases.

    Returns:
        ``(n_layers, n_heads, d_model, d_model)``.
    """
    with torch.inference_mode():
        return model.W_Q @ model.W_K.transpose(-1, -2)


def _check_layers(model: TransformerBridge, source_layer: int, target_layer: int) -> None:
    n_layers = model.cfg.n_layers
    validate.index("source_layer", source_layer, n_layers)
    validate.index("target_layer", target_layer, n_layers)
    if not source_layer < target_layer:
        raise ValueError(
            f"a head can only compose with an earlier layer: need source_layer < target_layer, "
            f"got source_layer={source_layer!r}, target_layer={target_layer!r}"
        )


def composition_scores(
    model: TransformerBridge, source_layer: int = 0, target_layer: int = 1
) -> dict[CompositionKind, torch.Tensor]:
    """Elhage et al.'s Q-, K- and V-composition scores between every head of two layers.

    ``scores[kind][a, b]`` is ``‖W_OV^a M_b‖_F / (‖W_OV^a‖_F ‖M_b‖_F)`` for head ``a`` of ``source_layer``
    and head ``b`` of ``target_layer``, with ``M_b = W_QK^b`` (Q), ``W_QK^bᵀ`` (K) or ``W_OV^b`` (V);
    the module docstring derives the factor order. Biases are left out, as in the paper.

    Returns:
        ``{"Q", "K", "V"}`` -> ``(n_heads, n_heads)`` in ``[0, 1]``, indexed ``[source head, target head]``,
        on the CPU. A head that writes or reads nothing (a zero matrix) scores 0.
    """
    _check_layers(model, source_layer, target_layer)
    # float64 on the CPU: mps has no float64
    ov, qk = ov_matrices(model).cpu().double(), qk_matrices(model).cpu().double()
    left = ov[source_layer]  # (heads, d, d)
    right: dict[CompositionKind, torch.Tensor] = {
        "Q": qk[target_layer],
        "K": qk[target_layer].transpose(-1, -2),
        "V": ov[target_layer],
    }
    left_norm = torch.linalg.matrix_norm(left)  # (heads,)
    out = {}
    for kind in COMPOSITION_KINDS:
        product = torch.einsum("ade,bef->abdf", left, right[kind])  # (source heads, target heads, d, d)
        norms = left_norm[:, None] * torch.linalg.matrix_norm(right[kind])[None, :]
        out[kind] = (torch.linalg.matrix_norm(product) / norms.clamp_min(1e-300)).float()
    return out


def composition_baseline(
    model: TransformerBridge,
    source_layer: int = 0,
    target_layer: int = 1,
    samples: int = 200,
    seed: int = seeds.seed(0),
) -> dict[CompositionKind, torch.Tensor]:
    """A same-model baseline of :func:`composition_scores`: each pair's matrices, rotated at random.

    For the pair ``(a, b)`` and each sample, ``W_OV^a = U_a S_a V_aᵀ`` and ``M_b = U_b S_b V_bᵀ`` (the
    reading map of :func:`composition_scores`) keep their singular values and get Haar-random singular
    vectors. The score of two such matrices is ``‖S_a R S_b‖_F / (‖S_a‖_F ‖S_b‖_F)`` with ``R`` one random
    orthogonal ``(d_model, d_model)`` matrix, so only ``R`` is drawn. This is the score the same two trained
    matrices would have if their subspaces were unrelated: its mean square is ``1 / d_model`` whatever the
    spectra, but low-rank or peaked spectra spread it, which a baseline from freshly initialised models
    (:func:`at_initialisation`) does not see.

    Args:
        samples: random rotations per pair. seed: seeds the rotations (one ``torch.Generator`` on the CPU).

    Returns:
        ``{"Q", "K", "V"}`` -> ``(n_heads, n_heads, samples)``, indexed ``[source head, target head, sample]``,
        on the CPU; 0 where a matrix is zero.
    """
    _check_layers(model, source_layer, target_layer)
    validate.positive_int("samples", samples)
    ov, qk = ov_matrices(model).cpu().double(), qk_matrices(model).cpu().double()
    singular = {
        "source": torch.linalg.svdvals(ov[source_layer]),  # (heads, d)
        "Q": torch.linalg.svdvals(qk[target_layer]),
        "K": torch.linalg.svdvals(qk[target_layer]),  # a transpose keeps the singular values
        "V": torch.linalg.svdvals(ov[target_layer]),
    }
    generator = torch.Generator().manual_seed(validate.seed(seed))
    d = ov.shape[-1]
    # Haar-random orthogonal matrices: QR of a Gaussian, with the signs of R's diagonal moved into Q
    q, r = torch.linalg.qr(torch.randn(samples, d, d, generator=generator, dtype=torch.float64))
    rotations = q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1))[:, None, :]  # (samples, d, d)
    left = singular["source"]
    out = {}
    for kind in COMPOSITION_KINDS:
        right = singular[kind]
        # ‖S_a R S_b‖_F² = Σ_ij a_i² R_ij² b_j², for every pair and sample at once
        squared = torch.einsum("ai,sij,bj->abs", left**2, rotations**2, right**2)
        norms = (left**2).sum(-1).sqrt()[:, None, None] * (right**2).sum(-1).sqrt()[None, :, None]
        out[kind] = (squared.sqrt() / norms.clamp_min(1e-300)).float()
    return out


def composition_against_baseline(
    model: TransformerBridge,
    source: int,
    targets: Sequence[int],
    kind: CompositionKind = "K",
    samples: int = 200,
    seed: int = seeds.seed(0),
) -> tuple[float, float]:
    """The mean :func:`composition_scores` of one head of layer 0 with some heads of layer 1, and its distance from
    its same-model null (:func:`composition_baseline`: the same pairs' matrices with their singular vectors
    rotated at random), in standard deviations of the null's mean over the same pairs. Chapter 5 computes it at
    every checkpoint to date when the weights' composition stands out.

    Args:
        source: the layer-0 head. targets: the layer-1 heads (at least one).

    Returns:
        ``(score, sd_above_null)``.
    """
    if not targets:
        raise ValueError("targets must name at least one layer-1 head, got none")
    score = composition_scores(model)[kind][source, list(targets)].mean()
    null = composition_baseline(model, samples=samples, seed=seed)[kind][source, list(targets)].mean(dim=0)
    return score.item(), ((score - null.mean()) / null.std()).item()


def at_initialisation(
    measure: Callable[[TransformerBridge], Mapping[str, torch.Tensor]],
    config: InductionConfig,
    seeds: Iterable[int],
    device: torch.device | str | None = None,
) -> dict[str, torch.Tensor]:
    """The random baseline of some scores: ``measure`` on freshly initialised models of ``config``, one per seed.

    The models come from :func:`lib.induction.models.make_model`: the same shapes, and the initialisation the trained
    models start from.

    Args:
        measure: model -> ``{name: score tensor}``, e.g. ``lambda m: composition_scores(m)``.
        device: where the models are built (as :func:`lib.induction.models.make_model`).

    Returns:
        ``{name: (n_seeds, *score's shape)}`` on the CPU.
    """
    from lib.induction.models import make_model

    chosen = [validate.seed(s) for s in seeds]
    if not chosen:
        raise ValueError("seeds is empty: give at least one seed")
    results = []
    with torch.inference_mode():
        for s in chosen:
            results.append(
                {
                    name: torch.as_tensor(v).cpu()
                    for name, v in measure(make_model(config, seed=s, device=device)).items()
                }
            )
    return {name: torch.stack([r[name] for r in results]) for name in results[0]}


def full_ov_circuit(model: TransformerBridge, head: Head) -> torch.Tensor:
    """The head's direct path from the token it attends to, to the logits: ``W_E W_V W_O W_U``.

    Row ``s`` is what the head adds to every logit when it puts all its attention on a position holding token
    ``s`` and reads only that token's embedding (positions, earlier heads and biases left out).

    Returns:
        ``(vocab, vocab)``: attended token (rows) x logit (columns), on the CPU.
    """
    layer, h = check_head(model, head)
    with torch.inference_mode():
        return (model.W_E @ model.W_V[layer, h] @ model.W_O[layer, h] @ model.W_U).cpu()


def _key_side_tokens(model: TransformerBridge, source: Head, target: Head) -> tuple[torch.Tensor, torch.Tensor]:
    """``(queries, keys)``: the two ``(vocab, d_head)`` factors of :func:`virtual_qk_circuit`."""
    (sl, sh), (tl, th) = check_head(model, source, "source"), check_head(model, target, "target")
    if not sl < tl:
        raise ValueError(f"the source head must sit in an earlier layer than the target head, got {source}, {target}")
    with torch.inference_mode():
        queries = model.W_E @ model.W_Q[tl, th]  # (vocab, d_head): the current token's query
        keys = model.W_E @ model.W_V[sl, sh] @ model.W_O[sl, sh] @ model.W_K[tl, th]  # the moved token's key
        return queries / math.sqrt(model.cfg.d_head), keys


def virtual_qk_circuit(model: TransformerBridge, source: Head, target: Head) -> torch.Tensor:
    """The K-composition path of ``target``'s attention score through ``source``'s OV circuit, token by token.

    ``M[a, b] = (W_E[a] W_Q) (W_E[b] W_OV^source W_K)ᵀ / sqrt(d_head)``: the score a query holding token ``a``
    gives a key position into which ``source`` moved token ``b`` (with all its attention). Through a
    previous-token head, ``b`` is the token *before* the key: an induction head's circuit is then large on the
    diagonal (it attends where the previous token equals the current one). Positions and biases are left out.

    Args:
        source: ``(layer, head)`` of an earlier layer (e.g. a previous-token head). target: the reading head.

    Returns:
        ``(vocab, vocab)``: current token (rows) x token moved into the key (columns), on the CPU.
    """
    queries, keys = _key_side_tokens(model, source, target)
    return (queries @ keys.T).cpu()


def positional_qk(model: TransformerBridge, layer: int = 0) -> torch.Tensor:
    """Every head's attention score from positions alone: ``W_pos W_Q W_Kᵀ W_posᵀ / sqrt(d_head)``.

    Entry ``[h, i, j]`` is the score head ``h`` of ``layer`` gives key position ``j`` from query position ``i``
    when both residual streams hold only their positional embedding (tokens, earlier layers and biases left
    out). A previous-token head that finds ``i - 1`` by position peaks at ``j = i - 1``.

    Returns:
        ``(n_heads, seq_len, seq_len)``: query position x key position, on the CPU; entries with ``j > i``
        are ``-inf`` (the causal mask).
    """
    layer = validate.index("layer", layer, model.cfg.n_layers)
    with torch.inference_mode():
        positions = model.W_pos  # (seq, d_model)
        queries = positions @ model.W_Q[layer]  # (heads, seq, d_head)
        keys = positions @ model.W_K[layer]
        score = (queries @ keys.transpose(-1, -2) / math.sqrt(model.cfg.d_head)).float().cpu()
    seq = score.shape[-1]
    future = torch.ones(seq, seq, dtype=torch.bool).triu(1)
    return score.masked_fill(future, float("-inf"))


def positional_previous_share(model: TransformerBridge, layer: int = 0) -> torch.Tensor:
    """How much of each head's attention its positions alone put on the key one back.

    The softmax over the causal keys of :func:`positional_qk`, read at ``j = i - 1`` and averaged over the
    queries ``i >= 1``: 1 for a head that finds the previous position by position alone, ``mean(1 / (i + 1))``
    for one whose positional scores are flat.

    Returns:
        ``(n_heads,)`` in ``[0, 1]`` on the CPU.
    """
    pattern = positional_qk(model, layer).softmax(dim=-1)  # (heads, query, key)
    return pattern.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=-1)


def eigenvalue_score(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """Elhage et al.'s ``Σλ / Σ|λ|`` of the square matrix ``left @ right``, from the smaller of the two products.

    ``left @ right`` and ``right @ left`` have the same non-zero eigenvalues, so a ``(vocab, vocab)`` circuit of
    rank ``d_head`` needs only a ``(d_head, d_head)`` eigen-decomposition.

    Args:
        left: ``(n, k)``. right: ``(k, n)``.

    Returns:
        A scalar in ``[-1, 1]``; ``nan`` when every eigenvalue is 0 (the circuit is nilpotent or zero).
    """
    if left.ndim != 2 or right.ndim != 2 or left.shape != right.shape[::-1]:
        raise ValueError(
            f"left and right must be (n, k) and (k, n) matrices, got {tuple(left.shape)} and {tuple(right.shape)}"
        )
    a, b = left.detach().cpu().double(), right.detach().cpu().double()
    eigenvalues = torch.linalg.eigvals(b @ a if a.shape[1] < a.shape[0] else a @ b)
    total = eigenvalues.abs().sum()
    # relative to the factors' size: a zero circuit's eigenvalues come out as rounding noise, not exact zeros
    if total <= 1e-10 * torch.linalg.matrix_norm(a) * torch.linalg.matrix_norm(b):
        return torch.tensor(float("nan"))
    return (eigenvalues.real.sum() / total).float()


def ov_eigenvalue_copying(model: TransformerBridge, layers: Iterable[int] | None = None) -> torch.Tensor:
    """Elhage et al.'s eigenvalue copying score ``Σλ / Σ|λ|`` of every head's full OV circuit ``W_E W_V W_O W_U``.

    Args:
        layers: the layers to score (default: all); the others are ``nan``.

    Returns:
        ``(n_layers, n_heads)`` in ``[-1, 1]`` on the CPU; ``nan`` where a head's circuit has no non-zero
        eigenvalue (e.g. a head that writes where the unembedding does not read).
    """
    cfg = model.cfg
    chosen = range(cfg.n_layers) if layers is None else [validate.index("layer", l, cfg.n_layers) for l in layers]
    out = torch.full((cfg.n_layers, cfg.n_heads), float("nan"))
    with torch.inference_mode():
        for layer in chosen:
            for h in range(cfg.n_heads):
                # W_E W_V (vocab, d_head) times W_O W_U (d_head, vocab)
                out[layer, h] = eigenvalue_score(model.W_E @ model.W_V[layer, h], model.W_O[layer, h] @ model.W_U)
    return out


def virtual_qk_eigenvalue_score(model: TransformerBridge, source: Head, target: Head) -> torch.Tensor:
    """``Σλ / Σ|λ|`` of :func:`virtual_qk_circuit` (1: the key matches the moved token to the query's own token)."""
    queries, keys = _key_side_tokens(model, source, target)
    return eigenvalue_score(queries, keys.T)


def olsson_copying_score(model: TransformerBridge, tokens: torch.Tensor) -> torch.Tensor:
    """Olsson et al.'s copying score: how much of what a head writes from a token raises that token's logit.

    Olsson et al. run the model on random tokens, take what each head adds to the residual stream, map it
    to the logits through the unembedding alone (the head's direct effect), subtract the mean over the
    vocabulary and apply a ReLU, keeping only the logits the head raises. The description we work from does
    not give the final aggregation; here, for each head and each position ``p >= 1`` of ``tokens`` (position 0
    holds BOS):

    1. ``out = (x_p W_V + b_V) W_O``, where ``x_p`` is the *actual* residual stream at ``p`` that the head's
       layer reads on this run (token and position embeddings, plus earlier layers' outputs): what the head
       writes when it attends to ``p``. A head's output at any query is an attention-weighted sum of these
       terms, so each is scored at full weight, wherever the head happens to attend on random tokens;
    2. ``r = ReLU(l - mean(l))`` for the logits ``l = out W_U``;
    3. the share ``r[t_p] / Σ r`` of the raised logit mass that lands on the token ``t_p`` itself.

    The score is the mean share over positions and sequences: 1 = the head raises only the token it reads,
    about ``1 / vocab`` for a head whose raised logits ignore the token. This differs from
    :func:`lib.induction.scores.copying_score` (the weight path ``W_E W_V W_O W_U`` from the embedding alone, signed,
    normalised by the largest logit change) in what goes in (the residual stream of a run, biases included)
    and in how the logits are summarised.

    Args:
        tokens: ``(batch, seq) int64``, BOS then random content tokens (Olsson et al. use 25).

    Returns:
        ``(n_layers, n_heads)`` in ``[0, 1]`` on the CPU.
    """
    validate.token_batch(tokens)
    if tokens.shape[1] < 2:
        raise ValueError(f"tokens need BOS and at least one more position, got seq={tokens.shape[1]}")
    n_layers = model.cfg.n_layers
    names = [f"blocks.{layer}.hook_resid_pre" for layer in range(n_layers)]
    with torch.inference_mode():
        _, cache = model.run_with_cache(tokens, names_filter=lambda name: name in names)
        target = tokens[:, 1:]  # (batch, seq - 1)
        scores = []
        for layer, name in enumerate(names):
            x = cache[name][:, 1:]  # (batch, seq - 1, d_model)
            values = torch.einsum("bpd,hde->bphe", x, model.W_V[layer]) + model.b_V[layer]
            logits = torch.einsum("bphe,hed->bphd", values, model.W_O[layer]) @ model.W_U  # (b, p, heads, vocab)
            raised = torch.relu(logits - logits.mean(dim=-1, keepdim=True))
            own = raised.gather(-1, target[:, :, None, None].expand(*raised.shape[:-1], 1))[..., 0]
            share = own / raised.sum(dim=-1).clamp_min(1e-12)  # (b, p, heads)
            scores.append(share.mean(dim=(0, 1)))
        return torch.stack(scores).float().cpu()


def run_with_qk_from_embeddings(
    model: TransformerBridge, tokens: torch.Tensor, sides: Collection[QKSide], layer: int = 1
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run the model with ``layer``'s keys and/or queries computed from the embeddings alone.

    For each side in ``sides``, ``layer``'s keys (``k = x W_K + b_K``) or queries are computed from
    ``x = W_E[token] + W_pos[position]``, the residual stream before any layer wrote to it, instead of the
    full residual stream; everything else (the other side, the values, the later layers, the logits) sees
    the full stream. ``sides=()`` is the clean run; ``("keys",)`` removes every earlier layer's contribution
    from the keys only: if the attention pattern then breaks, the earlier layers reach it through the keys
    (K-composition).

    Args:
        tokens: ``(batch, seq) int64``.
        sides: a subset of :data:`QK_SIDES`.
        layer: the layer whose keys or queries are cut off (``>= 1``).

    Returns:
        ``(logits (batch, seq, vocab), pattern (batch, n_heads, query, key))``: the model's output and
        ``layer``'s attention pattern on this run, on ``tokens``' device.
    """
    validate.token_batch(tokens)
    validate.int_at_least("layer", layer, 1, "layer 0 reads only the embeddings already")
    validate.index("layer", layer, model.cfg.n_layers)
    if isinstance(sides, str):
        raise ValueError(f"sides must be a collection of sides from {list(QK_SIDES)}, got the string {sides!r}")
    chosen = set(sides)
    for side in chosen:
        validate.one_of("sides", side, QK_SIDES)
    weights = {"queries": (model.W_Q[layer], model.b_Q[layer]), "keys": (model.W_K[layer], model.b_K[layer])}
    stored: dict[str, torch.Tensor] = {}

    def keep(name: str) -> Callable[[torch.Tensor, HookPoint], torch.Tensor]:
        def hook(activation: torch.Tensor, hook: HookPoint) -> torch.Tensor:
            stored[name] = activation
            return activation

        return hook

    def from_embeddings(side: QKSide) -> Callable[[torch.Tensor, HookPoint], torch.Tensor]:
        W, b = weights[side]

        def hook(activation: torch.Tensor, hook: HookPoint) -> torch.Tensor:  # (batch, seq, heads, d_head)
            return (torch.einsum("bpd,hde->bphe", stored["embeddings"], W) + b).to(activation.dtype)

        return hook

    hooks = [("blocks.0.hook_resid_pre", keep("embeddings")), (f"blocks.{layer}.attn.hook_pattern", keep("pattern"))]
    hooks += [(f"blocks.{layer}.attn.hook_{'k' if side == 'keys' else 'q'}", from_embeddings(side)) for side in chosen]
    with torch.inference_mode(), model.hooks(fwd_hooks=hooks):  # removed on exit, also when the pass raises
        logits = model(tokens)
    return logits, stored["pattern"]
