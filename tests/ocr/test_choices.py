"""lib.ocr: each string option's Literal values are the one constant the run-time checks use; messages; layout."""

from typing import get_args

import pytest
import torch

from lib.ocr import relations, sentences, split, symbolic


@pytest.fixture(scope="module")
def minimal():
    return symbolic.build_symbolic()


def test_constants_are_the_literal_values(minimal):
    assert split.GROUPS == get_args(split.Group) == minimal.GROUPS
    assert set(split.TRAIN_GROUPS) < set(split.GROUPS) and len(split.TRAIN_GROUPS) == 3
    assert split.SPLITS == ("train", "test")
    assert symbolic.RELATION_POSITIONS == get_args(symbolic.RelationPosition) == ("fixed", "random")
    assert relations.LINKS == get_args(relations.Link)
    assert tuple(minimal.token_blocks()) == symbolic.TOKEN_KINDS


def test_every_group_and_split_is_accepted(minimal):
    for group in split.GROUPS:
        x, y = minimal.fixed(group)
        assert len(x) == len(y) == len(minimal.subjects_of(group))
    task = sentences.build_sentences(sentences.SentenceConfig(n_subjects=100, values_per_pair=5))
    assert {q.subject for q in task.questions("train")} == set(task.train_subjects)
    assert {q.subject for q in task.questions("test")} == set(task.test_subjects)


def test_training_mix_is_the_train_groups(minimal):
    x, _ = minimal.train_batch(6, torch.Generator().manual_seed(0))
    asks_implication = torch.isin(x[:, -2], minimal.implication_relation_of)
    assert asks_implication.tolist() == [False, False, True, True, False, False]  # train_facts, train_impl., test_facts


@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda t: t.sample("facts", 1, torch.Generator()),
            r"group must be one of \['train_facts', 'test_facts', .*\], got 'facts'",
        ),
        (lambda t: t.fixed("test_facts", seed=-1), r"seed must be an integer in \[0, 2\*\*63\)"),
        (lambda t: t.fixed("test_facts", per_subject=0), "per_subject must be a positive integer, got 0"),
        (lambda t: t.train_batch(2, torch.Generator()), r"batch_size must be an integer >= 3 \(one example per"),
    ],
)
def test_bad_symbolic_arguments(minimal, call, match):
    with pytest.raises(ValueError, match=match):
        call(minimal)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: sentences.build_sentences().questions("all"), r"group must be one of \['train', 'test'\], got 'all'"),
        (
            lambda: sentences.build_sentences().fact_sentences(True),
            r"subject must be an integer in \[0, 199\], got True",
        ),
        (lambda: split.assign_groups(4, 0, 1, torch.Generator()), "n_subsets must be a positive integer, got 0"),
        (lambda: symbolic.SymbolicConfig(n_noise=-1), "n_noise must be a non-negative integer, got -1"),
        (lambda: sentences.SentenceConfig(seed=2**63), r"seed must be an integer in \[0, 2\*\*63\)"),
    ],
)
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_layout_lines_fit_the_page():
    layout = symbolic.SymbolicConfig().layout
    assert layout.splitlines()[1:] == [
        "position 14: the relation token;",
        "position 15: EOS, where the answer is predicted",
    ]
    assert all(len(line) <= 79 for line in layout.splitlines())
    paper = symbolic.SymbolicConfig(relation_position="random").layout
    assert "random position after it" in paper and paper != layout
    assert all(len(line) <= 79 for line in paper.splitlines())
