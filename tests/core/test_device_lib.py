"""Every public function of ``lib`` that takes a tensor, a model, a generator or a device runs on the pretend
accelerator (tests/core/fake_device.py) without a device mix, as cuda and as mps, and gives the CPU's result
(issue 37). Inputs are drawn on CPU generators and moved; models are built on the CPU and moved, as lib does."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any
from unittest import mock

import pytest
import torch
from torch import nn
from torch.utils._pytree import tree_flatten

import lib
from lib.core import device as lib_device
from lib.core import heads, train, validate
from lib.core.train import TrainConfig
from lib.induction import (
    ablation,
    circuits,
    dynamics,
    fuzzy,
    handbuilt,
    mixed,
    models,
    pretrained,
    scores,
    sequences,
    sizes,
    smear,
)
from lib.induction.natural import corpus, edits, probes, recipes, runs, slim
from lib.ocr import lm, onelayer, prior, proximal, ranking, sentences, split, symbolic, theorem, theory, training
from tests.core.fake_device import DeviceMixError, PretendTensor, draw, on_device, pretend_accelerator, real

Call = Callable[[torch.device], object]

# --- shared small set-ups (built on the CPU; a call moves what it needs to `d`) ------------------------------------

TINY = sequences.InductionConfig(
    n_layers=2, n_heads=2, d_model=32, d_head=8, vocab=16, seq_len=20, min_repeat=3, max_repeat=6, prefix_segment=4
)
MIXED = mixed.MixedConfig(vocab=16, seq_len=25, support=4, min_segment=3, max_segment=5, copies=2)
FUZZY = fuzzy.FuzzyConfig(language=6, d_model=16, d_head=4, n_heads=2, seq_len=13, min_repeat=2, max_repeat=6)
NATURAL = runs.NaturalConfig(n_layers=2, n_heads=2, d_model=16, d_head=8, seq_len=64)
QUIET = TrainConfig(steps=3, lr=1e-2, batch_size=4, checkpoint_steps=(0, 3), progress=False)


def model(d: torch.device) -> Any:
    """A 2-layer attention-only model from its seed, built where lib builds it (``device=``)."""
    return models.make_model(TINY, seed=0, device=d)


def tokens(d: torch.device, batch: int = 3) -> torch.Tensor:
    return sequences.repeated_sequences(batch, sequences.seeded_generator(0), TINY, d)[0]


def fuzzy_model(d: torch.device) -> Any:
    return models.make_model(FUZZY.induction, seed=0, device=d)


def fuzzy_tokens(d: torch.device) -> torch.Tensor:
    return fuzzy.fuzzy_sequences(4, torch.Generator().manual_seed(1), FUZZY, translated=True, device=d)[0]


def fuzzy_translate(d: torch.device) -> torch.Tensor:
    return fuzzy.translation(FUZZY.language).to(d)


def natural_model(d: torch.device) -> Any:
    return runs.make_model(NATURAL, seed=0, device=d)


def natural_tokens(d: torch.device, seq_len: int = NATURAL.seq_len) -> torch.Tensor:
    return corpus.windows(draw(500, high=1024), draw(3, high=400, seed=1), seq_len).to(d)


def pattern(d: torch.device, seq: int = 12) -> torch.Tensor:
    return draw(2, 3, 2, seq, seq).tril().softmax(-1).to(d)


@cache
def task() -> symbolic.SymbolicTask:
    return symbolic.build_symbolic()


def one_layer(d: torch.device, n_seeds: int = 2) -> onelayer.OneLayer:
    config = onelayer.OneLayerConfig(vocab_size=task().vocab_size, n_seeds=n_seeds, init_scale=0.1)
    return onelayer.OneLayer(config).to(d)


@cache
def problem() -> theorem.OCRProblem:
    return theorem.ocr_problem(task())


@cache
def sentence_task() -> sentences.SentenceTask:
    return sentences.build_sentences(sentences.SentenceConfig(n_subjects=50, values_per_pair=2, seed=1))


@cache
def tokenizer() -> Any:
    return lm.task_tokenizer(sentence_task())


def tiny_lm(d: torch.device) -> nn.Module:
    return lm.tiny_gpt2(tokenizer(), lm.TinyLMConfig(n_layer=1, d_model=16, n_head=2), device=d)


@cache
def gpt2_batches(d: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Repeated tokens and their control, for :func:`tiny_lm`'s vocabulary, drawn on the CPU and moved."""
    repeated, fresh = pretrained.repeat_batches(2, 4, sequences.seeded_generator(0), 0, (4, 20))
    return repeated.to(d), fresh.to(d)


def prior_data() -> prior.PriorData:
    return prior.build_prior(prior.PriorConfig(n_known=60, n_new=60, seed=3))


def prior_lm(d: torch.device) -> nn.Module:
    return lm.tiny_gpt2(prior_data().tokenizer, lm.TinyLMConfig(n_layer=1, d_model=16, n_head=2), device=d)


def trained(d: torch.device) -> tuple[torch.Tensor, dict, dict]:
    """lib.core.train.train of a tiny model on lib's own batches: losses, checkpoints, evaluations."""
    net = model(d)
    history = train.train(
        net,
        sequences.make_batch_fn(TINY),
        models.training_loss,
        QUIET,
        evaluate=lambda m: scores.per_token_loss(m, tokens(lib_device.check_device(train.model_device(m)) or d)),
    )
    return history.loss, history.checkpoints, history.evals


def history(h: train.History) -> tuple[torch.Tensor, dict, dict]:
    """What a run's :class:`History` says, less its wall time."""
    return h.loss, h.checkpoints, h.evals


def qk_model(d: torch.device) -> Any:
    return handbuilt.hand_built_model(vocab=8, seq_len=12, device=d)


def tokens_for_qk(d: torch.device) -> torch.Tensor:
    config = handbuilt.hand_built_config(8, 12)
    return sequences.repeated_sequences(3, sequences.seeded_generator(0), config, d)[0]


def set_head(d: torch.device) -> dict[str, torch.Tensor]:
    net = model(d)
    weights = {"W_Q": draw(32, 8), "b_Q": draw(8, seed=1), "W_K": draw(32, 8, seed=2), "W_O": draw(8, 32, seed=3)}
    handbuilt.set_head(net, 1, 0, **on_device(weights, d))
    handbuilt.set_head(net, 0, 1, W_V=draw(32, 8, seed=4))  # weights left on the CPU are copied in: allowed
    return train.snapshot(net)


def mixed_model(d: torch.device) -> Any:
    return models.make_model(MIXED.model_config(n_heads=2), seed=0, device=d)


def mixed_loss(d: torch.device) -> torch.Tensor:
    return scores.per_token_loss(mixed_model(d), mixed.eval_batch(MIXED, d, 8).tokens)


def slim_model(d: torch.device) -> slim.SlimModel:
    return slim.SlimModel(slim.SlimConfig(n_heads=2, d_model=16, d_head=8, n_ctx=64, positions="shortformer")).to(d)


def period_mask(d: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    toks, period = sequences.repeated_sequences(4, sequences.seeded_generator(0), TINY, d)
    return toks, sequences.repeat_mask(period, TINY)


def smeared(d: torch.device) -> Any:
    return smear.make_model(TINY.with_layers(1), seed=0, alpha=0.3, device=d)


def smear_disabled(d: torch.device) -> torch.Tensor:
    net = smeared(d)
    with smear.smear_disabled(net) as plain:
        return scores.per_token_loss(plain, tokens(d))


def sentence_batch(d: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    return lm.encode_sentences(tokenizer(), sentence_task().train_sentences()[:5], d)


def symbolic_batch(d: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    return lib_device.to_device(task().train_batch(6, torch.Generator().manual_seed(0)), d)


def prior_run(d: torch.device) -> dict[str, Any]:
    steps = TrainConfig(steps=2, lr=1e-2, batch_size=4, progress=False)
    experiment = prior.PriorExperiment(
        data=prior_data().config,
        model=lm.TinyLMConfig(n_layer=1, d_model=16, n_head=2),
        pretrain=steps,
        fine_tune=dataclasses.replace(steps, checkpoint_steps=(0,)),
    )
    run = prior.run_prior_knowledge(experiment, device=d)
    return {k: v for k, v in dataclasses.asdict(run).items() if k != "seconds"}


def nuclear_step(d: torch.device) -> torch.Tensor:
    config = onelayer.OneLayerConfig(vocab_size=task().vocab_size, parameterization="merged", init_scale=0.1)
    net = onelayer.OneLayer(config).to(d)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    with proximal.nuclear_proximal(net, 0.5):
        onelayer.per_seed_loss(net, symbolic_batch(d)).sum().backward()
        optimizer.step()
    return net.W_OV.detach()


def split_groups() -> tuple[list[int], list[int]]:
    return split.assign_groups(12, 2, 3, torch.Generator().manual_seed(0))


def ocr_block(d: torch.device) -> torch.Tensor:
    return draw(len(problem().row_ids), len(problem().col_ids)).to(d)


def margin_problem(d: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """``inputs (8, 6)`` bags and ``targets (8,)`` rows of 4 for the max-margin maths."""
    return (draw(8, 6, high=2).float().to(d), draw(8, high=4, seed=1).to(d))


def ocr_run(d: torch.device) -> tuple[torch.Tensor, ...]:
    config = onelayer.OneLayerConfig(vocab_size=task().vocab_size, n_seeds=2)
    run = training.train_on_task(task(), config, dataclasses.replace(QUIET, batch_size=6), eval_every=2, device=d)
    return run.steps, run.train_loss, run.test_loss, run.history.loss


# name (module:qualname) -> how to call it on device `d`
CALLS: dict[str, Call] = {
    # lib.core
    "lib.core.device:check_device": lambda d: lib_device.check_device(str(d)) == d,
    "lib.core.device:to_device": lambda d: lib_device.to_device({"a": (draw(2), [draw(3, seed=1)]), "b": 1}, d),
    "lib.core.device:synchronize": lambda d: lib_device.synchronize(d),
    "lib.core.device:clock": lambda d: isinstance(lib_device.clock(d), float),
    "lib.core.device:assert_same": lambda d: lib_device.assert_same(draw(3).to(d), draw(3).to(d), "same"),
    "lib.core.heads:all_heads": lambda d: heads.all_heads(model(d)),
    "lib.core.heads:check_head": lambda d: heads.check_head(model(d), (1, 0)),
    "lib.core.heads:check_heads": lambda d: heads.check_heads(model(d), [(0, 1), (1, 0)]),
    "lib.core.train:model_device": lambda d: str(train.model_device(model(d))) == str(d),
    "lib.core.train:snapshot": lambda d: train.snapshot(model(d)),
    "lib.core.train:make_optimizer": lambda d: train.make_optimizer(model(d).parameters(), QUIET).state_dict(),
    "lib.core.train:train": trained,
    "lib.core.validate:token_range": lambda d: validate.token_range(tokens(d), TINY.vocab),
    # lib.induction.ablation
    "lib.induction.ablation:hooks_on": lambda d: ablation.hooks_on(model(d)),
    "lib.induction.ablation:recorded_patterns": lambda d: ablation.recorded_patterns(model(d), tokens(d)),
    "lib.induction.ablation:mean_outputs": lambda d: ablation.mean_outputs(model(d), tokens(d)),
    "lib.induction.ablation:resampled_outputs": lambda d: ablation.resampled_outputs(model(d), tokens(d)),
    "lib.induction.ablation:replacement_outputs": lambda d: [
        ablation.replacement_outputs(model(d), tokens(d), r) for r in ("zero", "mean", "resample")
    ],
    "lib.induction.ablation:ablated_logits": lambda d: [
        ablation.ablated_logits(model(d), tokens(d), [[], [(1, 0)], [(0, 1)]], kind, r)
        for kind in ("full", "pattern-preserving")
        for r in ("zero", "mean", "resample")
    ],
    "lib.induction.ablation:ablated_losses": lambda d: ablation.ablated_losses(
        model(d), tokens(d), [[(1, 0)], [(0, 0), (1, 1)]], max_rows=2, replacement="mean"
    ),
    "lib.induction.ablation:ablated_loss": lambda d: ablation.ablated_loss(model(d), tokens(d), [(1, 0)]),
    "lib.induction.ablation:each_head": lambda d: ablation.each_head(model(d)),
    "lib.induction.ablation:fraction_removed": lambda d: ablation.fraction_removed(
        draw(4).exp().to(d), draw(4, seed=1).exp().to(d)
    ),
    "lib.induction.ablation:head_path_logits": lambda d: ablation.head_path_logits(model(d), tokens(d), (1, 0)),
    "lib.induction.ablation:key_path_cut_losses": lambda d: [
        ablation.key_path_cut_losses(model(d), tokens(d), [(0, 0)], [(1, 0), (1, 1)], r)
        for r in ("zero", "mean", "resample")
    ],
    # lib.induction.circuits
    "lib.induction.circuits:ov_matrices": lambda d: circuits.ov_matrices(model(d)),
    "lib.induction.circuits:qk_matrices": lambda d: circuits.qk_matrices(model(d)),
    "lib.induction.circuits:composition_scores": lambda d: circuits.composition_scores(model(d)),
    "lib.induction.circuits:composition_baseline": lambda d: circuits.composition_baseline(model(d), samples=5),
    "lib.induction.circuits:composition_against_baseline": lambda d: circuits.composition_against_baseline(
        model(d), 0, [0, 1], samples=5
    ),
    "lib.induction.circuits:at_initialisation": lambda d: circuits.at_initialisation(
        circuits.composition_scores, TINY, [0, 1], device=d
    ),
    "lib.induction.circuits:full_ov_circuit": lambda d: circuits.full_ov_circuit(model(d), (1, 0)),
    "lib.induction.circuits:virtual_qk_circuit": lambda d: circuits.virtual_qk_circuit(model(d), (0, 0), (1, 1)),
    "lib.induction.circuits:positional_qk": lambda d: circuits.positional_qk(model(d)),
    "lib.induction.circuits:positional_previous_share": lambda d: circuits.positional_previous_share(model(d)),
    "lib.induction.circuits:eigenvalue_score": lambda d: circuits.eigenvalue_score(
        draw(6, 3).to(d), draw(3, 6, seed=1).to(d)
    ),
    "lib.induction.circuits:ov_eigenvalue_copying": lambda d: circuits.ov_eigenvalue_copying(model(d)),
    "lib.induction.circuits:virtual_qk_eigenvalue_score": lambda d: circuits.virtual_qk_eigenvalue_score(
        model(d), (0, 0), (1, 1)
    ),
    "lib.induction.circuits:olsson_copying_score": lambda d: circuits.olsson_copying_score(model(d), tokens(d)),
    "lib.induction.circuits:run_with_qk_from_embeddings": lambda d: circuits.run_with_qk_from_embeddings(
        model(d), tokens(d), ("keys",)
    ),
    # lib.induction.dynamics
    "lib.induction.dynamics:one_token_per_sequence": lambda d: dynamics.one_token_per_sequence(draw(5, 4, 9).to(d), 0),
    "lib.induction.dynamics:pca": lambda d: dynamics.pca(draw(8, 5).to(d)),
    "lib.induction.dynamics:phase_change_step": lambda d: dynamics.phase_change_step(
        range(5), torch.tensor([4.0, 3.0, 2.0, 0.5, 0.2]).to(d)
    ),
    "lib.induction.dynamics:phase_change_window": lambda d: dynamics.phase_change_window(
        range(5), torch.tensor([4.0, 3.0, 2.0, 0.5, 0.2]).to(d)
    ),
    "lib.induction.dynamics:half_change_step": lambda d: dynamics.half_change_step(
        range(4), torch.tensor([1.0, 0.8, 0.3, 0.0]).to(d)
    ),
    "lib.induction.dynamics:mean_before": lambda d: dynamics.mean_before(range(0, 40, 10), draw(40).to(d), 5),
    "lib.induction.dynamics:turning_angle": lambda d: dynamics.turning_angle(draw(6, 2).to(d)),
    "lib.induction.dynamics:steepest_rise": lambda d: dynamics.steepest_rise(
        range(5), torch.tensor([0.0, 0.1, 0.6, 0.9, 1.0]).to(d), 2
    ),
    "lib.induction.dynamics:rise_step": lambda d: dynamics.rise_step(
        range(5), torch.tensor([0.0, 0.1, 0.6, 0.9, 1.0]).to(d), 0.5
    ),
    "lib.induction.dynamics:stays_above_step": lambda d: dynamics.stays_above_step(
        range(5), torch.tensor([0.0, 3.5, 1.0, 3.2, 4.0]).to(d), 3.0
    ),
    "lib.induction.dynamics:rise_window": lambda d: dynamics.rise_window(
        range(5), torch.tensor([0.0, 0.1, 0.6, 0.9, 1.0]).to(d)
    ),
    # lib.induction.handbuilt
    "lib.induction.handbuilt:set_head": lambda d: set_head(d),
    "lib.induction.handbuilt:blank_model": lambda d: handbuilt.blank_model(
        handbuilt.hand_built_config(8, 12), handbuilt.HandBuiltLayout(8, 12), 5.0, device=d
    ),
    "lib.induction.handbuilt:hand_built_model": lambda d: scores.per_token_loss(qk_model(d), tokens_for_qk(d)),
    # lib.induction.mixed
    "lib.induction.mixed:mixed_sequences": lambda d: mixed.mixed_sequences(
        4, torch.Generator().manual_seed(0), MIXED, d
    ),
    "lib.induction.mixed:eval_batch": lambda d: mixed.eval_batch(MIXED, d, n=8),
    "lib.induction.mixed:late_masks": lambda d: mixed.late_masks(mixed.eval_batch(MIXED, d, n=8), MIXED),
    "lib.induction.mixed:loss_terms": lambda d: mixed.loss_terms(mixed_loss(d), mixed.eval_batch(MIXED, d, 8), MIXED),
    "lib.induction.mixed:icl_by_kind": lambda d: mixed.icl_by_kind(mixed_loss(d), mixed.eval_batch(MIXED, d, 8), MIXED),
    "lib.induction.mixed:train_model": lambda d: history(
        mixed.train_model(MIXED, n_heads=2, train_config=QUIET, device=d)[1]
    ),
    "lib.induction.mixed:icl_of": lambda d: mixed.icl_of(mixed_model(d), mixed.eval_batch(MIXED, d, 8), MIXED),
    "lib.induction.mixed:shares_removed": lambda d: mixed.shares_removed(
        {"repeated": draw(3).exp().to(d), "non-repeated": draw(3, seed=2).exp().to(d)},
        {"repeated": draw(3, seed=1).exp().to(d), "non-repeated": draw(3, seed=3).exp().to(d)},
    ),
    "lib.induction.mixed:same_layer_controls": lambda d: mixed.same_layer_controls(mixed_model(d), [(1, 0)]),
    "lib.induction.mixed:ablation_contrast": lambda d: mixed.ablation_contrast(
        mixed_model(d), mixed.eval_batch(MIXED, d, 8), [(1, 0)], "mean", config=MIXED
    ),
    "lib.induction.mixed:Run.model_at": lambda d: scores.per_token_loss(
        mixed.load_run().model_at(0, d), mixed.eval_batch(device=d, n=2).tokens
    ),
    # lib.induction.fuzzy
    "lib.induction.fuzzy:fuzzy_sequences": lambda d: fuzzy.fuzzy_sequences(
        4, torch.Generator().manual_seed(0), FUZZY, device=d
    ),
    "lib.induction.fuzzy:eval_sets": lambda d: fuzzy.eval_sets(FUZZY, d, n=8),
    "lib.induction.fuzzy:repeat_masks": lambda d: fuzzy.repeat_masks(fuzzy_tokens(d), fuzzy_translate(d)),
    "lib.induction.fuzzy:cross_prefix_matching_mask": lambda d: fuzzy.cross_prefix_matching_mask(
        fuzzy_tokens(d), fuzzy_translate(d)
    ),
    "lib.induction.fuzzy:cross_prefix_matching_score": lambda d: fuzzy.cross_prefix_matching_score(
        scores.attention_patterns(fuzzy_model(d), fuzzy_tokens(d)), fuzzy_tokens(d), fuzzy_translate(d)
    ),
    "lib.induction.fuzzy:ov_top_shares": lambda d: fuzzy.ov_top_shares(fuzzy_model(d), (1, 0), fuzzy_translate(d)),
    "lib.induction.fuzzy:ov_shares": lambda d: fuzzy.ov_shares(fuzzy_model(d), fuzzy_translate(d)),
    "lib.induction.fuzzy:head_measures": lambda d: fuzzy.head_measures(
        fuzzy_model(d), fuzzy.eval_sets(FUZZY, d, n=8), fuzzy_translate(d)
    ),
    "lib.induction.fuzzy:ablation_effects": lambda d: fuzzy.ablation_effects(
        fuzzy_model(d), fuzzy.eval_sets(FUZZY, d, n=8)
    ),
    "lib.induction.fuzzy:train_model": lambda d: history(fuzzy.train_model(FUZZY, 0, train_config=QUIET, device=d)[1]),
    "lib.induction.fuzzy:Run.model_at": lambda d: scores.per_token_loss(
        fuzzy.load_runs()["fuzzy"].model_at(0, d), fuzzy.eval_sets(device=d, n=2).tokens
    ),
    # lib.induction.models
    "lib.induction.models:make_model": model,
    "lib.induction.models:config_of": lambda d: models.config_of(model(d)),
    "lib.induction.models:training_loss": lambda d: models.training_loss(model(d), tokens(d)),
    "lib.induction.models:fit": lambda d: history(models.fit(model(d), TINY, 0, train_config=QUIET)),
    "lib.induction.models:train_model": lambda d: history(models.train_model(TINY, train_config=QUIET, device=d)[1]),
    # lib.induction.natural
    "lib.induction.natural.corpus:decode": lambda d: corpus.decode(draw(6, high=1024).to(d)),
    "lib.induction.natural.corpus:show": lambda d: corpus.show(draw(6, high=1024).to(d)),
    "lib.induction.natural.corpus:windows": lambda d: corpus.windows(draw(50, high=9).to(d), draw(3, high=40), 8),
    "lib.induction.natural.corpus:tiled_windows": lambda d: corpus.tiled_windows(draw(50, high=9).to(d), 8),
    "lib.induction.natural.corpus:batch_fn": lambda d: corpus.batch_fn(draw(500, high=9).to(d), 72, 0, 0.5)(
        3, torch.Generator()
    ),
    "lib.induction.natural.corpus:plant_repeats": lambda d: corpus.plant_repeats(
        draw(4 * 72, high=9).reshape(4, 72).to(d), 0.5, torch.Generator().manual_seed(0)
    ),
    "lib.induction.natural.edits:without_prefix_matching_loss": lambda d: edits.without_prefix_matching_loss(
        natural_model(d), natural_tokens(d), (1, 0), chunk=2
    ),
    "lib.induction.natural.probes:window_loss": lambda d: probes.window_loss(natural_model(d), natural_tokens(d), 2),
    "lib.induction.natural.probes:ablated_window_loss": lambda d: probes.ablated_window_loss(
        natural_model(d), natural_tokens(d), [[], [(1, 0)]], 2
    ),
    "lib.induction.natural.probes:loss_and_patterns": lambda d: probes.loss_and_patterns(
        natural_model(d), natural_tokens(d)
    ),
    "lib.induction.natural.probes:loss_bins": lambda d: probes.loss_bins(draw(255).exp().to(d)),
    "lib.induction.natural.probes:icl_per_window": lambda d: probes.icl_per_window(draw(3, 255).to(d)),
    "lib.induction.natural.probes:eligible_positions": lambda d: probes.eligible_positions(natural_tokens(d, 256)),
    "lib.induction.natural.probes:icl_where": lambda d: probes.icl_where(
        draw(3, 255).to(d), probes.eligible_positions(natural_tokens(d, 256))
    ),
    "lib.induction.natural.probes:bootstrap_interval": lambda d: probes.bootstrap_interval(
        lambda x: x.mean(-1), draw(30).to(d), samples=50
    ),
    "lib.induction.natural.probes:probe_tokens": lambda d: probes.probe_tokens(NATURAL.seq_len, d),
    "lib.induction.natural.probes:olsson_repeat_probe": lambda d: probes.olsson_repeat_probe(4, 15, device=d),
    "lib.induction.natural.probes:copy_losses": lambda d: probes.copy_losses(draw(4, 30).to(d)),
    "lib.induction.natural.probes:repeat_prefix_matching": lambda d: probes.repeat_prefix_matching(pattern(d, 31)),
    "lib.induction.natural.probes:measure": lambda d: probes.measure(
        natural_model(d), probes.probe_tokens(NATURAL.seq_len, d)
    ),
    "lib.induction.natural.probes:induction_guess": lambda d: probes.induction_guess(draw(2, 20, high=5).to(d)),
    "lib.induction.natural.probes:top_key_share": lambda d: probes.top_key_share(
        pattern(d)[0], draw(3, 12, 12, high=4).to(d) == 1, draw(3, 12, high=4, seed=1).to(d) == 1
    ),
    "lib.induction.natural.probes:share_removed": lambda d: probes.share_removed(draw(2, 3, 30).to(d)),
    "lib.induction.natural.probes:nats_removed": lambda d: probes.nats_removed(draw(2, 3, 30).to(d)),
    "lib.induction.natural.probes:paired_change": lambda d: probes.paired_change(probes.share_removed)(
        draw(4, 30).to(d)
    ),
    "lib.induction.natural.probes:estimate": lambda d: probes.estimate(probes.share_removed, draw(2, 30).to(d)),
    "lib.induction.natural.probes:share_interval": lambda d: probes.share_interval(
        draw(30).exp().to(d), draw(30, seed=1).exp().to(d), samples=50
    ),
    "lib.induction.natural.recipes:probe_pool": lambda d: recipes.probe_pool(draw(3000, high=1024).to(d), 1024),
    "lib.induction.natural.recipes:make_probes": lambda d: recipes.make_probes(
        draw(3000, high=1024), draw(40, high=1024, seed=1), NATURAL.seq_len, d
    ),
    "lib.induction.natural.recipes:measure": lambda d: recipes.measure(
        natural_model(d),
        recipes.make_probes(draw(3000, high=1024), draw(40, high=1024, seed=1), NATURAL.seq_len - 1, d),
    ),
    "lib.induction.natural.runs:make_model": natural_model,
    "lib.induction.natural.runs:Run.model_at": lambda d: scores.per_token_loss(
        runs.load_run("one layer").model_at(max(runs.load_run("one layer").checkpoints), d),
        natural_tokens(d, 64),
    ),
    "lib.induction.natural.slim:SlimAttention.forward": lambda d: (
        slim_model(d).blocks[0].attn(draw(2, 10, 16).to(d), draw(2, 10, 16, seed=1).to(d))
    ),
    "lib.induction.natural.slim:SlimBlock.forward": lambda d: slim_model(d).blocks[0](
        draw(2, 10, 16).to(d), draw(10, 16, seed=1).to(d)
    ),
    "lib.induction.natural.slim:SlimModel.forward": lambda d: slim_model(d)(natural_tokens(d)),
    "lib.induction.natural.slim:from_bridge": lambda d: slim.from_bridge(natural_model(d)).to(d)(natural_tokens(d)),
    # lib.induction.scores
    "lib.induction.scores:per_token_loss": lambda d: scores.per_token_loss(model(d), tokens(d)),
    "lib.induction.scores:next_token_loss": lambda d: scores.next_token_loss(draw(3, 20, 16).to(d), tokens(d)),
    "lib.induction.scores:prediction_shares": lambda d: scores.prediction_shares(
        draw(2, 6, 9).to(d), draw(2, 6, high=9).to(d), (draw(2, 5, high=2) == 1).to(d)
    ),
    "lib.induction.scores:masked_mean": lambda d: scores.masked_mean(draw(3, 5).to(d), (draw(3, 5, high=2) == 1).to(d)),
    "lib.induction.scores:icl_per_sequence": lambda d: scores.icl_per_sequence(draw(3, 10).to(d), 1, range(7, 10)),
    "lib.induction.scores:icl_score": lambda d: scores.icl_score(draw(3, 10).to(d), range(0, 2), 8),
    "lib.induction.scores:attention_patterns": lambda d: scores.attention_patterns(model(d), tokens(d)),
    "lib.induction.scores:prefix_matching_mask": lambda d: scores.prefix_matching_mask(tokens(d)),
    "lib.induction.scores:prefix_matching_score": lambda d: scores.prefix_matching_score(pattern(d, 20)[0], tokens(d)),
    "lib.induction.scores:previous_token_score": lambda d: scores.previous_token_score(pattern(d)),
    "lib.induction.scores:ov_logits": lambda d: scores.ov_logits(model(d), draw(5, high=16).to(d)),
    "lib.induction.scores:copying_score": lambda d: scores.copying_score(model(d), draw(5, high=16).to(d)),
    "lib.induction.scores:copying_of_logits": lambda d: scores.copying_of_logits(
        draw(2, 5, 16).to(d), tokens(d)[0, :5]
    ),
    "lib.induction.scores:head_scores": lambda d: scores.head_scores(
        model(d), tokens(d), tokens(d), draw(5, high=16).to(d)
    ),
    "lib.induction.scores:is_induction_head": lambda d: scores.is_induction_head(
        draw(2, 3).sigmoid().to(d), draw(2, 3, seed=1).sigmoid().to(d), 0.5, 0.5
    ),
    "lib.induction.scores:induction_heads": lambda d: scores.induction_heads(
        {"prefix matching": draw(2, 3).sigmoid().to(d), "copying": draw(2, 3, seed=1).sigmoid().to(d)}, 0.5, 0.5
    ),
    "lib.induction.scores:over_checkpoints": lambda d: scores.over_checkpoints(
        model(d), {0: train.snapshot(model(d))}, lambda m: scores.per_token_loss(m, tokens(d))
    ),
    # lib.induction.sequences
    # lib.induction.pretrained (a tiny random GPT-2 stands in for GPT-2 small)
    "lib.induction.pretrained:repeat_batches": lambda d: pretrained.repeat_batches(
        2, 3, sequences.seeded_generator(0), 0, (4, 20)
    ),
    "lib.induction.pretrained:attention_patterns": lambda d: pretrained.attention_patterns(
        tiny_lm(d), gpt2_batches(d)[0]
    ),
    "lib.induction.pretrained:head_scores": lambda d: pretrained.head_scores(tiny_lm(d), *gpt2_batches(d)),
    "lib.induction.pretrained:gpt2_copying_score": lambda d: pretrained.gpt2_copying_score(
        tiny_lm(d), torch.arange(4, 12, device=d)
    ),
    "lib.induction.sequences:distinct_tokens": lambda d: sequences.distinct_tokens(
        3, 5, 2, 20, sequences.seeded_generator(3)
    ),
    "lib.induction.sequences:repeated_sequences": lambda d: sequences.repeated_sequences(
        5, sequences.seeded_generator(3), TINY, d
    ),
    "lib.induction.sequences:repeat_mask": lambda d: sequences.repeat_mask(draw(4, high=6).to(d) + 3, TINY),
    "lib.induction.sequences:prefix_matching_tokens": lambda d: sequences.prefix_matching_tokens(
        5, sequences.seeded_generator(3), TINY, d
    ),
    "lib.induction.sequences:repeat_period": lambda d: sequences.repeat_period(tokens(d)),
    "lib.induction.sequences:fixed_offset_share": lambda d: sequences.fixed_offset_share(*period_mask(d)),
    "lib.induction.sequences:best_offset_mix": lambda d: sequences.best_offset_mix(*period_mask(d), steps=5),
    "lib.induction.sequences:eval_sets": lambda d: sequences.eval_sets(TINY, d, n=8),
    # lib.induction.sizes
    "lib.induction.sizes:checkpoint_scores": lambda d: sizes.checkpoint_scores(
        model(d), sequences.eval_sets(TINY, d, n=8), TINY.seq_len
    ),
    "lib.induction.sizes:onset_tokens": lambda d: sizes.onset_tokens([0, 10, 20], draw(3).to(d) * 4, 8, 49),
    "lib.induction.sizes:train_member": lambda d: {
        k: v
        for k, v in sizes.train_member(sizes.Member(d_model=16, batch_size=2, steps=2), 0, every=1, device=d).items()
        if k != "seconds"
    },
    # lib.induction.smear
    "lib.induction.smear:smear_keys": lambda d: smear.smear_keys(draw(2, 6, 3, 4).to(d), draw(3).sigmoid().to(d)),
    "lib.induction.smear:SmearedKeys.__init__": lambda d: smear.SmearedKeys(draw(2, 3).to(d)).alpha,
    "lib.induction.smear:smear_of": lambda d: smear.smear_of(smeared(d)),
    "lib.induction.smear:attach_smear": lambda d: smear.attach_smear(model(d), draw(2, 2).to(d)).alpha,
    "lib.induction.smear:smear_sigma": lambda d: smear.smear_sigma(smeared(d)),
    "lib.induction.smear:sigma_of_state": lambda d: smear.sigma_of_state(train.snapshot(smeared(d))),
    "lib.induction.smear:sigma_trajectory": lambda d: smear.sigma_trajectory(
        {s: train.snapshot(smeared(d)) for s in (0, 10)}, [0, 10]
    ),
    "lib.induction.smear:smear_disabled": lambda d: smear_disabled(d),
    "lib.induction.smear:make_model": lambda d: scores.per_token_loss(smeared(d), tokens(d)),
    "lib.induction.smear:train_model": lambda d: history(
        smear.train_model(TINY.with_layers(1), train_config=QUIET, alpha=0.3, device=d)[1]
    ),
    "lib.induction.smear:run_with_smear": lambda d: smear.run_with_smear(model(d), tokens(d), draw(2, 2).to(d)),
    "lib.induction.smear:hand_built_model": lambda d: scores.per_token_loss(
        smear.hand_built_model(vocab=8, seq_len=12, device=d), tokens_for_qk(d)
    ),
    # lib.ocr.lm
    "lib.ocr.lm:tiny_gpt2": tiny_lm,
    "lib.ocr.lm:encode_sentences": lambda d: lm.encode_sentences(tokenizer(), sentence_task().train_sentences()[:5], d),
    "lib.ocr.lm:sentence_batches": lambda d: lm.sentence_batches(*sentence_batch(d))(3, torch.Generator()),
    "lib.ocr.lm:lm_loss": lambda d: lm.lm_loss(tiny_lm(d), sentence_batch(d)),
    "lib.ocr.lm:fine_tune": lambda d: history(
        lm.fine_tune(tiny_lm(d), tokenizer(), sentence_task().train_sentences(), QUIET)
    ),
    # lib.ocr.onelayer
    "lib.ocr.onelayer:OneLayer.scores": lambda d: one_layer(d).scores(symbolic_batch(d)[0]),
    "lib.ocr.onelayer:OneLayer.bag": lambda d: one_layer(d).bag(symbolic_batch(d)[0]),
    "lib.ocr.onelayer:OneLayer.forward": lambda d: one_layer(d)(symbolic_batch(d)[0]),
    "lib.ocr.onelayer:per_seed_loss": lambda d: onelayer.per_seed_loss(one_layer(d), symbolic_batch(d)),
    "lib.ocr.onelayer:member": lambda d: onelayer.member(one_layer(d), 1)(symbolic_batch(d)[0]),
    "lib.ocr.onelayer:merge": lambda d: onelayer.merge(one_layer(d))(symbolic_batch(d)[0]),
    "lib.ocr.onelayer:factorize": lambda d: onelayer.factorize(onelayer.merge(one_layer(d, 1)), 3).state_dict(),
    "lib.ocr.onelayer:forward_reference": lambda d: onelayer.forward_reference(
        draw(10, 4).to(d), draw(10, 4, seed=1).to(d), draw(10, 10, seed=2).to(d), draw(6, high=10).to(d)
    ),
    "lib.ocr.onelayer:merged_forward_reference": lambda d: onelayer.merged_forward_reference(
        draw(10, 10).to(d), draw(10, 10, seed=1).to(d), draw(3, 6, high=10).to(d)
    ),
    "lib.ocr.onelayer:column_push": lambda d: onelayer.column_push(
        on_device({"W_O": draw(10, 4), "W_V": draw(10, 4, seed=1), "W_KQ": draw(10, 10, seed=2)}, d),
        draw(3, 6, high=10).to(d),
        draw(3, high=10).to(d),
        2,
        torch.arange(3).to(d),
    ),
    # lib.ocr.prior
    "lib.ocr.prior:rule_ranks": lambda d: prior.rule_ranks(prior_lm(d), prior_data()),
    "lib.ocr.prior:world_rank": lambda d: prior.world_rank(prior_lm(d), prior_data()),
    "lib.ocr.prior:run_prior_knowledge": lambda d: prior_run(d),
    "lib.ocr.prior:seed_interval": lambda d: prior.seed_interval(draw(10).to(d)),
    # lib.ocr.proximal
    "lib.ocr.proximal:nuclear_proximal": lambda d: nuclear_step(d),
    # lib.ocr.ranking
    "lib.ocr.ranking:score_questions": lambda d: ranking.score_questions(
        tiny_lm(d), tokenizer(), sentence_task().questions()[:6], batch_size=4
    ),
    "lib.ocr.ranking:score_candidates": lambda d: ranking.score_candidates(
        tiny_lm(d), tokenizer(), sentence_task().questions()[0].prompt, sentence_task().questions()[0].candidates
    ),
    "lib.ocr.ranking:mean_rank_by_pair": lambda d: ranking.mean_rank_by_pair(
        sentence_task().questions()[:6],
        ranking.score_questions(tiny_lm(d), tokenizer(), sentence_task().questions()[:6]),
    ),
    "lib.ocr.ranking:mean_rank_per_pair": lambda d: ranking.mean_rank_per_pair(
        tiny_lm(d), tokenizer(), sentence_task()
    ),
    "lib.ocr.ranking:fine_tune_and_rank": lambda d: dataclasses.replace(
        ranking.fine_tune_and_rank(tiny_lm(d), tokenizer(), sentence_task(), QUIET), history=None
    ),
    "lib.ocr.ranking:name_swap_share": lambda d: ranking.name_swap_share(
        tiny_lm(d), tokenizer(), sentence_task(), (0,)
    ),
    # lib.ocr.sentences
    "lib.ocr.sentences:mean_rank": lambda d: sentences.mean_rank(draw(5, 7).to(d), draw(5, high=7).to(d)),
    # lib.ocr.split
    "lib.ocr.split:assign_groups": lambda d: split_groups(),
    # lib.ocr.symbolic
    "lib.ocr.symbolic:SymbolicTask.decode": lambda d: task().decode(symbolic_batch(d)[0][0]),
    "lib.ocr.symbolic:SymbolicTask.sample": lambda d: task().sample("test_implications", 5, torch.Generator()),
    "lib.ocr.symbolic:SymbolicTask.train_batch": lambda d: task().train_batch(5, torch.Generator()),
    "lib.ocr.symbolic:SymbolicTask.fixed": lambda d: task().fixed("train_facts", device=d),
    "lib.ocr.symbolic:symbolic_sequences": lambda d: symbolic.symbolic_sequences(
        task(),
        "train_facts",
        task().subjects_of("train_facts")[:3].to(d),
        draw(3, 16, high=5).to(d),
        draw(3, high=14).to(d),
    ),
    # lib.ocr.theorem
    "lib.ocr.theorem:OCRProblem.implication_block": lambda d: problem().implication_block(ocr_block(d)),
    "lib.ocr.theorem:effective_block": lambda d: theorem.effective_block(one_layer(d), problem(), task().eos_id),
    "lib.ocr.theorem:agreement": lambda d: theorem.agreement(draw(5, 7).to(d), draw(5, 7, seed=1).to(d)),
    "lib.ocr.theorem:numerical_rank": lambda d: theorem.numerical_rank(draw(6, 4).to(d)),
    "lib.ocr.theorem:symmetric_start": lambda d: theorem.symmetric_start(
        onelayer.OneLayer(
            onelayer.OneLayerConfig(vocab_size=task().vocab_size, parameterization="merged", n_seeds=2)
        ).to(d)
    ),
    "lib.ocr.theorem:factorized_descent": lambda d: theorem.factorized_descent(*margin_problem(d), 4, [2], steps=5),
    "lib.ocr.theorem:margin_ratio": lambda d: theorem.margin_ratio(one_layer(d), problem(), task().eos_id),
    # lib.ocr.theory
    "lib.ocr.theory:multiclass_margins": lambda d: theory.multiclass_margins(draw(5, 7).to(d), draw(5, high=7).to(d)),
    "lib.ocr.theory:other_rows": lambda d: theory.other_rows(draw(5, high=4).to(d), 4),
    "lib.ocr.theory:pairwise_margins": lambda d: theory.pairwise_margins(draw(4, 6).to(d), *margin_problem(d)),
    "lib.ocr.theory:pairwise_margins_adjoint": lambda d: theory.pairwise_margins_adjoint(
        draw(8, 3).to(d), *margin_problem(d), 4
    ),
    "lib.ocr.theory:svt": lambda d: theory.svt(draw(5, 7).to(d), 0.5),
    "lib.ocr.theory:svt_by_eigh": lambda d: theory.svt_by_eigh(draw(5, 7).to(d), 0.5),
    "lib.ocr.theory:balanced_factors": lambda d: theory.balanced_factors(draw(5, 7).to(d)),
    "lib.ocr.theory:proximal_step": lambda d: theory.proximal_step(draw(4, 6).to(d), *margin_problem(d), 0.1, 0.01),
    "lib.ocr.theory:shrink": lambda d: theory.shrink(draw(5, 7).to(d), 0.5),
    "lib.ocr.theory:matrix_norm": lambda d: [theory.matrix_norm(draw(5, 7).to(d), n) for n in ("nuclear", "frobenius")],
    "lib.ocr.theory:solve_max_margin": lambda d: theory.solve_max_margin(*margin_problem(d), 4, outer=3, inner=10).W,
    # lib.ocr.training
    "lib.ocr.training:candidate_accuracy": lambda d: training.candidate_accuracy(
        draw(5, 10).to(d), draw(5, high=4).to(d), torch.arange(4).to(d)
    ),
    "lib.ocr.training:candidate_loss": lambda d: training.candidate_loss(
        draw(5, 10).to(d), draw(5, high=4).to(d), torch.arange(4).to(d)
    ),
    "lib.ocr.training:train_on_task": lambda d: ocr_run(d),
    "lib.ocr.training:ov_blocks": lambda d: training.ov_blocks(one_layer(d, 1).ov()[0], task()),
}

# Public functions that take a tensor, model, generator or device but are not called above, and why.
EXCLUDED: dict[str, str] = {
    "lib.ocr.theory:solve_min_norm": "a float64 solver on the CPU by contract: its constraints take CPU float64 "
    "tensors (solve_max_margin, called above, moves device inputs there)",
    "lib.ocr.lm:load_pretrained": "downloads a hub model (about 0.5 GB): not in a unit test; tiny_gpt2 is called",
    "lib.ocr.lm:load_if_enabled": "load_pretrained behind a switch (see above)",
    "lib.induction.mixed:dating_curves": "every checkpoint of a shipped run (about a minute); its parts (Run.model_at, "
    "icl_of, scores.attention_patterns, scores.prefix_matching_score) are called above",
    "lib.induction.natural.recipes:run": "a full training run from the corpus (minutes); its parts (make_probes, "
    "measure, train) are called above",
    "lib.induction.natural.recipes:random_repeats": "maps a model's shape to a task's (no tensors); the batches it "
    "makes come from sequences.repeated_sequences, called above",
}

TENSOR_TYPES = re.compile(
    r"\b(Tensor|Module|Generator|device|Parameter|TransformerBridge|OneLayer|SlimModel|Model|ModelT|Moved|"
    r"Batch|SentenceBatch|MixedBatch|Probes|OCRProblem)\b"
)
"""Parameter annotations that mean "takes a tensor, a model, a generator or a device" (or a batch of tensors)."""
SKIPPED = ("lib.show", "lib.exercises")
"""Figures (take CPU data and draw) and learner checks (lib.exercises.framework, edited by the lead)."""


def public_functions() -> Iterator[tuple[str, Callable[..., Any]]]:
    """``("module:qualname", function)`` for every public function and method defined in lib (outside SKIPPED)."""
    for info in pkgutil.walk_packages(lib.__path__, "lib."):
        if info.name.startswith(SKIPPED):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj):
                yield f"{module.__name__}:{name}", obj
            elif inspect.isclass(obj):
                # a dataclass's generated __init__ only stores its fields: the functions that make them are covered
                special = ("forward",) if dataclasses.is_dataclass(obj) else ("__init__", "forward")
                for attr, member in vars(obj).items():
                    function = getattr(member, "__func__", member)
                    if inspect.isfunction(function) and (not attr.startswith("_") or attr in special):
                        yield f"{module.__name__}:{name}.{attr}", function


def takes_tensors(function: Callable[..., Any]) -> bool:
    parameters = inspect.signature(function).parameters.values()
    return any(p.name == "model" or TENSOR_TYPES.search(str(p.annotation)) for p in parameters)


def comparable(x: Any) -> Any:
    """``x`` with models as their state and dataclasses as dicts of their fields, for ``assert_close``."""
    if isinstance(x, nn.Module):
        return x.state_dict()
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: comparable(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return {k: comparable(v) for k, v in x._asdict().items()}
    if isinstance(x, (list, tuple)):
        return type(x)(comparable(v) for v in x)
    if isinstance(x, dict):
        return {k: comparable(v) for k, v in x.items()}
    return x


def assert_same_result(got: Any, expected: Any) -> None:
    """``got`` (from the device, made CPU) is ``expected``: numbers within float tolerance, anything else equal."""
    if isinstance(expected, dict):
        assert got.keys() == expected.keys()
        for key in expected:
            assert_same_result(got[key], expected[key])
    elif isinstance(expected, (list, tuple)):
        assert type(got) is type(expected) and len(got) == len(expected)
        for a, b in zip(got, expected, strict=True):
            assert_same_result(a, b)
    elif isinstance(expected, (torch.Tensor, float, int)):
        torch.testing.assert_close(got, expected, check_device=False, equal_nan=True, rtol=1e-4, atol=1e-4)
    else:
        assert got == expected


def test_every_tensor_function_is_called_or_excluded() -> None:
    """A new public function of lib that takes tensors needs an entry in CALLS (or EXCLUDED, with its reason)."""
    found = {name for name, function in public_functions() if takes_tensors(function)}
    assert sorted(found - CALLS.keys() - EXCLUDED.keys()) == []
    assert sorted((CALLS.keys() | EXCLUDED.keys()) - {name for name, _ in public_functions()}) == []


@pytest.mark.parametrize("mps", [False, True], ids=["cuda", "mps"])
@pytest.mark.parametrize("name", CALLS)
def test_on_the_device(name: str, mps: bool) -> None:
    """The call runs on the pretend device (as cuda, or as mps: no float64, SVD or eigh there) and gives the CPU's
    result, within a tolerance: a subclass tensor takes the math path of fused kernels (attention), and a few Adam
    steps amplify those last-bit differences on near-zero gradients."""
    torch.manual_seed(0)
    expected = comparable(CALLS[name](torch.device("cpu")))
    torch.manual_seed(0)
    with pretend_accelerator(mps=mps) as device:
        got = comparable(CALLS[name](device))
    assert_same_result(real(got), expected)


def test_training_sees_the_cpu_batches() -> None:
    """lib.core.train.train draws every batch on a CPU generator and moves it: the pretend device trains on exactly
    the CPU's data (one data stream on every device)."""

    def batches(d: torch.device) -> list[torch.Tensor]:
        seen: list[torch.Tensor] = []

        def loss_fn(net: nn.Module, batch: torch.Tensor) -> torch.Tensor:
            assert batch.device == d
            seen.append(real(batch))
            return models.training_loss(net, batch)

        train.train(model(d), sequences.make_batch_fn(TINY), loss_fn, QUIET)
        return seen

    expected = batches(torch.device("cpu"))
    with pretend_accelerator() as device:
        got = batches(device)
    assert len(got) == QUIET.steps and all(torch.equal(a, b) for a, b in zip(got, expected, strict=True))


@pytest.mark.parametrize(
    "data",
    [
        lambda d: sequences.repeated_sequences(64, sequences.seeded_generator(5), TINY, d),
        lambda d: sequences.eval_sets(TINY, d),
        lambda d: mixed.eval_batch(MIXED, d),
    ],
    ids=["repeated_sequences", "eval_sets", "mixed.eval_batch"],
)
def test_data_is_the_cpus(data: Call) -> None:
    """Data made for the device is the CPU's, bit for bit."""
    expected = comparable(data(torch.device("cpu")))
    with pretend_accelerator() as device:
        got = comparable(data(device))
    assert all(isinstance(t, PretendTensor) for t in tree_flatten(got)[0])
    torch.testing.assert_close(real(got), expected, rtol=0, atol=0, check_device=False)


def test_a_planted_cpu_tensor_fails_its_entry() -> None:
    """A lib function that meets a CPU tensor fails its entry on the pretend device (and still runs on the CPU)."""
    original = scores.previous_token_score

    def planted(pattern: torch.Tensor) -> torch.Tensor:
        return original(pattern) + torch.zeros(pattern.shape[-3])  # a (heads,) CPU constant

    call = CALLS["lib.induction.scores:previous_token_score"]
    with mock.patch.object(scores, "previous_token_score", planted):
        call(torch.device("cpu"))
        with pretend_accelerator() as device, pytest.raises(DeviceMixError, match="mixes devices"):
            call(device)
