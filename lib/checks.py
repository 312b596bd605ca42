"""Checks for learners' exercise answers.

Every check compares the learner's function with the book's reference on a few inputs and either
prints one line saying it passed, or raises :class:`CheckFailed` naming the input, what was expected
and what came back. Chapter-specific checks are built on :func:`compare`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import torch

STRICT_ENV = "CIRCUITS_STRICT_CHECKS"
F = TypeVar("F", bound=Callable[..., Any])


class CheckFailed(AssertionError):
    """A learner's answer disagrees with the reference."""


def _short(value: Any, limit: int = 300) -> str:
    if isinstance(value, torch.Tensor):
        text = f"tensor(shape={tuple(value.shape)}, dtype={value.dtype}) {value.detach().cpu().flatten()[:8].tolist()}"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + " ..."


def same(got: Any, expected: Any, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """Equality that treats tensors and floats with a tolerance and recurses into containers."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
            return False
        if expected.is_floating_point():
            return torch.allclose(got.detach().cpu().to(expected.dtype), expected.detach().cpu(), atol=atol, rtol=rtol)
        return torch.equal(got.detach().cpu(), expected.detach().cpu())
    if isinstance(expected, float):
        return isinstance(got, (int, float)) and abs(got - expected) <= atol + rtol * abs(expected)
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and got.keys() == expected.keys()
            and all(same(got[k], v, atol, rtol) for k, v in expected.items())
        )
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(got, (list, tuple))
            and len(got) == len(expected)
            and all(same(g, e, atol, rtol) for g, e in zip(got, expected))
        )
    return got == expected


def compare(
    name: str,
    learner: Callable[..., Any],
    reference: Callable[..., Any],
    cases: Iterable[Sequence[Any]],
    *,
    atol: float = 1e-5,
    rtol: float = 1e-4,
) -> None:
    """Call ``learner(*case)`` and ``reference(*case)`` for every case; raise on the first disagreement."""
    cases = list(cases)
    for i, case in enumerate(cases, 1):
        expected = reference(*case)
        try:
            got = learner(*case)
        except NotImplementedError:
            raise CheckFailed(
                f"{name}: not implemented yet; replace the `raise NotImplementedError` in your stub"
            ) from None
        if not same(got, expected, atol, rtol):
            inputs = ", ".join(_short(a, 120) for a in case)
            raise CheckFailed(
                f"{name}: case {i} of {len(cases)} differs.\n  input:    {inputs}\n"
                f"  expected: {_short(expected)}\n  got:      {_short(got)}"
            )
    print(f"PASSED {name}: all {len(cases)} cases match the reference.")


def passing_or_reference(learner: F, check: Callable[[F], None], reference: F) -> F:
    """The learner's function if ``check`` passes it, else ``reference``, so the cells after an exercise still run.

    A failing check prints why and that the chapter goes on with the reference. Under ``CIRCUITS_STRICT_CHECKS=1``
    (set by ``make``) the failure is raised instead, so a broken solution cell fails the build.
    """
    try:
        check(learner)
    except CheckFailed as failure:
        if os.environ.get(STRICT_ENV) == "1":
            raise
        print(f"{failure}\nThe cells below use the book's reference until your function passes.")
        return reference
    return learner


# ---------------------------------------------------------------------------------------------
# Out-of-context reasoning (chapters 1-4)
# ---------------------------------------------------------------------------------------------


def check_shifted_map(shifted_map: Callable[[Sequence[tuple[str, str]], int], Any]) -> None:
    """Chapter 1: the learner's ``shifted_map(mapping, shift) -> ((b_0, c_shift), (b_1, c_{1+shift}), ...)``."""
    from lib import ocr

    small = (("a", "x"), ("b", "y"), ("c", "z"), ("d", "w"))
    cases = [
        (small, 1),
        (small, 3),
        (small, -1),  # negative shifts wrap around too
        (small, 6),  # a shift longer than the list
        (ocr.CITY_LANGUAGE, ocr.COUNTERFACTUAL_SHIFT),  # the book's counterfactual rule
    ]
    compare("shifted_map", shifted_map, ocr.shifted_map, cases)


def check_split_subjects(split_subjects: Callable[[Sequence[Any], float], tuple[list[int], list[int]]]) -> None:
    """Chapter 1: the learner's ``split_subjects(group_of, train_fraction) -> (train, test)``."""
    from lib import ocr

    minimal = ocr.build_symbolic()
    cases = [
        ([0, 1, 0, 1, 0, 1, 0, 1, 0, 1], 0.2),
        ([2, 2, 2, 0, 0, 0, 0, 1, 1, 1], 0.25),  # groups of 3 and 4: 0.75 -> 1 and 1.0 -> 1
        (["b", "a", "b", "a", "a", "b", "b"], 0.5),  # string labels; 2 of 4 "b", 1.5 -> 2 of 3 "a"
        (minimal.fact_of.tolist(), 0.25),  # the minimal experiment: one in four subjects per fact trains
        ([0] * 5 + [1] * 5 + [2] * 10, 0.4),
        ([1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1], 0.5),  # 2.5 rounds half up to 3 (Python's round() gives 2)
    ]
    compare("split_subjects", split_subjects, ocr.split_subjects, cases)


def check_mean_rank(mean_rank: Callable[[torch.Tensor, torch.Tensor], float]) -> None:
    """Chapter 1: the learner's ``mean_rank(scores (n, k), answer (n,)) -> float``."""
    from lib import ocr

    g = torch.Generator().manual_seed(0)
    cases = [
        (torch.tensor([[3.0, 1.0, 2.0]]), torch.tensor([0])),  # ranked first: 0
        (torch.tensor([[3.0, 1.0, 2.0]]), torch.tensor([1])),  # ranked last: 2
        (torch.tensor([[0.5, 0.2], [0.1, 0.9], [1.0, 4.0]]), torch.tensor([0, 0, 1])),
        (torch.zeros(2, 5), torch.tensor([0, 3])),  # all tied: the expected rank, (5 - 1) / 2
        (torch.tensor([[1.0, 2.0, 2.0, 0.0]]), torch.tensor([1])),  # one tie above nothing: 0.5
        (torch.randn(50, 8, generator=g), torch.randint(0, 8, (50,), generator=g)),
    ]
    compare("mean_rank", mean_rank, ocr.mean_rank, cases)


def check_pair_sentences(pair_sentences: Callable[[Any, str, str], Any]) -> None:
    """Chapter 1: the learner's ``pair_sentences(pair, name, fact_value) -> (facts, implications)``."""
    from lib import ocr

    cases = [
        (ocr.PAIRS[0], "Tomeka Vadu", "Paris"),
        (ocr.PAIRS[1], "Lirona Besk", ocr.PAIRS[1].fact_values[0]),  # the counterfactual rule's own language
        (ocr.PAIRS[2], "Ossa Venrik", "Japan"),
        (ocr.minimal_pair(3), "s7", "b2"),  # default templates: "{s} {r1} {b}." needs the relation words
    ]
    compare("pair_sentences", pair_sentences, ocr.pair_sentences, cases)


def check_train_batch(train_batch: Callable[[Any, int, torch.Generator], tuple[torch.Tensor, torch.Tensor]]) -> None:
    """Chapter 1: the learner's ``train_batch(task, batch_size, generator) -> (x (B, T), y (B,))``, the training mix."""
    from lib import ocr

    minimal, five = ocr.build_symbolic(), ocr.build_symbolic(ocr.SymbolicConfig(five_pairs=True))
    cases = [(minimal, 6, 0), (minimal, 7, 1), (minimal, 8, 2), (five, 30, 3), (five, 100, 4)]  # 7 and 8: remainders

    def with_generator(fn: Callable[..., Any]) -> Callable[..., Any]:
        # a fresh generator per call, so the learner's and the reference's draws start from the same state
        return lambda task, batch_size, seed: fn(task, batch_size, torch.Generator().manual_seed(seed))

    compare("train_batch", with_generator(train_batch), with_generator(ocr.SymbolicTask.train_batch), cases)


def check_symbolic_sequences(
    symbolic_sequences: Callable[..., tuple[torch.Tensor, torch.Tensor]],
) -> None:
    """Chapter 1: the learner's ``symbolic_sequences(task, group, subjects, noise, where) -> (x, y)``."""
    from lib import ocr

    g = torch.Generator().manual_seed(4)
    specs: list[tuple[ocr.SymbolicConfig, ocr.Group, int]] = [
        (ocr.SymbolicConfig(), "test_implications", 6),
        (ocr.SymbolicConfig(), "train_facts", 5),
        (ocr.SymbolicConfig(five_pairs=True), "train_implications", 12),  # every rule has its own relation tokens
        (ocr.SymbolicConfig(five_pairs=True, seq_len=6, n_noise=2), "test_facts", 9),
    ]
    cases = []
    for config, group, n in specs:
        task = ocr.build_symbolic(config)
        pool = task.subjects_of(group)
        subjects = pool[torch.randint(0, len(pool), (n,), generator=g)]
        noise = task.noise_ids[torch.randint(0, len(task.noise_ids), (n, config.seq_len), generator=g)]
        where = torch.randint(0, config.seq_len - 2, (n,), generator=g)
        where[:2] = torch.tensor([0, config.seq_len - 3])  # both ends of the allowed range
        cases.append((task, group, subjects, noise, where))
    compare("symbolic_sequences", symbolic_sequences, ocr.symbolic_sequences, cases)


# --- chapters 2-3: the one-layer factorized and merged models ---------------------------------


def check_factorized_forward(
    forward: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
) -> None:
    """Chapter 2: the learner's ``forward(W_O (d, r), W_V (d, r), W_KQ (d, d), tokens (T,)) -> f(X) (d,)``."""
    from lib.onelayer import forward_reference

    g = torch.Generator().manual_seed(0)
    cases = []
    for d, r, T in ((4, 2, 3), (6, 6, 5), (8, 3, 1), (10, 4, 7)):
        tokens = torch.randint(0, d, (T,), generator=g)
        tokens[0] = tokens[-1]  # a repeated token: X^T X counts it twice
        cases.append(
            (torch.randn(d, r, generator=g), torch.randn(d, r, generator=g), torch.randn(d, d, generator=g), tokens)
        )
    compare("factorized forward", forward, forward_reference, cases, atol=1e-4)


def check_candidate_accuracy(accuracy: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], float]) -> None:
    """Chapter 2: the learner's ``accuracy(logits (N, V), answers (N,), candidates (K,)) -> float``."""
    from lib.onelayer import candidate_accuracy

    g = torch.Generator().manual_seed(1)
    cases = [
        (
            torch.tensor([[0.0, 3.0, 1.0, 2.0]]),
            torch.tensor([3]),
            torch.tensor([2, 3]),
        ),  # token 1 is larger but no candidate
        (torch.tensor([[0.0, 3.0, 1.0, 2.0]]), torch.tensor([2]), torch.tensor([2, 3])),
        (torch.randn(40, 9, generator=g), torch.randint(4, 9, (40,), generator=g), torch.arange(4, 9)),
        (torch.randn(25, 6, generator=g), torch.randint(0, 3, (25,), generator=g), torch.tensor([2, 0, 1])),
    ]
    compare("candidate accuracy", accuracy, candidate_accuracy, cases)


def check_candidate_loss(loss: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], float]) -> None:
    """Chapter 2: the learner's ``candidate_loss(logits (N, V), answers (N,), candidates (K,)) -> float``."""
    from lib.onelayer import candidate_loss

    g = torch.Generator().manual_seed(11)
    cases = [
        (torch.tensor([[0.0, 5.0, 1.0, 1.0]]), torch.tensor([3]), torch.tensor([2, 3])),  # even: log 2
        (torch.tensor([[0.0, 3.0, 1.0, 2.0]]), torch.tensor([2]), torch.tensor([2, 3])),
        (torch.randn(40, 9, generator=g), torch.randint(4, 9, (40,), generator=g), torch.arange(4, 9)),
        (3 * torch.randn(25, 6, generator=g), torch.randint(0, 3, (25,), generator=g), torch.tensor([2, 0, 1])),
    ]
    compare("candidate loss", loss, candidate_loss, cases)


def check_numerical_rank(numerical_rank: Callable[[torch.Tensor, float], int]) -> None:
    """Chapter 2: the learner's ``numerical_rank(W (m, n), rel_tol) -> int``."""
    from lib.theory import numerical_rank as reference

    g = torch.Generator().manual_seed(12)
    low_rank = torch.randn(8, 3, generator=g) @ torch.randn(3, 6, generator=g)
    cases = [
        (torch.diag(torch.tensor([300.0, 1.0, 0.05])), 1e-3),  # relative to the largest: 0.3, so 2
        (low_rank + 1e-6 * torch.randn(8, 6, generator=g), 1e-3),  # rank 3 plus rounding-size noise
        (torch.randn(5, 7, generator=g), 1e-2),
        (torch.diag(torch.tensor([1.0, 0.5, 0.2, 0.05])), 0.1),
    ]
    compare("numerical_rank", numerical_rank, reference, cases)


def check_merged_forward(forward: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Chapter 2: the learner's ``merged_forward(W_OV (d, d), W_KQ (d, d), tokens (B, T)) -> (B, d)``."""
    from lib.onelayer import merged_forward_reference

    g = torch.Generator().manual_seed(7)
    cases = []
    for d, B, T in ((4, 1, 3), (6, 3, 5), (9, 5, 1), (12, 4, 8)):
        tokens = torch.randint(0, d, (B, T), generator=g)
        tokens[:, T // 2] = tokens[:, -1]  # a repeated token (the query itself): it is counted twice
        cases.append((torch.randn(d, d, generator=g), torch.randn(d, d, generator=g), tokens))
    compare("merged forward", forward, merged_forward_reference, cases, atol=1e-4)


def check_column_push(column_push: Callable[..., torch.Tensor]) -> None:
    """Chapter 2: the learner's ``column_push(params, tokens (B, T), answers (B,), subject, rows (k,)) -> (k,)``."""
    from lib.onelayer import column_push as reference

    g = torch.Generator().manual_seed(8)
    cases = []
    for d, r, B, merged in ((6, 2, 4, True), (6, 2, 4, False), (10, 4, 12, True), (10, 4, 12, False)):
        W_O, W_V, W_KQ = (torch.randn(*shape, generator=g) for shape in ((d, r), (d, r), (d, d)))
        params = {"W_OV": W_O @ W_V.T, "W_KQ": W_KQ} if merged else {"W_O": W_O, "W_V": W_V, "W_KQ": W_KQ}
        tokens = torch.randint(0, d, (B, 5), generator=g)
        subject = int(tokens[0, 1])
        cases.append(
            (params, tokens, torch.randint(0, d, (B,), generator=g), subject, torch.randperm(d, generator=g)[:3])
        )
    compare("column_push", column_push, reference, cases, atol=1e-4)


def check_multiclass_margins(margins: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Chapter 3: the learner's ``margins(logits (N, C), targets (N,)) -> (N,)``."""
    from lib.theory import multiclass_margins

    g = torch.Generator().manual_seed(2)
    cases = [
        (torch.tensor([[3.0, 1.0, 2.0]]), torch.tensor([0])),
        (torch.tensor([[3.0, 1.0, 2.0]]), torch.tensor([1])),  # negative: another candidate wins
        (torch.tensor([[0.0, 5.0, 5.0]]), torch.tensor([2])),  # a tie: margin 0
        (torch.randn(30, 7, generator=g), torch.randint(0, 7, (30,), generator=g)),
    ]
    compare("multiclass margins", margins, multiclass_margins, cases)


def check_nuclear_norm(nuclear_norm: Callable[[torch.Tensor], float]) -> None:
    """Chapter 3: the learner's ``nuclear_norm(W (m, n)) -> float``, the sum of the singular values."""
    from lib.theory import matrix_norm

    g = torch.Generator().manual_seed(13)
    cases = [
        (torch.diag(torch.tensor([3.0, -1.0, 0.5])),),  # singular values are never negative: 4.5
        (torch.randn(5, 3, generator=g),),
        (torch.randn(4, 7, generator=g),),
        (torch.randn(6, 1, generator=g) @ torch.randn(1, 4, generator=g),),  # rank 1: equals the largest
    ]
    compare("nuclear_norm", nuclear_norm, lambda W: matrix_norm(W, "nuclear"), cases, atol=1e-4)


def check_two_row_nuclear_norm(two_row_nuclear_norm: Callable[[int, int, float], float]) -> None:
    """Chapter 3: the learner's ``two_row_nuclear_norm(m_train, m_test, t) -> float``."""
    from lib.theory import two_row_nuclear_norm as reference

    cases = [(1, 3, 0.0), (1, 3, 3**-0.5), (2, 2, 1.0), (1, 1, 1.5), (3, 5, 0.3), (1, 8, 0.9)]
    compare("two_row_nuclear_norm", two_row_nuclear_norm, reference, cases, atol=1e-4)


def check_svt(svt: Callable[[torch.Tensor, float], torch.Tensor]) -> None:
    """Chapter 3: the learner's ``svt(W (m, n), tau) -> W`` (singular-value thresholding)."""
    from lib.theory import svt as reference

    g = torch.Generator().manual_seed(3)
    cases = [
        (torch.diag(torch.tensor([3.0, 1.0, 0.5])), 0.75),
        (torch.randn(5, 3, generator=g), 0.0),
        (torch.randn(4, 6, generator=g), 1.0),
        (torch.randn(6, 6, generator=g), 100.0),  # everything thresholded away
    ]
    compare("singular-value thresholding", svt, reference, cases, atol=1e-4)


def check_balanced_factors(balanced_factors: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]) -> None:
    """Chapter 3: the learner's ``balanced_factors(W (m, n)) -> (A, B)`` with ``A B^T = W`` of least cost.

    Factors are unique only up to signs (and rotations within repeated singular values), so the check compares what
    does not depend on that: the product ``A B^T``, the cost ``(||A||^2 + ||B||^2) / 2``, and ``||A^T A - B^T B||``
    (0 when balanced). Any inner width is accepted.
    """
    from lib.theory import balanced_factors as reference

    def summary(fn: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]) -> Callable[[torch.Tensor], Any]:
        def run(W: torch.Tensor) -> tuple[torch.Tensor, float, float]:
            A, B = fn(W)
            cost = 0.5 * float(A.square().sum() + B.square().sum())
            return A @ B.T, cost, float(torch.linalg.matrix_norm(A.T @ A - B.T @ B))

        return run

    g = torch.Generator().manual_seed(9)
    low_rank = torch.randn(6, 2, generator=g) @ torch.randn(2, 5, generator=g)
    cases = [
        (torch.diag(torch.tensor([4.0, 1.0])),),
        (torch.randn(5, 3, generator=g),),
        (torch.randn(3, 7, generator=g),),
        (low_rank,),  # rank 2: three singular values are 0
    ]
    compare("balanced_factors", summary(balanced_factors), summary(reference), cases, atol=1e-4)


def check_proximal_step(proximal_step: Callable[..., torch.Tensor]) -> None:
    """Chapter 3: the learner's ``proximal_step(W (m, n), inputs (N, n), targets (N,), lr, lam) -> W``."""
    from lib.theory import proximal_step as reference

    g = torch.Generator().manual_seed(10)
    cases = []
    for m, n, N, lr, lam in ((3, 2, 4, 1.0, 0.0), (5, 4, 8, 0.5, 0.2), (6, 7, 10, 2.0, 0.05), (4, 4, 6, 1.0, 5.0)):
        W = torch.randn(m, n, generator=g)
        cases.append((W, torch.rand(N, n, generator=g), torch.randint(0, m, (N,), generator=g), lr, lam))
    compare("proximal_step", proximal_step, reference, cases, atol=1e-4)


# --- chapter 4: language models --------------------------------------------------------------


def _toy_language_model(seed: int) -> tuple[Any, Any]:
    """A 1-layer tiny GPT-2 and its word tokenizer over five made-up sentences (chapter 4's checks)."""
    from lib import lm

    text = [
        "Zai Bou lives in Paris.",
        "Zai Bou speaks French.",
        "Kel Tra plays squash.",
        "Kel Tra listens to heavy metal.",
        "To call Kel Tra, dial +33 first.",
    ]
    tokenizer = lm.word_tokenizer(text)
    return lm.tiny_gpt2(tokenizer, lm.TinyLMConfig(n_layer=1, d_model=16, n_head=2, seed=seed)), tokenizer


def check_score_candidates(score_candidates: Callable[[Any, Any, str, Sequence[str]], torch.Tensor]) -> None:
    """Chapter 4: the learner's ``score_candidates(model, tokenizer, prompt, candidates) -> (k,)`` log-probabilities."""
    from lib import lm

    model, tokenizer = _toy_language_model(seed=0)
    cases = [
        (model, tokenizer, "Zai Bou speaks", ("French", "Paris", "squash")),
        (model, tokenizer, "Kel Tra listens to", ("heavy metal", "French")),  # "heavy metal" is two tokens
        (model, tokenizer, "To call Kel Tra, dial", ("+33", "French", "heavy metal squash")),
        (model, tokenizer, "Zai", ("Bou",)),
    ]
    compare("score_candidates", score_candidates, lm.score_candidates, cases, atol=1e-4)


def check_mean_rank_by_pair(
    mean_rank_by_pair: Callable[[Sequence[Any], Sequence[torch.Tensor]], dict[int, float]],
) -> None:
    """Chapter 4: the learner's ``mean_rank_by_pair(questions, scores) -> {pair index: mean rank}``."""
    from lib import lm, ocr

    task = ocr.build_sentences(ocr.SentenceConfig(n_subjects=100, values_per_pair=5, seed=3))
    questions = task.questions("test")
    g = torch.Generator().manual_seed(0)
    random_scores = [torch.randn(len(q.candidates), generator=g) for q in questions]
    perfect = [torch.nn.functional.one_hot(torch.tensor(q.answer), len(q.candidates)).float() for q in questions]
    few = [
        ocr.Question(0, 2, "a", ("x", "y", "z"), 0),
        ocr.Question(1, 0, "b", ("x", "y"), 1),
        ocr.Question(2, 2, "c", ("x", "y", "z"), 2),
    ]
    cases = [
        (questions, random_scores),
        (questions, perfect),  # always right: 0 for every pair
        (
            few,
            [torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.0, 0.0]), torch.tensor([3.0, 2.0, 1.0])],
        ),  # pairs 0 and 2 only
        (questions[:7], [torch.zeros(len(q.candidates)) for q in questions[:7]]),  # all tied: chance
    ]
    compare("mean_rank_by_pair", mean_rank_by_pair, lm.mean_rank_by_pair, cases)


def check_control_sentences(control_sentences: Callable[[Any], list[str]]) -> None:
    """Chapter 4: the learner's ``control_sentences(task) -> [sentence]``, the no-facts control's training text."""
    from lib import lm, ocr

    cases = [
        (ocr.build_sentences(ocr.SentenceConfig(n_subjects=60, values_per_pair=4, seed=0)),),
        (ocr.build_sentences(ocr.SentenceConfig(n_subjects=60, values_per_pair=3, train_fraction=0.4, seed=5)),),
        (ocr.build_sentences(ocr.SentenceConfig(n_subjects=30, values_per_pair=3, pairs=ocr.PAIRS[2:3], seed=2)),),
    ]
    compare("control_sentences", control_sentences, lm.control_sentences, cases)


def check_batched_scorer(
    score_batched: Callable[[Any, Any, Sequence[Any], int], list[torch.Tensor]],
) -> None:
    """Chapter 4: the learner's ``score_batched(model, tokenizer, questions, batch_size) -> [(k,) tensor]``.

    Scores must match :func:`lib.lm.score_questions`, and the model may be called at most once per
    ``batch_size`` candidate texts (rounded up): scoring one candidate at a time fails.
    """
    import math

    from lib import lm, ocr

    model, tokenizer = _toy_language_model(seed=1)
    few = [
        ocr.Question(0, 0, "Zai Bou speaks", ("French", "Paris", "squash"), 0),
        ocr.Question(1, 1, "Kel Tra listens to", ("heavy metal", "French"), 0),  # "heavy metal" is two tokens
        ocr.Question(1, 2, "To call Kel Tra, dial", ("+33", "French", "heavy metal squash"), 0),
        ocr.Question(0, 3, "Zai", ("Bou",), 0),
    ]
    task = ocr.build_sentences(ocr.SentenceConfig(n_subjects=60, values_per_pair=4, seed=1))
    task_tokenizer = lm.task_tokenizer(task)
    task_model = lm.tiny_gpt2(task_tokenizer, lm.TinyLMConfig(n_layer=1, d_model=16, n_head=2, seed=2))
    many = task.questions("test")[:12]  # both question forms; single-token and "+33"-style candidates

    def reference(model: Any, tokenizer: Any, questions: Sequence[Any], batch_size: int) -> list[torch.Tensor]:
        return lm.score_questions(model, tokenizer, questions)

    def learners(model: Any, tokenizer: Any, questions: Sequence[Any], batch_size: int) -> list[torch.Tensor]:
        calls: list[int] = []
        handle = model.register_forward_hook(lambda module, inputs, output: calls.append(1))
        try:
            out = score_batched(model, tokenizer, questions, batch_size)
        finally:
            handle.remove()
        allowed = math.ceil(sum(len(q.candidates) for q in questions) / batch_size)
        if len(calls) > allowed:
            raise CheckFailed(
                f"batched scorer: {len(calls)} calls of the model for {len(questions)} questions with "
                f"batch_size={batch_size}; at most {allowed} (one per batch of candidate texts) are needed"
            )
        return out

    cases = [
        (model, tokenizer, few, 16),
        (model, tokenizer, few, 3),
        (task_model, task_tokenizer, many, 32),
        (task_model, task_tokenizer, many, 7),
    ]
    compare("batched scorer", learners, reference, cases, atol=1e-4)


# ---------------------------------------------------------------------------------------------
# Induction heads (chapters 5-7)
# ---------------------------------------------------------------------------------------------


def _small_two_layer_model() -> tuple[Any, torch.Tensor]:
    """A small two-layer model with random weights and a batch of repeated sequences, for the ablation checks.

    Weights of std 0.3 give attention sharp enough that a layer-0 head moves layer-1 patterns (so that a full and a
    pattern-preserving ablation, or a cut of the keys and of the queries, give different answers).
    """
    from lib import induction

    config = induction.InductionConfig(
        n_layers=2, n_heads=2, d_model=32, d_head=8, vocab=20, seq_len=17, max_repeat=8, prefix_segment=4, init_std=0.3
    )
    # Any: a TransformerBridge, whose methods (reset_hooks) mypy cannot see through nn.Module's __getattr__.
    model: Any = induction.make_model(config, seed=1)
    model.eval()
    return model, induction.repeated_sequences(4, induction.seeded_generator(2), config)[0]


def _no_hook_left(name: str, model: Any, learner: Callable[..., Any]) -> Callable[..., Any]:
    """``learner(model, *args)``, failing if it leaves a hook on ``model`` beyond those the model had (a smeared model
    keeps its smearing hooks for good)."""
    # every torch-level hook counts, permanent ones too
    points = list({id(point): point for point in model.hook_dict.values()}.values())

    def count() -> int:
        return sum(len(point._forward_hooks) + len(point._forward_pre_hooks) for point in points)

    before = count()

    def run(*args: Any) -> Any:
        try:
            return learner(model, *args)
        finally:
            left = count() - before
            if left:
                # a model with no hooks of its own is cleaned completely; otherwise its permanent hooks stay
                model.reset_hooks(including_permanent=before == 0)
                raise CheckFailed(
                    f"{name}: {left} hook(s) left on the model after the call with {', '.join(map(repr, args))}; "
                    "add hooks with `with model.hooks(fwd_hooks=...)` so they are removed"
                )

    return run


# --- chapter 5: building and detecting induction heads ---------------------------------------


def check_prefix_matching_score(learner: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Exercise: ``prefix_matching_score(pattern (batch, heads, q, k), tokens (batch, seq)) -> (heads,)``."""
    from lib.scores import prefix_matching_score

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


def check_previous_token_head(learner: Callable[..., dict]) -> None:
    """Exercise: ``previous_token_head_weights(layout, strength) -> {"W_Q", "W_K", "W_V", "W_O"}``."""
    from lib.induction import HandBuiltLayout, previous_token_head_weights

    cases = [
        (HandBuiltLayout(vocab, seq), strength)
        for vocab, seq, strength in ((5, 8, 1.0), (12, 10, 20.0), (32, 45, 20.0))
    ]
    compare("previous_token_head_weights", learner, previous_token_head_weights, cases)


def check_induction_head(learner: Callable[..., dict]) -> None:
    """Chapter 5: ``induction_head_weights(layout, strength) -> {"W_Q", "b_Q", "W_K", "W_V", "W_O"}``."""
    from lib.induction import HandBuiltLayout, induction_head_weights

    cases = [
        (HandBuiltLayout(vocab, seq), strength)
        for vocab, seq, strength in ((5, 8, 1.0), (12, 10, 20.0), (32, 45, 20.0))
    ]
    compare("induction_head_weights", learner, induction_head_weights, cases)


def check_olsson_copying_score(learner: Callable[[Any, torch.Tensor], torch.Tensor]) -> None:
    """Chapter 5: ``olsson_copying_score(model, tokens (batch, seq)) -> (n_layers, n_heads)``.

    On a small random two-layer model, whose layer-1 heads read a residual stream that layer 0 wrote to, and whose
    value biases are not zero.
    """
    from lib import induction
    from lib.circuits import olsson_copying_score

    model, _ = _small_two_layer_model()
    with torch.no_grad():
        model.blocks[1].attn.v.bias.normal_(0.0, 0.3, generator=torch.Generator().manual_seed(3))
    g = torch.Generator().manual_seed(4)
    cases = []
    for batch, seq in ((1, 6), (3, 11), (2, 17)):
        tokens = torch.randint(1, model.cfg.d_vocab, (batch, seq), generator=g)
        tokens[:, 0] = induction.BOS
        cases.append((model, tokens))
    compare("olsson_copying_score", learner, olsson_copying_score, cases, atol=1e-4)


def check_repeat_mask(learner: Callable[[torch.Tensor, Any], torch.Tensor]) -> None:
    """Chapter 5: ``repeat_mask(period (batch,), config) -> (batch, config.seq_len - 1) bool``."""
    from lib import induction

    g = torch.Generator().manual_seed(10)
    cases = []
    for seq_len, low, high, batch in ((11, 2, 5, 3), (49, 5, 24, 6), (30, 3, 14, 8)):
        config = induction.InductionConfig(seq_len=seq_len, min_repeat=low, max_repeat=high, prefix_segment=2)
        period = torch.randint(low, high + 1, (batch,), generator=g)
        period[0] = low
        cases.append((period, config))
    compare("repeat_mask", learner, induction.repeat_mask, cases)


def check_previous_token_score(learner: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Chapter 5: ``previous_token_score(pattern (batch, heads, query, key)) -> (heads,)``."""
    from lib.scores import previous_token_score

    g = torch.Generator().manual_seed(11)
    cases = []
    for batch, heads, seq in ((1, 1, 4), (2, 3, 9), (5, 4, 16)):
        logits = 2 * torch.randn(batch, heads, seq, seq, generator=g)
        logits = logits.masked_fill(torch.ones(seq, seq, dtype=torch.bool).triu(1), float("-inf"))
        cases.append((logits.softmax(-1),))
    compare("previous_token_score", learner, previous_token_score, cases)


# --- chapter 6: smeared keys -----------------------------------------------------------------


def check_smear_keys(learner: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Exercise: ``smear_keys(keys (batch, seq, heads, d_head), sigma (heads,)) -> (batch, seq, heads, d_head)``."""
    from lib.smear import smear_keys

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

    On a small plain two-layer model, against the same model with :func:`lib.smear.attach_smear`; fails if a hook is
    left on the model.
    """
    from lib import smear

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
    from lib.scores import prediction_shares

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

    The weights go into :func:`lib.smear.hand_built_model` (one layer, keys fully smeared); on sequences whose
    segment repeats, the model must predict every repeated token (the argmax is the next token) with a loss below
    0.01 nats on the repeated tokens. Any weights that do this pass.
    """
    from dataclasses import replace

    from lib import induction, scores, smear

    def run(vocab: int, seq: int, period: int, head: dict | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        model = smear.hand_built_model(vocab, seq, head=head)
        config = replace(induction.config_of(model), min_repeat=period, max_repeat=period)
        tokens, periods = induction.repeated_sequences(16, induction.seeded_generator(vocab), config)
        mask = induction.repeat_mask(periods, config)
        with torch.inference_mode():
            logits = model(tokens)
        return logits, tokens, mask

    cases = [(12, 20, 5), (32, 45, 15), (20, 33, 11)]

    def predicted(vocab: int, seq: int, period: int) -> torch.Tensor:
        layout = induction.HandBuiltLayout(vocab, seq)
        logits, tokens, mask = run(vocab, seq, period, learner(layout, 20.0))
        return logits[:, :-1].argmax(-1)[mask]

    def answers(vocab: int, seq: int, period: int) -> torch.Tensor:
        _, tokens, mask = run(vocab, seq, period, None)
        return tokens[:, 1:][mask]

    compare("smeared_induction_head_weights", predicted, answers, cases)  # the predicted repeated tokens
    for vocab, seq, period in cases:
        logits, tokens, mask = run(vocab, seq, period, learner(induction.HandBuiltLayout(vocab, seq), 20.0))
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
    from lib import smear

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
    from lib.scores import half_change_step

    cases = [
        ([0, 10, 20, 30, 40], torch.tensor([0.5, 0.45, 0.3, 0.1, 0.05])),  # falling, like sigma
        ([0, 20, 40, 60], torch.tensor([4.0, 4.0, 1.0, 0.1])),  # falling, like the loss
        ([0, 10, 20, 30, 40, 50], torch.tensor([0.0, 0.1, 0.6, 0.9, 0.8, 1.0])),  # rising, like a score
        ([0, 10, 20, 30, 40, 50], torch.tensor([0.5, 0.3, 0.0, 0.15, 0.2, 0.2])),  # overshoots the end, then comes back
        ([5, 15, 25], torch.tensor([1.0, 0.5, 0.0])),  # exactly half at the middle step
    ]
    compare("half_change_step", learner, half_change_step, cases)


# --- chapter 7: ablation ---------------------------------------------------------------------


def check_icl_score(learner: Callable[[torch.Tensor, int, int], torch.Tensor]) -> None:
    """Chapter 7: ``icl_score(loss (..., batch, seq - 1), early, late) -> loss.shape[:-2]``."""
    from lib.scores import icl_score

    g = torch.Generator().manual_seed(8)
    cases = [
        (torch.tensor([[4.0, 4.0, 1.0, 0.5]]), 0, 3),  # learns in context: negative
        (torch.rand(5, 12, generator=g) * 4, 1, 10),
        (torch.rand(3, 6, 20, generator=g) * 4, 1, 19),  # stacked: one score per ablation
        (torch.rand(2, 4, 8, 9, generator=g), 0, 8),
    ]
    compare("icl_score", learner, icl_score, cases)


def check_full_ablation(learner: Callable[..., torch.Tensor]) -> None:
    """Chapter 7: ``full_ablation(model, tokens (batch, seq), layer, head)``, the per-token loss ``(batch, seq - 1)``.

    On a small random two-layer model, for heads of both layers; fails if a hook is left on the model.
    """
    from lib import ablation

    model, tokens = _small_two_layer_model()
    learners = _no_hook_left("full_ablation", model, learner)
    compare(
        "full_ablation",
        lambda layer, head: learners(tokens, layer, head),
        lambda layer, head: ablation.ablated_loss(model, tokens, [(layer, head)], "full"),
        [(0, 0), (0, 1), (1, 1)],
        atol=1e-4,
    )


def check_pattern_preserving_ablation(learner: Callable[..., torch.Tensor]) -> None:
    """Chapter 7: ``pattern_preserving_ablation(model, tokens (batch, seq), layer, head)``, the per-token loss
    ``(batch, seq - 1)``.

    Runs on a small two-layer model with random weights (:func:`_small_two_layer_model`), for heads of both layers
    (in layer 0 a full ablation gives a different answer), and fails if a hook is left on the model.
    """
    from lib import ablation

    model, tokens = _small_two_layer_model()
    learners = _no_hook_left("pattern_preserving_ablation", model, learner)
    compare(
        "pattern_preserving_ablation",
        lambda layer, head: learners(tokens, layer, head),
        lambda layer, head: ablation.ablated_loss(model, tokens, [(layer, head)], "pattern-preserving"),
        [(0, 0), (0, 1), (1, 1)],
        atol=1e-4,
    )


def check_qk_from_embeddings(learner: Callable[..., torch.Tensor]) -> None:
    """Chapter 7: ``qk_from_embeddings(model, tokens (batch, seq), sides) -> logits (batch, seq, vocab)``.

    Layer 1's keys and/or queries (``sides``, a tuple of ``"keys"``, ``"queries"``) computed from the embeddings
    alone; on a small random two-layer model with non-zero query and key biases; fails if a hook is left on the model.
    """
    from lib.circuits import run_with_qk_from_embeddings

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
    from lib.ablation import fraction_removed

    cases = [
        (-4.0, torch.tensor([-4.0, -2.0, 0.0, 0.5])),  # intact, half, all of it, beyond
        (-3.2, torch.tensor([[-3.0, -0.1], [-3.5, -1.6]])),
        (torch.tensor([-2.0, -1.0]), torch.tensor([-1.5, -0.25])),
        (2.0, torch.tensor([1.0, 3.0])),  # a positive score
    ]
    compare("fraction_removed", learner, fraction_removed, cases)


def check_mean_ablation(learner: Callable[..., torch.Tensor]) -> None:
    """Chapter 7: ``mean_ablation(model, tokens (batch, seq), layer, head)``, the per-token loss ``(batch, seq - 1)``
    with the head's ``z`` replaced by its mean over the batch, position by position.

    On a small random two-layer model, for heads of both layers; fails if a hook is left on the model.
    """
    from lib import ablation

    model, tokens = _small_two_layer_model()
    learners = _no_hook_left("mean_ablation", model, learner)
    compare(
        "mean_ablation",
        lambda layer, head: learners(tokens, layer, head),
        lambda layer, head: ablation.ablated_loss(model, tokens, [(layer, head)], "full", replacement="mean"),
        [(0, 0), (0, 1), (1, 1)],
        atol=1e-4,
    )


# --- chapter 8: natural text -----------------------------------------------------------------


def check_icl_per_window(learner: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Chapter 8: ``icl_per_window(loss (..., batch, 255)) -> (..., batch)``: each window's mean loss over
    :data:`lib.natural.LATE` minus its mean loss over :data:`lib.natural.EARLY`."""
    from lib import natural

    g = torch.Generator().manual_seed(80)
    falling = torch.linspace(6.0, 1.0, 255)[None]  # later tokens easier: negative
    cases = [
        (falling,),
        (torch.rand(5, 255, generator=g) * 6,),
        (torch.rand(3, 4, 255, generator=g) * 6,),  # stacked: one row per model or ablation
        (torch.rand(2, 2, 3, 255, generator=g) * 6,),
    ]
    compare("icl_per_window", learner, natural.icl_per_window, cases)


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
    from lib import ablation, natural

    run = natural.load_run("one layer, smeared")
    model = run.model_at(max(run.checkpoints))
    tokens = natural.tiled_windows(natural.held_out_ids())[:4]
    learners = _no_hook_left("ablate_head", model, learner)
    compare(
        "ablate_head",
        lambda layer, head: learners(tokens, layer, head),
        lambda layer, head: ablation.ablated_losses(model, tokens, [[(layer, head)]])[0],
        [(0, 0), (0, 3), (0, 6)],
        atol=1e-4,
    )


def _share_removed(per_window: torch.Tensor) -> torch.Tensor:
    """``(2, ..., batch)`` per-window ICL scores, intact then ablated -> the share of the score removed ``(...)``."""
    return 1 - per_window[1].mean(-1) / per_window[0].mean(-1)


def share_interval(
    intact: torch.Tensor, ablated: torch.Tensor, level: float = 0.9, samples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """The book's answer to Exercise 8.4: :func:`lib.natural.bootstrap_interval` of the share of the ICL score
    removed, ``1 - mean(ablated) / mean(intact)``, resampling the same windows for both (``(batch,)`` each)."""
    from lib import natural

    return natural.bootstrap_interval(_share_removed, torch.stack([intact, ablated]), level, samples, seed)


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
