"""Checks of the exercises of Part I, out-of-context reasoning (chapters 1-4)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from lib.exercises.framework import CheckFailed, compare


def check_shifted_map(shifted_map: Callable[[Sequence[tuple[str, str]], int], Any]) -> None:
    """Chapter 1: the learner's ``shifted_map(mapping, shift) -> ((b_0, c_shift), (b_1, c_{1+shift}), ...)``."""
    from lib.ocr import relations

    small = (("a", "x"), ("b", "y"), ("c", "z"), ("d", "w"))
    cases = [
        (small, 1),
        (small, 3),
        (small, -1),  # negative shifts wrap around too
        (small, 6),  # a shift longer than the list
        (relations.CITY_LANGUAGE, relations.COUNTERFACTUAL_SHIFT),  # the book's counterfactual rule
    ]
    compare("shifted_map", shifted_map, relations.shifted_map, cases)


def check_split_subjects(split_subjects: Callable[[Sequence[Any], float], tuple[list[int], list[int]]]) -> None:
    """Chapter 1: the learner's ``split_subjects(group_of, train_fraction) -> (train, test)``."""
    from lib.ocr import split, symbolic

    minimal = symbolic.build_symbolic()
    cases = [
        ([0, 1, 0, 1, 0, 1, 0, 1, 0, 1], 0.2),
        ([2, 2, 2, 0, 0, 0, 0, 1, 1, 1], 0.25),  # groups of 3 and 4: 0.75 -> 1 and 1.0 -> 1
        (["b", "a", "b", "a", "a", "b", "b"], 0.5),  # string labels; 2 of 4 "b", 1.5 -> 2 of 3 "a"
        (minimal.fact_of.tolist(), 0.25),  # the minimal experiment: one in four subjects per fact trains
        ([0] * 5 + [1] * 5 + [2] * 10, 0.4),
        ([1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1], 0.5),  # 2.5 rounds half up to 3 (Python's round() gives 2)
    ]
    compare("split_subjects", split_subjects, split.split_subjects, cases)


def check_mean_rank(mean_rank: Callable[[torch.Tensor, torch.Tensor], float]) -> None:
    """Chapter 1: the learner's ``mean_rank(scores (n, k), answer (n,)) -> float``."""
    from lib.ocr import sentences

    g = torch.Generator().manual_seed(0)
    cases = [
        (torch.tensor([[3.0, 1.0, 2.0]]), torch.tensor([0])),  # ranked first: 0
        (torch.tensor([[3.0, 1.0, 2.0]]), torch.tensor([1])),  # ranked last: 2
        (torch.tensor([[0.5, 0.2], [0.1, 0.9], [1.0, 4.0]]), torch.tensor([0, 0, 1])),
        (torch.zeros(2, 5), torch.tensor([0, 3])),  # all tied: the expected rank, (5 - 1) / 2
        (torch.tensor([[1.0, 2.0, 2.0, 0.0]]), torch.tensor([1])),  # one tie above nothing: 0.5
        (torch.randn(50, 8, generator=g), torch.randint(0, 8, (50,), generator=g)),
    ]
    compare("mean_rank", mean_rank, sentences.mean_rank, cases)


def check_pair_sentences(pair_sentences: Callable[[Any, str, str], Any]) -> None:
    """Chapter 1: the learner's ``pair_sentences(pair, name, fact_value) -> (facts, implications)``."""
    from lib.ocr import relations, sentences

    cases = [
        (relations.PAIRS[0], "Tomeka Vadu", "Paris"),
        (
            relations.PAIRS[1],
            "Lirona Besk",
            relations.PAIRS[1].fact_values[0],
        ),  # the counterfactual rule's own language
        (relations.PAIRS[2], "Ossa Venrik", "Japan"),
        (relations.minimal_pair(3), "s7", "b2"),  # default templates: "{s} {r1} {b}." needs the relation words
    ]
    compare("pair_sentences", pair_sentences, sentences.pair_sentences, cases)


def check_train_batch(train_batch: Callable[[Any, int, torch.Generator], tuple[torch.Tensor, torch.Tensor]]) -> None:
    """Chapter 1: the learner's ``train_batch(task, batch_size, generator) -> (x (B, T), y (B,))``, the training mix."""
    from lib.ocr import symbolic

    minimal, five = symbolic.build_symbolic(), symbolic.build_symbolic(symbolic.SymbolicConfig(five_pairs=True))
    cases = [(minimal, 6, 0), (minimal, 7, 1), (minimal, 8, 2), (five, 30, 3), (five, 100, 4)]  # 7 and 8: remainders

    def with_generator(fn: Callable[..., Any]) -> Callable[..., Any]:
        # a fresh generator per call, so the learner's and the reference's draws start from the same state
        return lambda task, batch_size, seed: fn(task, batch_size, torch.Generator().manual_seed(seed))

    compare("train_batch", with_generator(train_batch), with_generator(symbolic.SymbolicTask.train_batch), cases)


def check_symbolic_sequences(
    symbolic_sequences: Callable[..., tuple[torch.Tensor, torch.Tensor]],
) -> None:
    """Chapter 1: the learner's ``symbolic_sequences(task, group, subjects, noise, where) -> (x, y)``."""
    from lib.ocr import split, symbolic

    g = torch.Generator().manual_seed(4)
    specs: list[tuple[symbolic.SymbolicConfig, split.Group, int]] = [
        (symbolic.SymbolicConfig(), "test_implications", 6),
        (symbolic.SymbolicConfig(), "train_facts", 5),
        (symbolic.SymbolicConfig(five_pairs=True), "train_implications", 12),  # every rule has its own relation tokens
        (symbolic.SymbolicConfig(five_pairs=True, seq_len=6, n_noise=2), "test_facts", 9),
    ]
    cases = []
    for config, group, n in specs:
        task = symbolic.build_symbolic(config)
        pool = task.subjects_of(group)
        subjects = pool[torch.randint(0, len(pool), (n,), generator=g)]
        noise = task.noise_ids[torch.randint(0, len(task.noise_ids), (n, config.seq_len), generator=g)]
        where = torch.randint(0, config.seq_len - 2, (n,), generator=g)
        where[:2] = torch.tensor([0, config.seq_len - 3])  # both ends of the allowed range
        cases.append((task, group, subjects, noise, where))
    compare(
        "symbolic_sequences", symbolic_sequences, symbolic.symbolic_sequences, cases, on_device=False
    )  # CPU in ch. 1


def check_factorized_forward(
    forward: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
) -> None:
    """Chapter 2: the learner's ``forward(W_O (d, r), W_V (d, r), W_KQ (d, d), tokens (T,)) -> f(X) (d,)``."""
    from lib.ocr.onelayer import forward_reference

    g = torch.Generator().manual_seed(0)
    cases = []
    for d, r, T in ((4, 2, 3), (6, 6, 5), (8, 3, 1), (10, 4, 7)):
        tokens = torch.randint(0, d, (T,), generator=g)
        if T > 2:
            tokens[1] = tokens[-1]  # a repeated token: X^T X counts it twice
            tokens[0] = (tokens[-1] + 1) % d  # and a first token unlike the last (the query is the last one)
        cases.append(
            (torch.randn(d, r, generator=g), torch.randn(d, r, generator=g), torch.randn(d, d, generator=g), tokens)
        )
    compare("factorized forward", forward, forward_reference, cases, atol=1e-4)


def check_candidate_accuracy(accuracy: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], float]) -> None:
    """Chapter 2: the learner's ``accuracy(logits (N, V), answers (N,), candidates (K,)) -> float``."""
    from lib.ocr.training import candidate_accuracy

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
    from lib.ocr.training import candidate_loss

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
    from lib.ocr.theorem import numerical_rank as reference

    g = torch.Generator().manual_seed(12)
    low_rank = torch.randn(8, 3, generator=g) @ torch.randn(3, 6, generator=g)
    cases = [
        (torch.diag(torch.tensor([300.0, 1.0, 0.05])), 1e-3),  # relative to the largest: 0.3, so 2
        (low_rank + 1e-6 * torch.randn(8, 6, generator=g), 1e-3),  # rank 3 plus rounding-size noise
        (torch.randn(5, 7, generator=g), 1e-2),
        (torch.diag(torch.tensor([1.0, 0.5, 0.2, 0.05])), 0.1),
        (torch.zeros(3, 4), 1e-3),  # no singular value is larger than 0: rank 0
    ]
    compare("numerical_rank", numerical_rank, reference, cases, on_device=False)  # ch. 2 ranks on the CPU


def check_merged_forward(forward: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Chapter 2: the learner's ``merged_forward(W_OV (d, d), W_KQ (d, d), tokens (B, T)) -> (B, d)``."""
    from lib.ocr.onelayer import merged_forward_reference

    g = torch.Generator().manual_seed(7)
    cases = []
    for d, B, T in ((4, 1, 3), (6, 3, 5), (9, 5, 1), (12, 4, 8)):
        tokens = torch.randint(0, d, (B, T), generator=g)
        tokens[:, T // 2] = tokens[:, -1]  # a repeated token (the query itself): it is counted twice
        cases.append((torch.randn(d, d, generator=g), torch.randn(d, d, generator=g), tokens))
    compare("merged forward", forward, merged_forward_reference, cases, atol=1e-4)


def check_column_push(column_push: Callable[..., torch.Tensor]) -> None:
    """Chapter 2: the learner's ``column_push(params, tokens (B, T), answers (B,), subject, rows (k,)) -> (k,)``."""
    from lib.ocr.onelayer import column_push as reference

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
    from lib.ocr.theory import multiclass_margins

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
    from lib.ocr.theory import matrix_norm

    g = torch.Generator().manual_seed(13)
    cases = [
        (torch.diag(torch.tensor([3.0, -1.0, 0.5])),),  # singular values are never negative: 4.5
        (torch.randn(5, 3, generator=g),),
        (torch.randn(4, 7, generator=g),),
        (torch.randn(6, 1, generator=g) @ torch.randn(1, 4, generator=g),),  # rank 1: equals the largest
    ]
    compare(
        "nuclear_norm", nuclear_norm, lambda W: matrix_norm(W, "nuclear"), cases, atol=1e-4, on_device=False
    )  # ch. 3 calls it on the CPU (an SVD)


def check_two_row_nuclear_norm(two_row_nuclear_norm: Callable[[int, int, float], float]) -> None:
    """Chapter 3: the learner's ``two_row_nuclear_norm(m_train, m_test, t) -> float``."""
    from lib.ocr.theorem import two_row_nuclear_norm as reference

    cases = [(1, 3, 0.0), (1, 3, 3**-0.5), (2, 2, 1.0), (1, 1, 1.5), (3, 5, 0.3), (1, 8, 0.9)]
    compare("two_row_nuclear_norm", two_row_nuclear_norm, reference, cases, atol=1e-4)


def check_svt(svt: Callable[[torch.Tensor, float], torch.Tensor]) -> None:
    """Chapter 3: the learner's ``svt(W (m, n), tau) -> W`` (singular-value thresholding)."""
    from lib.ocr.theory import svt as reference

    g = torch.Generator().manual_seed(3)
    cases = [
        (torch.diag(torch.tensor([3.0, 1.0, 0.5])), 0.75),
        (torch.randn(5, 3, generator=g), 0.0),
        (torch.randn(4, 6, generator=g), 1.0),
        (torch.randn(6, 6, generator=g), 100.0),  # everything thresholded away
    ]
    compare("singular-value thresholding", svt, reference, cases, atol=1e-4, on_device=False)  # CPU in ch. 3


def check_balanced_factors(balanced_factors: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]) -> None:
    """Chapter 3: the learner's ``balanced_factors(W (m, n)) -> (A, B)`` with ``A B^T = W`` of least cost.

    Factors are unique only up to signs (and rotations within repeated singular values), so the check compares what
    does not depend on that: the product ``A B^T``, the cost ``(||A||^2 + ||B||^2) / 2``, and ``||A^T A - B^T B||``
    (0 when balanced). Any inner width is accepted.
    """
    from lib.ocr.theory import balanced_factors as reference

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
    compare(
        "balanced_factors", summary(balanced_factors), summary(reference), cases, atol=1e-4, on_device=False
    )  # CPU in ch. 3


def check_proximal_step(proximal_step: Callable[..., torch.Tensor]) -> None:
    """Chapter 3: the learner's ``proximal_step(W (m, n), inputs (N, n), targets (N,), lr, lam) -> W``."""
    from lib.ocr.theory import proximal_step as reference

    g = torch.Generator().manual_seed(10)
    cases = []
    for m, n, N, lr, lam in ((3, 2, 4, 1.0, 0.0), (5, 4, 8, 0.5, 0.2), (6, 7, 10, 2.0, 0.05), (4, 4, 6, 1.0, 5.0)):
        W = torch.randn(m, n, generator=g)
        cases.append((W, torch.rand(N, n, generator=g), torch.randint(0, m, (N,), generator=g), lr, lam))
    compare("proximal_step", proximal_step, reference, cases, atol=1e-4, on_device=False)  # CPU in ch. 3


def _toy_language_model(seed: int) -> tuple[Any, Any]:
    """A 1-layer tiny GPT-2 and its word tokenizer over five made-up sentences (chapter 4's checks)."""
    from lib.ocr import lm

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
    from lib.ocr import ranking

    model, tokenizer = _toy_language_model(seed=0)
    cases = [
        (model, tokenizer, "Zai Bou speaks", ("French", "Paris", "squash")),
        (model, tokenizer, "Kel Tra listens to", ("heavy metal", "French")),  # "heavy metal" is two tokens
        (model, tokenizer, "To call Kel Tra, dial", ("+33", "French", "heavy metal squash")),
        (model, tokenizer, "Zai", ("Bou",)),
    ]
    compare("score_candidates", score_candidates, ranking.score_candidates, cases, atol=1e-4)


def check_mean_rank_by_pair(
    mean_rank_by_pair: Callable[[Sequence[Any], Sequence[torch.Tensor]], dict[int, float]],
) -> None:
    """Chapter 4: the learner's ``mean_rank_by_pair(questions, scores) -> {pair index: mean rank}``."""
    from lib.ocr import ranking, sentences

    task = sentences.build_sentences(sentences.SentenceConfig(n_subjects=100, values_per_pair=5, seed=3))
    questions = task.questions("test")
    g = torch.Generator().manual_seed(0)
    random_scores = [torch.randn(len(q.candidates), generator=g) for q in questions]
    perfect = [torch.nn.functional.one_hot(torch.tensor(q.answer), len(q.candidates)).float() for q in questions]
    few = [
        sentences.Question(0, 2, "a", ("x", "y", "z"), 0),
        sentences.Question(1, 0, "b", ("x", "y"), 1),
        sentences.Question(2, 2, "c", ("x", "y", "z"), 2),
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
    compare("mean_rank_by_pair", mean_rank_by_pair, ranking.mean_rank_by_pair, cases)


def check_control_sentences(control_sentences: Callable[[Any], list[str]]) -> None:
    """Chapter 4: the learner's ``control_sentences(task) -> [sentence]``, the no-facts control's training text."""
    from lib.ocr import lm, relations, sentences

    cases = [
        (sentences.build_sentences(sentences.SentenceConfig(n_subjects=60, values_per_pair=4, seed=0)),),
        (
            sentences.build_sentences(
                sentences.SentenceConfig(n_subjects=60, values_per_pair=3, train_fraction=0.4, seed=5)
            ),
        ),
        (
            sentences.build_sentences(
                sentences.SentenceConfig(n_subjects=30, values_per_pair=3, pairs=relations.PAIRS[2:3], seed=2)
            ),
        ),
    ]
    compare("control_sentences", control_sentences, lm.control_sentences, cases)


def check_batched_scorer(
    score_batched: Callable[[Any, Any, Sequence[Any], int], list[torch.Tensor]],
) -> None:
    """Chapter 4: the learner's ``score_batched(model, tokenizer, questions, batch_size) -> [(k,) tensor]``.

    Scores must match :func:`lib.ocr.ranking.score_questions`, and the model may be called at most once per
    ``batch_size`` candidate texts (rounded up): scoring one candidate at a time fails.
    """
    import math

    from lib.ocr import lm, ranking, sentences

    model, tokenizer = _toy_language_model(seed=1)
    few = [
        sentences.Question(0, 0, "Zai Bou speaks", ("French", "Paris", "squash"), 0),
        sentences.Question(1, 1, "Kel Tra listens to", ("heavy metal", "French"), 0),  # "heavy metal" is two tokens
        sentences.Question(1, 2, "To call Kel Tra, dial", ("+33", "French", "heavy metal squash"), 0),
        sentences.Question(0, 3, "Zai", ("Bou",), 0),
    ]
    task = sentences.build_sentences(sentences.SentenceConfig(n_subjects=60, values_per_pair=4, seed=1))
    task_tokenizer = lm.task_tokenizer(task)
    task_model = lm.tiny_gpt2(task_tokenizer, lm.TinyLMConfig(n_layer=1, d_model=16, n_head=2, seed=2))
    many = task.questions("test")[:12]  # both question forms; single-token and "+33"-style candidates

    def reference(model: Any, tokenizer: Any, questions: Sequence[Any], batch_size: int) -> list[torch.Tensor]:
        return ranking.score_questions(model, tokenizer, questions)

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
