"""lib.ocr.lm's prior-knowledge experiment: the known and new people, the ranks under each rule, the runs; the
figure."""

import dataclasses
import math

import matplotlib.pyplot as plt
import pytest
import torch

from lib.core.train import TrainConfig
from lib.ocr import lm, prior, ranking, relations
from lib.show import plot

TRUE, CF = (next(p for p in relations.PAIRS if p.link == link) for link in ("causal", "counterfactual"))
# a four-value rule taken as the world's true rule, and its counterfactual (each b_i gets c_{i+1}): fast enough to
# train in a test
SMALL = dataclasses.replace(
    relations.minimal_pair(4), link="causal", link_reason="taken as the world's rule in these tests"
)
SMALL_CF = relations.RelationPair(
    "r1 -> r2 (counterfactual)",
    "r1",
    "r2",
    tuple((f"b{i}", f"c{(i + 1) % 4}") for i in range(4)),
    link="counterfactual",
    link_reason="each b_i gets c_(i+1)",
)


@pytest.fixture(scope="module")
def data():
    return prior.build_prior(prior.PriorConfig(n_known=60, n_new=60, seed=3))


def test_known_and_new_people(data):
    known, new = data.world.names, data.new[0].names
    assert len(known) == 60 and len(new) == 60 and not set(known) & set(new)
    assert [t.config.pairs for t in data.new] == [(TRUE,), (CF,)]
    assert data.rule_names == (TRUE.name, CF.name)
    # the same people, facts and split under both rules; every person's implication differs between them
    true, cf = data.new
    assert true.names == cf.names and true.fact_of == cf.fact_of
    assert (true.train_subjects, true.test_subjects) == (cf.train_subjects, cf.test_subjects)
    assert all(a != b for a, b in zip(true.implication_of, cf.implication_of))
    assert all(CF.implication(b) == c for b, c in zip(cf.fact_of, cf.implication_of))
    # every city is used, so both rules ask among the same 20 languages
    assert set(true.candidates(0)) == set(cf.candidates(0)) == {c for _, c in TRUE.implication_map}
    assert len(true.candidates(0)) == 20


def test_world_text_is_every_known_fact_and_true_implication_and_nothing_new(data):
    text = data.world_sentences()
    w = data.world
    assert len(text) == len(w.names) * (len(TRUE.fact_templates) + len(TRUE.implication_templates))
    for i, name in enumerate(w.names):
        assert f"{name} lives in {w.fact_of[i]}." in text
        assert f"{name} speaks {TRUE.implication(w.fact_of[i])}." in text
    assert not any(name in s for name in data.new[0].names for s in text)
    tok = data.tokenizer
    every = text + [s for t in data.new for s in t.train_sentences()]
    every += [f"{q.prompt} {c}" for q in data.new[0].questions("test") for c in q.candidates]
    assert all(tok.unk_token_id not in ids for ids in tok(every)["input_ids"])


def test_the_world_follows_the_causal_rule_wherever_it_stands():
    """The rules' order does not decide which one the world follows: their links do."""
    assert prior.PriorConfig().rules == (TRUE, CF) and prior.PriorConfig().world_rule is TRUE
    swapped = prior.build_prior(prior.PriorConfig(n_known=40, n_new=60, rules=(CF, TRUE), seed=3))
    assert swapped.config.world_rule is TRUE and swapped.rule_names == (CF.name, TRUE.name)
    w = swapped.world
    assert w.config.pairs == (TRUE,)
    assert all(
        f"{name} speaks {TRUE.implication(w.fact_of[i])}." in swapped.world_sentences()
        for i, name in enumerate(w.names)
    )
    assert [t.config.pairs for t in swapped.new] == [(CF,), (TRUE,)]


def test_build_prior_is_deterministic():
    a, b = (
        prior.build_prior(prior.PriorConfig(n_known=40, n_new=60)),
        prior.build_prior(prior.PriorConfig(n_known=40, n_new=60)),
    )
    assert a.world_sentences() == b.world_sentences() and a.new[1].train_sentences() == b.new[1].train_sentences()
    assert a.tokenizer.get_vocab() == b.tokenizer.get_vocab()
    c = prior.build_prior(prior.PriorConfig(n_known=40, n_new=60, seed=1))
    assert c.world.names != a.world.names


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(rules=()), "non-empty tuple of RelationPair"),
        (dict(rules=(TRUE, relations.PAIRS[2])), "differ only in their implication map"),
        (dict(rules=(TRUE, TRUE)), "names must be distinct"),
        (
            dict(rules=(CF, dataclasses.replace(TRUE, link="arbitrary"))),
            r"rules must hold exactly one rule with link 'causal' \(the rule the world follows\), "
            r"got links \['counterfactual', 'arbitrary'\]",
        ),
        (dict(rules=(TRUE, dataclasses.replace(CF, link="causal"))), r"exactly one rule with link 'causal'"),
        (dict(n_known=39), r"n_known must be an integer >= 40 \(two known people per fact value, 20\), got 39"),
        (dict(n_new=0), "n_new must be a positive integer"),
        (dict(train_fraction=1.0), "train_fraction"),
        (dict(crossover=relations.PAIRS[2]), "differ only in their implication map"),
        (dict(crossover=CF), "crossover must not be one of rules"),
        (dict(crossover="x"), "crossover must be a RelationPair or None, got str"),
        (
            dict(
                crossover=dataclasses.replace(
                    CF, name="x", implication_map=relations.shifted_map(TRUE.implication_map, 20)
                )
            ),
            r"must give every fact value another implication than every rule does; it agrees with one on \['Paris'",
        ),
    ],
)
def test_prior_config_rejects(kwargs, match):
    with pytest.raises(ValueError, match=match):
        prior.PriorConfig(**kwargs)


def test_crossover_world_is_the_same_people_and_facts_under_the_third_rule():
    assert all(prior.CROSSOVER.implication(b) not in (TRUE.implication(b), CF.implication(b)) for b in TRUE.fact_values)
    plain = prior.build_prior(prior.PriorConfig(n_known=40, n_new=60))
    data = prior.build_prior(prior.PriorConfig(n_known=40, n_new=60, crossover=prior.CROSSOVER))
    w, x = data.world, data.crossover_world
    assert x is not None and x.names == w.names and x.fact_of == w.fact_of
    assert all(prior.CROSSOVER.implication(b) == c for b, c in zip(x.fact_of, x.implication_of))
    assert (
        data.world_sentences() == plain.world_sentences() and data.tokenizer.get_vocab() == plain.tokenizer.get_vocab()
    )
    text = data.crossover_sentences()
    assert len(text) == len(data.world_sentences()) and all(
        f"{n} speaks {c}." in text for n, c in zip(x.names, x.implication_of)
    )
    with pytest.raises(ValueError, match="has no crossover rule"):
        plain.crossover_sentences()


def test_run_prior_knowledge_with_a_crossover_rule_adds_its_arms_and_keeps_the_others():
    small_x = dataclasses.replace(
        SMALL_CF, name="r1 -> r2 (crossover)", implication_map=tuple((f"b{i}", f"c{(i + 2) % 4}") for i in range(4))
    )
    plain = small_experiment(checkpoint_steps=(0, 2))
    crossed = dataclasses.replace(plain, data=dataclasses.replace(plain.data, crossover=small_x))
    a, b = prior.run_prior_knowledge(plain, seed=5), prior.run_prior_knowledge(crossed, seed=5)
    assert a.inits == prior.INITS and b.inits == prior.INITS + (prior.CROSSOVER_INIT,)
    assert a.crossover_after_pretraining is None and b.crossover_after_pretraining is not None
    assert (
        set(b.held_out) == set(b.top1) == set(b.world_after_fine_tuning) == {(i, r) for i in b.inits for r in b.rules}
    )
    for key, ranks in a.held_out.items():  # the crossover arms leave the others as they were
        assert torch.equal(b.held_out[key], ranks) and b.world_after_fine_tuning[key] == a.world_after_fine_tuning[key]
    # all starts share one model at initialisation, so at step 0 the crossover arm differs only by its pre-training
    assert not torch.equal(b.held_out[prior.CROSSOVER_INIT, SMALL.name][0], b.held_out["from scratch", SMALL.name][0])
    torch.testing.assert_close(
        b.rank(prior.CROSSOVER_INIT, SMALL.name), b.held_out[prior.CROSSOVER_INIT, SMALL.name][:, 0]
    )
    with pytest.raises(ValueError, match="init must be one of"):
        a.rank(prior.CROSSOVER_INIT, SMALL.name)


def test_rule_ranks_rank_each_rules_answer_like_mean_rank_per_pair(data):
    """One scoring pass, each rule's answer: the same numbers as scoring each rule's own task."""
    model = lm.tiny_gpt2(data.tokenizer, lm.TinyLMConfig(n_layer=1, d_model=16, n_head=2, seed=1))
    lm.fine_tune(model, data.tokenizer, data.world_sentences(), TrainConfig(steps=30, lr=1e-2, progress=False))
    for group, form in (("test", 0), ("train", 0), ("test", 1)):
        ranks = prior.rule_ranks(model, data, group, form)
        expected = [
            ranking.mean_rank_per_pair(model, data.tokenizer, t, group, [form])[t.pairs[0].name] for t in data.new
        ]
        assert ranks == pytest.approx(expected)


def test_candidate_scorer_scores_any_model_like_score_questions(data):
    questions = data.new[0].questions("test")  # both forms: single-token languages after two prompt kinds
    scorer = ranking.CandidateScorer(data.tokenizer, questions, batch_size=7)
    for seed in (0, 1):
        model = lm.tiny_gpt2(data.tokenizer, lm.TinyLMConfig(n_layer=1, d_model=16, n_head=2, seed=seed))
        q = questions[0]
        full = model(input_ids=torch.tensor([data.tokenizer(f"{q.prompt} {q.candidates[3]}")["input_ids"]]))
        expected = full.logits[0, -2].log_softmax(-1)[data.tokenizer.convert_tokens_to_ids(q.candidates[3])]
        got = scorer(model)
        torch.testing.assert_close(got[0][3], expected, atol=1e-5, rtol=1e-5)
        for a, b in zip(got, ranking.score_questions(model, data.tokenizer, questions)):
            torch.testing.assert_close(a, b)


def small_experiment(**fine_tune):
    return prior.PriorExperiment(
        data=prior.PriorConfig(n_known=24, n_new=20, rules=(SMALL, SMALL_CF)),
        model=lm.TinyLMConfig(n_layer=1, d_model=16, n_head=2),
        pretrain=TrainConfig(steps=6, lr=1e-2, batch_size=8, progress=False),
        fine_tune=TrainConfig(**{"steps": 4, "lr": 1e-2, "batch_size": 8, "progress": False, **fine_tune}),
    )


def test_run_prior_knowledge_layout_and_shared_starting_points():
    run = prior.run_prior_knowledge(small_experiment(checkpoint_steps=(0, 2)), seed=5)
    assert run.steps == (0, 2, 4) and run.rules == (SMALL.name, SMALL_CF.name)
    assert set(run.held_out) == set(run.train_after) == {(i, r) for i in prior.INITS for r in run.rules}
    assert all(t.shape == (3, 2) for t in run.held_out.values())
    # at step 0 the two arms of each start are the same model: the same ranks, whichever rule comes next
    for init in prior.INITS:
        torch.testing.assert_close(run.held_out[init, SMALL.name][0], run.held_out[init, SMALL_CF.name][0])
    assert run.world_after_pretraining != run.world_before_pretraining  # pre-training changed the weights
    torch.testing.assert_close(
        run.rank("from scratch", SMALL_CF.name), run.held_out["from scratch", SMALL_CF.name][:, 1]
    )
    torch.testing.assert_close(
        run.rank("pre-trained", SMALL_CF.name, SMALL.name), run.held_out["pre-trained", SMALL_CF.name][:, 0]
    )
    again = prior.run_prior_knowledge(
        small_experiment(checkpoint_steps=(0, 2)), seed=5
    )  # the same seed, the same numbers
    assert all(torch.equal(again.held_out[k], v) for k, v in run.held_out.items())
    assert again.train_after == run.train_after
    with pytest.raises(ValueError, match="init must be one of"):
        run.rank("pretrained", SMALL.name)
    with pytest.raises(ValueError, match="trained must be one of"):
        run.rank("pre-trained", "city -> language")


def test_prior_knowledge_of_the_true_rule_carries_over_to_new_people():
    """Pre-trained on known people who follow the rule, then fine-tuned for 60 steps on new people's facts and one
    implication per value, the model ranks held-out people's implication better than the same model untrained."""
    experiment = prior.PriorExperiment(
        data=prior.PriorConfig(n_known=40, n_new=20, rules=(SMALL, SMALL_CF)),  # 16 held-out people, chance 1.5
        model=lm.TinyLMConfig(n_layer=1, d_model=32, n_head=2),
        pretrain=TrainConfig(steps=300, lr=1e-2, batch_size=16, progress=False),
        fine_tune=TrainConfig(steps=60, lr=1e-2, batch_size=16, progress=False),
    )
    for seed in (0, 1):
        run = prior.run_prior_knowledge(experiment, seed)
        assert run.world_before_pretraining > 1.0 and run.world_after_pretraining < 0.1  # the world was learned
        pre, scratch = run.rank("pre-trained", SMALL.name)[-1], run.rank("from scratch", SMALL.name)[-1]
        assert pre < scratch - 0.5, (seed, pre, scratch)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(data=lm.TinyLMConfig()), "data must be a PriorConfig"),
        (dict(fine_tune=None), "fine_tune must be a TrainConfig"),
        (dict(form=2), r"form must be an integer in \[0, 1\], got 2"),
    ],
)
def test_prior_experiment_rejects(kwargs, match):
    with pytest.raises(ValueError, match=match):
        prior.PriorExperiment(**kwargs)
    with pytest.raises(ValueError, match="experiment must be a PriorExperiment"):
        prior.run_prior_knowledge(prior.PriorConfig())  # type: ignore[arg-type]


def test_rank_curves_figure_rejects_bad_input():
    with pytest.raises(ValueError, match="1 to 3 panels"):
        plot.ocr_rank_curves([0, 1], {}, 1.0)
    with pytest.raises(ValueError, match="expected \\(seeds, 2\\) ranks"):
        plot.ocr_rank_curves([0, 1], {"p": {"a": [1.0, 2.0]}}, 1.0)
    with pytest.raises(ValueError, match="has no lines"):
        plot.ocr_rank_curves([0, 1], {"p": {}}, 1.0)
    fig = plot.ocr_rank_curves([0, 1], {"p": {"a": [[1.0, 2.0]]}, "q": {"a": [[2.0, 1.0]]}}, 1.0)
    colours = [ax.get_lines()[0].get_color() for ax in fig.axes]
    assert colours[0] == colours[1]  # a label keeps its colour in every panel
    plt.close(fig)


def test_run_prior_knowledge_per_question_measures_and_retention():
    run = prior.run_prior_knowledge(small_experiment(checkpoint_steps=(0, 2)), seed=5)
    keys = {(i, r) for i in prior.INITS for r in run.rules}
    assert set(run.top1) == set(run.above_world) == set(run.world_after_fine_tuning) == keys
    for key in keys:
        top1, above = run.top1[key], run.above_world[key]
        assert top1.shape == above.shape == (3, 2)
        assert ((top1 >= 0) & (top1 <= 1)).all() and ((above >= 0) & (above <= 1)).all()
        torch.testing.assert_close(above[:, 0], torch.full((3,), 0.5))  # the world rule against itself
        # an answer ranked first on every question has mean rank 0, and the reverse
        assert torch.equal(top1 == 1, run.held_out[key] == 0)
    assert all(v >= 0 for v in run.world_after_fine_tuning.values())


def test_rule_measures_count_firsts_and_order_against_the_world_rule():
    ranker = prior._RuleRanker.__new__(prior._RuleRanker)
    rows = [torch.tensor([3.0, 1.0, 2.0]), torch.tensor([0.0, 5.0, 5.0])]
    ranker.scorer = lambda model: rows
    ranker.answers = [[0, 1], [2, 2]]  # world rule's answers, other rule's answers
    out = ranker.measures(None, world=0)
    torch.testing.assert_close(out[0], torch.tensor([(0 + 0.5) / 2, (1 + 0.5) / 2]))  # mean ranks, ties half
    torch.testing.assert_close(out[1], torch.tensor([(1 + 0.5) / 2, (0 + 0.5) / 2]))  # first, ties shared
    torch.testing.assert_close(out[2], torch.tensor([0.5, (0 + 0.5) / 2]))  # above the world's answer


def test_load_bench_reads_the_shipped_results_and_rejects_other_files(tmp_path):
    data = prior.load_bench()
    steps = data["curves"]["steps"]
    assert steps[0] == 0 and data["settings"]["seeds"] >= 10
    for arm in data["curves"]["arms"].values():
        assert all(len(arm[m]) == len(steps) and all(lo <= mean <= hi for mean, lo, hi in arm[m]) for m in ("top-1",))
    # every shipped file: its per-seed curves average to its curves' means, step by step
    for path in sorted(prior.BENCH_PATH.parent.glob("prior_knowledge*.json")):
        data = prior.load_bench(path)
        per_seed = data["per seed"]
        assert per_seed["steps"] == data["curves"]["steps"] and len(per_seed["seeds"]) == data["settings"]["seeds"]
        for name, arm in data["curves"]["arms"].items():
            for measure, rows in arm.items():
                means = torch.tensor(rows, dtype=torch.float64)[..., 0]  # (steps,), or () for retention
                seeds = torch.tensor(per_seed["arms"][name][measure], dtype=torch.float64)
                torch.testing.assert_close(seeds.mean(0), means, atol=1e-5, rtol=0)  # float32 means
    with pytest.raises(ValueError, match="no prior-knowledge bench results"):
        prior.load_bench(tmp_path / "missing.json")
    (tmp_path / "other.json").write_text('{"settings": {}}')
    with pytest.raises(ValueError, match="lacks"):
        prior.load_bench(tmp_path / "other.json")


def test_replay_mixes_pre_training_sentences_into_fine_tuning():
    experiment = small_experiment()
    data = prior.build_prior(experiment.data)
    task = data.new[0]
    plain = prior.fine_tuning_text(data, task)
    mixed = prior.fine_tuning_text(data, task, replay=True, seed=3)
    assert plain == task.train_sentences()
    assert mixed[: len(plain)] == plain and len(mixed) == 2 * len(plain)
    world = data.world_sentences()
    assert all(s in world for s in mixed[len(plain) :]) and len(set(mixed[len(plain) :])) == len(plain)
    assert mixed == prior.fine_tuning_text(data, task, replay=True, seed=3)  # seeded
    assert mixed != prior.fine_tuning_text(data, task, replay=True, seed=4)
    with pytest.raises(ValueError, match="replay"):
        dataclasses.replace(experiment, replay=1)


def test_t_quantile_matches_the_printed_tables_and_the_cauchy_case():
    # two-sided 95% and 99.9% points of Student's t, as printed in the usual tables
    table = {(0.975, 1): 12.706, (0.975, 4): 2.776, (0.975, 9): 2.262, (0.975, 29): 2.045, (0.9995, 9): 4.781}
    for (p, df), t in table.items():
        assert abs(prior.t_quantile(p, df) - t) < 6e-4, (p, df)
    assert abs(prior.t_quantile(0.9, 1) - math.tan(math.pi * 0.4)) < 1e-6  # Cauchy: tan(pi (p - 1/2))
    assert prior.t_quantile(0.5, 9) == 0.0
    assert abs(prior.t_quantile(0.975, 10_000) - 1.95996) < 1e-3  # towards the normal's
    for p, df in ((1.0, 9), (0.4, 9), (0.975, 0)):
        with pytest.raises(ValueError):
            prior.t_quantile(p, df)


def test_seed_interval_is_the_mean_and_its_student_t_interval():
    values = torch.tensor([1.0, 2.0, 4.0, 5.0])
    mean, low, high = prior.seed_interval(values)
    half = 3.182 * float(values.double().std()) / 2  # t at 97.5%, 3 degrees of freedom
    assert mean == 3.0 and abs(high - mean - half) < 1e-3 and abs(mean - low - half) < 1e-3
    wider = prior.seed_interval(values, level=1 - 0.05 / 10)  # Bonferroni for ten intervals
    assert wider[0] == mean and wider[1] < low and wider[2] > high
    for bad in (torch.tensor([1.0]), torch.ones(2, 2)):
        with pytest.raises(ValueError, match="one number per seed"):
            prior.seed_interval(bad)
    with pytest.raises(ValueError, match="level"):
        prior.seed_interval(values, level=1.0)
