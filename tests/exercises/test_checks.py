"""lib.exercises: compare's messages, and every exercise check against a stub, plausible wrong answers and the
reference.

``ROWS`` has one row per public ``check_*`` function of lib.exercises; a new check without a row fails
``test_every_check_has_a_row``. Every chapter's stub is a body of ``raise NotImplementedError`` and a check calls
the learner's function with positional arguments, so one ``stub`` stands for all of them.
"""

import dataclasses
import inspect
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest
import torch

from lib.core.tokens import BOS
from lib.exercises import framework, induction_checks, ocr_checks
from lib.exercises.framework import CheckFailed, compare, difference, same
from lib.induction import ablation, circuits, dynamics, fuzzy, handbuilt, scores, sequences, sizes, smear
from lib.induction.natural import probes
from lib.ocr import lm, onelayer, ranking, relations, sentences, split, symbolic, theorem, theory, training

# --- compare and same ----------------------------------------------------------------------------


def test_compare_passes_and_prints(capsys):
    compare("double", lambda x: 2 * x, lambda x: x + x, [(1,), (torch.arange(3),)])
    assert "PASSED double: all 2 cases" in capsys.readouterr().out


def test_compare_names_input_expected_and_got():
    with pytest.raises(
        CheckFailed,
        match=r"case 2 of 2 differs: the output is 7, expected 6\.(.|\n)*input:    3(.|\n)*expected: 6(.|\n)*"
        r"got:      7",
    ):
        compare("double", lambda x: 2 * x + (x == 3), lambda x: 2 * x, [(1,), (3,)])


def test_compare_not_implemented():
    def stub(x):
        raise NotImplementedError

    with pytest.raises(CheckFailed, match="not implemented yet"):
        compare("stub", stub, lambda x: x, [(1,)])


def test_same_tolerances_and_shapes():
    assert same(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-7]))
    assert not same(torch.tensor([1.0, 2.0]), torch.tensor([[1.0, 2.0]]))
    assert not same(torch.tensor([1, 2]), torch.tensor([1, 3]))
    assert same({"a": [1.0, 2]}, {"a": [1.0, 2]})
    assert not same([1, 2], [1, 2, 3])
    assert not same([(1, 2)], ((1, 2),)), "a list is not the tuple the reference returns"
    assert not same(torch.tensor([1, 0]), torch.tensor([True, False])), "an int mask is not a bool mask"


def test_difference_names_the_part_that_differs():
    expected = {"W_Q": torch.zeros(3, 4), "b_Q": torch.ones(4)}
    got = {"W_Q": torch.zeros(3, 4), "b_Q": torch.ones(4)}
    got["W_Q"][2, 1] = 0.5
    assert difference(got, expected) == "the output['W_Q'][2, 1] is 0.5, expected 0.0 (1 of 12 entries differ)"
    assert difference({"W_Q": torch.zeros(3, 4)}, expected) == "the output has keys ['W_Q'], expected ['W_Q', 'b_Q']"
    assert difference((torch.zeros(2), 1.5), (torch.zeros(3), 1.5)) == "the output[0] has shape (2,), expected (3,)"
    assert difference([[1]], torch.ones(1, 1)) == (
        "the output is a list, expected a tensor of shape (1, 1) and dtype torch.float32"
    )
    # a long tensor whose first values agree: the message shows where it does not, so expected and got differ
    long = torch.arange(100.0)
    assert "[57] is 0.0, expected 57.0" in difference(long.where(long != 57, 0.0), long)


def test_compare_reports_an_error_inside_the_learner_as_the_learner_s():
    def broken(x):
        return torch.linalg.svd(x)[3]

    with pytest.raises(CheckFailed, match=r"your function raised IndexError on case 1 of 1: .*\n  input:    tensor"):
        compare("svd", broken, lambda x: x, [(torch.eye(2),)])


# --- plausible wrong answers, by chapter ---------------------------------------------------------
# Chapter 1: the split and the metric.


def shifted_map_the_wrong_way(mapping, shift):  # c_(i - shift): the inverse shift
    return relations.shifted_map(mapping, -shift)


def shifted_map_as_lists(mapping, shift):  # the right pairs, as a list of lists (the book's rules are tuples)
    return [list(pair) for pair in relations.shifted_map(mapping, shift)]


def shifted_map_moving_the_fact_values(mapping, shift):  # (b_(i + shift), c_i): right pairs, wrong order
    n = len(mapping)
    return tuple((mapping[(i + shift) % n][0], c) for i, (_, c) in enumerate(mapping))


def pair_sentences_true_language(pair, name, fact_value):  # the real city's language, also for the false rule
    c = dict(relations.CITY_LANGUAGE).get(fact_value, pair.implication(fact_value))
    words = dict(s=name, b=fact_value, c=c, r1=pair.fact_relation, r2=pair.implication_relation)
    return [t.format(**words) for t in pair.fact_templates], [t.format(**words) for t in pair.implication_templates]


def pair_sentences_first_template_only(pair, name, fact_value):
    facts, implications = sentences.pair_sentences(pair, name, fact_value)
    return facts[:1], implications[:1]


def split_subjects_rounding_half_to_even(group_of, fraction):  # Python's round() sends 1.5 to 2 but 0.5 to 0
    groups = {}
    for i, g in enumerate(group_of):
        groups.setdefault(g, []).append(i)
    train = sorted(i for m in groups.values() for i in m[: round(fraction * len(m))])
    return train, sorted(set(range(len(group_of))) - set(train))


def split_subjects_test_before_train(group_of, fraction):
    return split.split_subjects(group_of, fraction)[::-1]


def mean_rank_ignoring_ties(candidate_scores, answer):
    return (candidate_scores > candidate_scores.gather(1, answer[:, None])).sum(1).float().mean().item()


def mean_rank_one_indexed(candidate_scores, answer):
    return sentences.mean_rank(candidate_scores, answer) + 1


def train_batch_leaking_test_implications(task, batch_size, generator):  # the held-out group in training
    groups = ("train_facts", "train_implications", "test_implications")
    parts = [task.sample(g, (batch_size + i) // 3, generator) for i, g in enumerate(groups)]
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])


def train_batch_dropping_the_remainder(task, batch_size, generator):  # batch_size // 3 each: too short
    parts = [task.sample(g, batch_size // 3, generator) for g in split.TRAIN_GROUPS]
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])


def symbolic_sequences_always_the_fact_relation(task, group, subjects, noise, where):
    x, y = symbolic.symbolic_sequences(task, group, subjects, noise, where)
    x[:, -2] = task.fact_relation_of[subjects]
    return x, y


def symbolic_sequences_one_relation_token(task, group, subjects, noise, where):  # r2 of the first rule for all
    x, y = symbolic.symbolic_sequences(task, group, subjects, noise, where)
    x[:, -2] = (task.fact_relation_of if group.endswith("facts") else task.implication_relation_of)[0]
    return x, y


def symbolic_sequences_subject_one_to_the_right(task, group, subjects, noise, where):  # off by one
    x, y = symbolic.symbolic_sequences(task, group, subjects, noise, where)
    rows = torch.arange(len(subjects))
    x[rows, where] = noise[rows, where]
    x[rows, where + 1] = task.subject_ids[subjects]  # may overwrite the relation at seq_len - 2
    return x, y


# Chapters 2-3: the one-layer models and the theory.


def forward_with_key_and_query_swapped(W_O, W_V, W_KQ, tokens):
    return onelayer.forward_reference(W_O, W_V, W_KQ.T, tokens)


def forward_querying_the_first_token(W_O, W_V, W_KQ, tokens):  # x_1 instead of the last token x_T as the query
    X = torch.nn.functional.one_hot(tokens, W_KQ.shape[0]).to(W_KQ.dtype)
    return W_O @ W_V.T @ X.T @ X @ W_KQ @ X[0]


def accuracy_over_all_tokens(logits, answers, candidates):  # argmax over the whole vocabulary
    return float((logits.argmax(1) == answers).float().mean())


def candidate_loss_over_all_tokens(logits, answers, candidates):  # the softmax over the whole vocabulary
    return float(torch.nn.functional.cross_entropy(logits, answers))


def candidate_loss_summed(logits, answers, candidates):  # the sum over examples, not the mean
    return training.candidate_loss(logits, answers, candidates) * len(answers)


def numerical_rank_absolute(W, rel_tol):  # compares with rel_tol itself, not rel_tol times the largest
    return int((torch.linalg.svdvals(W) > rel_tol).sum())


def numerical_rank_at_least(W, rel_tol):  # ">=" for "larger than": a zero matrix would have full rank
    s = torch.linalg.svdvals(W)
    return int((s >= rel_tol * s[0]).sum())


def numerical_rank_torch_default(W, rel_tol):  # torch's own tolerance: machine precision, not rel_tol
    return int(torch.linalg.matrix_rank(W))


def nuclear_norm_frobenius(W):
    return float(torch.linalg.matrix_norm(W))


def nuclear_norm_largest_singular_value(W):  # the spectral norm
    return float(torch.linalg.svdvals(W)[0])


def two_row_nuclear_norm_squared(m_train, m_test, t):  # the chapter's formula gives the square
    return theorem.two_row_nuclear_norm(m_train, m_test, t) ** 2


def two_row_nuclear_norm_frobenius(m_train, m_test, t):
    v = torch.cat([torch.ones(m_train), torch.full((m_test,), float(t))])
    return float(torch.linalg.matrix_norm(torch.stack([torch.ones(m_train + m_test), v])))


def margins_against_every_class(logits, targets):  # the max includes the target itself: never negative
    return logits.gather(1, targets[:, None]).squeeze(1) - logits.max(1).values


def svt_with_full_matrices(W, tau):  # U is (m, m) for an (m, n) W: the product fails for a non-square W
    U, s, Vh = torch.linalg.svd(W, full_matrices=True)
    return U @ torch.diag((s - tau).clamp_min(0)) @ Vh


def svt_entry_wise(W, tau):  # shrinks the entries, not the singular values
    return W.sign() * (W.abs() - tau).clamp_min(0)


def merged_forward_softmax_attention(W_OV, W_KQ, tokens):  # the chapter's attention has no softmax
    X = torch.nn.functional.one_hot(tokens, W_KQ.shape[0]).float()
    scores = (X @ W_KQ @ X[:, -1, :, None]).softmax(1)
    return (X * scores).sum(1) @ W_OV.T


def merged_forward_query_first_token(W_OV, W_KQ, tokens):  # reads the attention from the first position
    X = torch.nn.functional.one_hot(tokens, W_KQ.shape[0]).float()
    return (X * (X @ W_KQ @ X[:, 0, :, None])).sum(1) @ W_OV.T


def column_push_ascending(params, tokens, answers, subject, rows):  # the gradient itself: a step uphill
    return -onelayer.column_push(params, tokens, answers, subject, rows)


def column_push_through_W_V(params, tokens, answers, subject, rows):  # factorized: W_V[rows] instead of W_O[rows]
    if "W_OV" in params:
        return onelayer.column_push(params, tokens, answers, subject, rows)
    return onelayer.column_push(params | {"W_O": params["W_V"]}, tokens, answers, subject, rows)


def balanced_factors_unbalanced(W):  # A = U S, B = V: the right product, a larger cost
    U, s, Vh = torch.linalg.svd(W, full_matrices=False)
    return U * s, Vh.T


def balanced_factors_all_in_A(W):  # A = W, B = I: the right product, cost (||W||_F^2 + n) / 2
    return W, torch.eye(W.shape[1])


def proximal_step_threshold_lam(W, inputs, targets, lr, lam):  # thresholds by lam, not lr * lam
    return theory.svt(theory.proximal_step(W, inputs, targets, lr, 0.0), lam)


def proximal_step_svt_first(W, inputs, targets, lr, lam):  # thresholds, then steps
    return theory.proximal_step(theory.svt(W, lr * lam), inputs, targets, lr, 0.0)


# Chapter 4: the pretrained-style language model.


def score_first_token_only(model, tokenizer, prompt, candidates):  # wrong for multi-token candidates
    n = len(tokenizer(prompt)["input_ids"])
    out = []
    for c in candidates:
        ids = torch.tensor([tokenizer(f"{prompt} {c}")["input_ids"]])
        out.append(model(input_ids=ids).logits[0, n - 1].log_softmax(-1)[ids[0, n]])
    return torch.stack(out).detach()


def mean_rank_over_all_pairs(questions, candidate_scores):  # one number for all pairs, copied to each
    r = sentences.mean_rank(candidate_scores, [q.answer for q in questions])
    return {p: r for p in sorted({q.pair for q in questions})}


def control_with_every_fact(task):  # the normal fine-tuning text: the held-out subjects' facts are still in it
    return task.train_sentences()


def control_without_implications(task):  # the training subjects' facts only
    return [s for i in task.train_subjects for s in task.fact_sentences(i)]


def _batched_scores(model, tokenizer, questions, batch_size, mask_padding=True):
    texts, starts = [], []
    for q in questions:
        n = len(tokenizer(q.prompt)["input_ids"])
        for c in q.candidates:
            texts.append(tokenizer(f"{q.prompt} {c}")["input_ids"])
            starts.append(n)
    flat = []
    with torch.inference_mode():
        for lo in range(0, len(texts), batch_size):
            ids, mask = lm._pad(texts[lo : lo + batch_size], tokenizer.pad_token_id, None)
            logp = model(input_ids=ids, attention_mask=mask.long()).logits.log_softmax(-1)
            token_logp = logp[:, :-1].gather(-1, ids[:, 1:, None])[..., 0]
            keep = torch.arange(1, ids.shape[1])[None] >= torch.tensor(starts[lo : lo + batch_size])[:, None]
            if mask_padding:
                keep &= mask[:, 1:]
            flat += (token_logp * keep).sum(1).tolist()
    out, i = [], 0
    for q in questions:
        out.append(torch.tensor(flat[i : i + len(q.candidates)]))
        i += len(q.candidates)
    return out


def batched_scores_with_padding(model, tokenizer, questions, batch_size):  # sums the padding's log-probs too
    return _batched_scores(model, tokenizer, questions, batch_size, mask_padding=False)


def scores_one_candidate_at_a_time(model, tokenizer, questions, batch_size):  # right numbers, one call per text
    return [
        torch.stack(
            [
                _batched_scores(model, tokenizer, [dataclasses.replace(q, candidates=(c,), answer=0)], 1)[0][0]
                for c in q.candidates
            ]
        )
        for q in questions
    ]


# Chapters 5-7: induction heads.


def prefix_score_of_the_earlier_occurrence(pattern, tokens):  # attends to the repeat itself, not the token after it
    seq = tokens.shape[1]
    mask = (tokens[:, None, :] == tokens[:, :, None]) & torch.ones(seq, seq, dtype=torch.bool).tril(-1)
    has = mask.any(-1)
    return ((pattern * mask[:, None]).sum(-1) * has[:, None]).sum(dim=(0, 2)) / has.sum()


def cross_prefix_score_counting_exact_repeats(pattern, tokens, translate):  # also scores queries seen before
    mask = fuzzy.cross_prefix_matching_mask(tokens, translate)
    has = mask.any(-1)
    return ((pattern * mask[:, None]).sum(-1) * has[:, None]).sum(dim=(0, 2)) / has.sum()


def cross_prefix_score_of_the_same_token(pattern, tokens, translate):  # chapter 5's score: no translation
    return scores.prefix_matching_score(pattern, tokens)


def cross_prefix_score_of_the_translation_itself(pattern, tokens, translate):  # the match, not the token after it
    seq = tokens.shape[1]
    mask = (tokens[:, None, :] == translate[tokens][:, :, None]) & torch.ones(seq, seq, dtype=torch.bool).tril(-1)
    has = mask.any(-1) & ~scores.prefix_matching_mask(tokens).any(-1)
    return ((pattern * mask[:, None]).sum(-1) * has[:, None]).sum(dim=(0, 2)) / has.sum()


def previous_token_head_attending_to_itself(layout, strength=20.0):
    w = handbuilt.previous_token_head_weights(layout, strength)
    pos = torch.arange(layout.seq_len)
    w["W_K"] = torch.zeros_like(w["W_K"])
    w["W_K"][layout.position.start + pos, pos] = 1.0
    return w


def smear_keys_weights_swapped(keys, sigma):  # weights the previous key by sigma instead of the current one
    previous = torch.cat([keys[:, :1], keys[:, :-1]], dim=1)
    return sigma[:, None] * previous + (1 - sigma[:, None]) * keys


def smear_keys_zero_first(keys, sigma):  # pads position 0 with a zero key instead of leaving it unchanged
    previous = torch.cat([torch.zeros_like(keys[:, :1]), keys[:, :-1]], dim=1)
    return sigma[:, None] * keys + (1 - sigma[:, None]) * previous


def smear_keys_rolled(keys, sigma):  # torch.roll wraps the last key around to position 0
    return sigma[:, None] * keys + (1 - sigma[:, None]) * keys.roll(1, dims=1)


def pattern_preserving_ablation(model, tokens, layer, head):
    return ablation.ablated_loss(model, tokens, [(layer, head)], "pattern-preserving")


def full_ablation_instead(model, tokens, layer, head):
    return ablation.ablated_loss(model, tokens, [(layer, head)], "full")


def ablation_leaving_a_hook(model, tokens, layer, head):
    model.blocks[0].attn.hook_z.add_hook(lambda z, hook: z)
    return pattern_preserving_ablation(model, tokens, layer, head)


def induction_head_keys_reading_the_token_slot(layout, strength=20.0):  # no K-composition: keys see their own token
    w = handbuilt.induction_head_weights(layout, strength)
    tok = torch.arange(1, layout.vocab)
    w["W_K"] = torch.zeros_like(w["W_K"])
    w["W_K"][layout.token.start + tok, tok] = 1.0
    w["W_K"][layout.position.start, BOS] = 0.5
    return w


def induction_head_without_a_resting_place(layout, strength=20.0):  # no query bias: BOS never wins
    w = handbuilt.induction_head_weights(layout, strength)
    w["b_Q"] = torch.zeros_like(w["b_Q"])
    return w


def _olsson(model, tokens, centre=True, value_bias=True, layer_input=True):
    names = [f"blocks.{layer}.hook_resid_pre" for layer in range(model.cfg.n_layers)]
    _, cache = model.run_with_cache(tokens)
    out = []
    for layer, name in enumerate(names):
        x = cache[name if layer_input else names[0]][:, 1:]
        values = torch.einsum("bpd,hde->bphe", x, model.W_V[layer]) + value_bias * model.b_V[layer]
        logits = torch.einsum("bphe,hed->bphd", values, model.W_O[layer]) @ model.W_U
        raised = torch.relu(logits - logits.mean(-1, keepdim=True) if centre else logits)
        own = raised.gather(-1, tokens[:, 1:, None, None].expand(*raised.shape[:-1], 1))[..., 0]
        out.append((own / raised.sum(-1).clamp_min(1e-12)).mean(dim=(0, 1)))
    return torch.stack(out).detach()


def olsson_copying_without_centring(model, tokens):  # ReLU of the raw logits: every positive logit counts
    return _olsson(model, tokens, centre=False)


def olsson_copying_without_the_value_bias(model, tokens):
    return _olsson(model, tokens, value_bias=False)


def olsson_copying_from_the_embeddings_only(model, tokens):  # layer 1 never sees what layer 0 wrote
    return _olsson(model, tokens, layer_input=False)


def _smeared(model, tokens, alpha, hook_name="hook_k", squash=torch.sigmoid):
    def hook(layer):
        return lambda x, hook: smear.smear_keys(x, squash(alpha[layer]))

    hooks = [(f"blocks.{layer}.attn.{hook_name}", hook(layer)) for layer in range(model.cfg.n_layers)]
    with model.hooks(fwd_hooks=hooks):
        return model(tokens)


def run_with_smeared_queries(model, tokens, alpha):
    return _smeared(model, tokens, alpha, hook_name="hook_q")


def run_with_smear_alpha_as_weight(model, tokens, alpha):  # alpha itself as the weight, no sigmoid
    return _smeared(model, tokens, alpha, squash=lambda a: a)


def run_with_smear_attached_for_good(model, tokens, alpha):
    smear.attach_smear(model, alpha)
    return model(tokens)


def prediction_shares_swapped(logits, tokens, mask):  # compares each guess with the token it was read at
    right, current = scores.prediction_shares(logits, tokens, mask)
    return current, right


def prediction_shares_unmasked(logits, tokens, mask):
    return scores.prediction_shares(logits, tokens, torch.ones_like(mask))


def smeared_head_reading_the_previous_slot(layout, strength=20.0):  # chapter 5's head: nothing writes that slot
    return handbuilt.induction_head_weights(layout, strength)


def smeared_head_without_strength(layout, strength=20.0):  # attention scores of 1/sqrt(d_head): too soft
    w = smear.hand_built_head_weights(layout, strength)
    w["W_Q"] = w["W_Q"] / (strength * layout.d_head**0.5)
    return w


def icl_score_sign_flipped(loss, early, late):  # positive for in-context learning
    return -scores.icl_score(loss, early, late)


def icl_score_first_and_last(loss, early, late):  # ignores the positions asked for
    return scores.icl_score(loss, 0, loss.shape[-1] - 1)


def full_ablation(model, tokens, layer, head):
    return ablation.ablated_loss(model, tokens, [(layer, head)], "full")


def full_ablation_leaving_a_hook(model, tokens, layer, head):
    model.blocks[1].attn.hook_pattern.add_hook(lambda pattern, hook: pattern)
    return full_ablation(model, tokens, layer, head)


def repeat_mask_including_the_first_repeat(period, config):  # p == period: the segment's last token, seen once
    return torch.arange(config.seq_len - 1)[None, :] >= period[:, None]


def repeat_mask_over_tokens(period, config):  # aligned with the tokens, not with the predictions
    return torch.arange(config.seq_len)[None, :] > period[:, None]


def repeat_mask_of_ints(period, config):  # the right entries as 0/1 integers: indexing with it picks rows 0 and 1
    return sequences.repeat_mask(period, config).long()


def previous_token_score_of_the_current_token(pattern):  # the diagonal itself: attention to oneself
    return pattern.diagonal(dim1=-2, dim2=-1).mean(dim=(0, -1))


def previous_token_score_counting_position_0(pattern):  # position 0 has no previous token: a zero in the mean
    diagonal = torch.nn.functional.pad(pattern.diagonal(offset=-1, dim1=-2, dim2=-1), (1, 0))
    return diagonal.mean(dim=(0, -1))


def sigma_trajectory_of_alpha(checkpoints, steps):  # alpha itself, no sigmoid
    return torch.stack([checkpoints[s][smear.STATE_KEY] for s in steps])


def sigma_trajectory_of_every_checkpoint(checkpoints, steps):  # ignores the steps asked for
    return torch.stack([smear.sigma_of_state(state) for state in checkpoints.values()])


def half_change_step_of_a_fall(steps, values):  # assumes the curve falls
    half = (values[0] + values[-1]) / 2
    return next(s for s, v in zip(steps, values.tolist()) if v <= half)


def half_change_step_index(steps, values):  # the checkpoint's index, not its step
    return list(steps).index(dynamics.half_change_step(steps, values))


def half_change_step_from_the_extremes(steps, values):  # halfway between the lowest and highest values
    half = (values.min() + values.max()) / 2
    rising = values[-1] > values[0]
    return next(s for s, v in zip(steps, values.tolist()) if (v >= half if rising else v <= half))


def fraction_left(clean, ablated):  # the share kept, not the share removed
    return torch.as_tensor(ablated) / torch.as_tensor(clean)


def fraction_removed_in_nats(clean, ablated):  # the change of the score, not a share of it
    return torch.as_tensor(ablated) - torch.as_tensor(clean)


def mean_ablation_zero(model, tokens, layer, head):  # puts back zero, not the mean
    return ablation.ablated_loss(model, tokens, [(layer, head)], "full")


def mean_ablation_over_positions_too(model, tokens, layer, head):  # one mean vector for every position
    name = f"blocks.{layer}.attn.hook_z"
    _, cache = model.run_with_cache(tokens, names_filter=name)
    mean = cache[name][:, :, head].mean(dim=(0, 1))

    def hook(z, hook):
        z = z.clone()
        z[:, :, head] = mean
        return z

    with model.hooks(fwd_hooks=[(name, hook)]):
        return scores.next_token_loss(model(tokens), tokens)


def _qk_cut(model, tokens, sides, swap=False, bias=True, source="blocks.0.hook_resid_pre"):
    stored = {}
    hooks = [(source, lambda x, hook: stored.__setitem__("x", x))]
    for side in sides:
        if swap:
            side = "queries" if side == "keys" else "keys"
        W, b = (model.W_K[1], model.b_K[1]) if side == "keys" else (model.W_Q[1], model.b_Q[1])
        name = "blocks.1.attn.hook_k" if side == "keys" else "blocks.1.attn.hook_q"
        hooks.append((name, lambda act, hook, W=W, b=b: torch.einsum("bpd,hde->bphe", stored["x"], W) + bias * b))
    with model.hooks(fwd_hooks=hooks):
        return model(tokens)


def qk_cut_sides_swapped(model, tokens, sides):
    return _qk_cut(model, tokens, sides, swap=True)


def qk_cut_without_biases(model, tokens, sides):
    return _qk_cut(model, tokens, sides, bias=False)


def qk_cut_from_layer_1s_input(model, tokens, sides):  # the full residual stream: cuts nothing
    return _qk_cut(model, tokens, sides, source="blocks.1.hook_resid_pre")


def icl_per_window_sign_flipped(loss):  # positive for in-context learning
    return -probes.icl_per_window(loss)


def icl_per_window_single_positions(loss):  # one position of each band instead of its mean
    return loss[..., probes.LATE.stop - 1] - loss[..., probes.EARLY.start]


def induction_guess_first_occurrence(tokens):  # the earliest earlier occurrence, not the most recent
    seq = tokens.shape[1]
    earlier = torch.ones(seq, seq, dtype=torch.bool).tril(-1)
    same_token = (tokens[:, :, None] == tokens[:, None, :]) & earlier
    first = torch.where(same_token, torch.arange(seq), seq).amin(-1)
    return torch.where(first < seq, tokens.gather(1, (first + 1).clamp(max=seq - 1)), -1)


def induction_guess_the_earlier_token(tokens):  # the earlier occurrence itself: the current token again
    guess = probes.induction_guess(tokens)
    return torch.where(guess >= 0, tokens, -1)


def induction_guess_zero_when_new(tokens):  # 0 (a real token, BOS) where nothing occurred before
    return probes.induction_guess(tokens).clamp(min=0)


def ablate_head_zeroing_a_position(model, tokens, layer, head):  # z[:, head] is a position, not a head
    def hook(z, hook):
        z = z.clone()
        z[:, head] = 0.0
        return z

    with model.hooks(fwd_hooks=[(f"blocks.{layer}.attn.hook_z", hook)]):
        return scores.next_token_loss(model(tokens), tokens)


def ablate_head_whole_layer(model, tokens, layer, head):  # every head of the layer
    return ablation.ablated_losses(model, tokens, [[(layer, h) for h in range(model.cfg.n_heads)]])[0]


def ablate_head_leaving_a_hook(model, tokens, layer, head):
    model.add_hook(f"blocks.{layer}.attn.hook_z", lambda z, hook: z)
    return ablation.ablated_losses(model, tokens, [[(layer, head)]])[0]


def share_interval_unpaired(intact, ablated, level=0.9, samples=2000, seed=0):  # different windows for each side
    g = torch.Generator().manual_seed(seed)
    first, second = (torch.randint(0, len(intact), (samples, len(intact)), generator=g) for _ in range(2))
    shares = 1 - ablated[second].mean(-1) / intact[first].mean(-1)
    low, high = shares.double().quantile(torch.tensor([(1 - level) / 2, (1 + level) / 2], dtype=torch.float64))
    return low.item(), high.item()


def share_interval_not_resampled(intact, ablated, level=0.9, samples=2000, seed=0):  # the share itself, twice
    share = (1 - ablated.mean() / intact.mean()).item()
    return share, share


# --- the table -----------------------------------------------------------------------------------

# (?s): an input such as a model prints on several lines
DIFFERS = r"(?s)case \d+ of \d+ differs: the output.*\.\n  input: .*\n  expected: .*\n  got: "
NOT_IMPLEMENTED = r"not implemented yet; replace the `raise NotImplementedError` in your stub"


class Wrong(NamedTuple):
    answer: Callable[..., Any]
    message: str = DIFFERS  # a regular expression the check's CheckFailed must match


class Row(NamedTuple):
    check: Callable[[Callable[..., Any]], None]
    reference: Callable[..., Any]
    wrong: tuple[Wrong, ...]


def stub(*args):
    raise NotImplementedError


def onset_tokens_at_or_below(steps, repeated_loss, batch_size, seq_len):  # <= 1 nat, not < 1 nat
    step = next((s for s, x in zip(steps, repeated_loss) if x <= 1.0), None)
    return None if step is None else step * batch_size * seq_len


def onset_tokens_in_steps(steps, repeated_loss, batch_size, seq_len):  # the step, not the tokens
    return dynamics.phase_change_step(steps, repeated_loss)


def onset_tokens_of_the_last_crossing(steps, repeated_loss, batch_size, seq_len):  # where it stays below
    below = [s for s, x in zip(steps, repeated_loss) if x < 1.0]
    return None if not below else dynamics.stays_above_step(steps, -repeated_loss, -1.0) * batch_size * seq_len


ROWS = [
    Row(
        ocr_checks.check_shifted_map,
        relations.shifted_map,
        (Wrong(shifted_map_the_wrong_way), Wrong(shifted_map_moving_the_fact_values), Wrong(shifted_map_as_lists)),
    ),
    Row(
        ocr_checks.check_split_subjects,
        split.split_subjects,
        (Wrong(split_subjects_rounding_half_to_even), Wrong(split_subjects_test_before_train)),
    ),
    Row(
        ocr_checks.check_mean_rank, sentences.mean_rank, (Wrong(mean_rank_ignoring_ties), Wrong(mean_rank_one_indexed))
    ),
    Row(
        ocr_checks.check_pair_sentences,
        sentences.pair_sentences,
        (Wrong(pair_sentences_true_language), Wrong(pair_sentences_first_template_only)),
    ),
    Row(
        ocr_checks.check_train_batch,
        symbolic.SymbolicTask.train_batch,
        (Wrong(train_batch_leaking_test_implications), Wrong(train_batch_dropping_the_remainder)),
    ),
    Row(
        ocr_checks.check_symbolic_sequences,
        symbolic.symbolic_sequences,
        (
            Wrong(symbolic_sequences_always_the_fact_relation),
            Wrong(symbolic_sequences_one_relation_token),
            Wrong(symbolic_sequences_subject_one_to_the_right),
        ),
    ),
    Row(
        ocr_checks.check_factorized_forward,
        onelayer.forward_reference,
        (Wrong(forward_with_key_and_query_swapped), Wrong(forward_querying_the_first_token)),
    ),
    Row(ocr_checks.check_candidate_accuracy, training.candidate_accuracy, (Wrong(accuracy_over_all_tokens),)),
    Row(
        ocr_checks.check_candidate_loss,
        training.candidate_loss,
        (Wrong(candidate_loss_over_all_tokens), Wrong(candidate_loss_summed)),
    ),
    Row(
        ocr_checks.check_numerical_rank,
        theorem.numerical_rank,
        (Wrong(numerical_rank_absolute), Wrong(numerical_rank_torch_default), Wrong(numerical_rank_at_least)),
    ),
    Row(
        ocr_checks.check_merged_forward,
        onelayer.merged_forward_reference,
        (Wrong(merged_forward_softmax_attention), Wrong(merged_forward_query_first_token)),
    ),
    Row(
        ocr_checks.check_column_push,
        onelayer.column_push,
        (Wrong(column_push_ascending), Wrong(column_push_through_W_V)),
    ),
    Row(ocr_checks.check_multiclass_margins, theory.multiclass_margins, (Wrong(margins_against_every_class),)),
    Row(
        ocr_checks.check_nuclear_norm,
        lambda W: theory.matrix_norm(W, "nuclear"),
        (Wrong(nuclear_norm_frobenius), Wrong(nuclear_norm_largest_singular_value)),
    ),
    Row(
        ocr_checks.check_two_row_nuclear_norm,
        theorem.two_row_nuclear_norm,
        (Wrong(two_row_nuclear_norm_squared), Wrong(two_row_nuclear_norm_frobenius)),
    ),
    Row(
        ocr_checks.check_svt,
        theory.svt,
        (Wrong(svt_entry_wise), Wrong(svt_with_full_matrices, r"your function raised RuntimeError on case \d+ of \d+")),
    ),
    Row(
        ocr_checks.check_balanced_factors,
        theory.balanced_factors,
        (Wrong(balanced_factors_unbalanced), Wrong(balanced_factors_all_in_A)),
    ),
    Row(
        ocr_checks.check_proximal_step,
        theory.proximal_step,
        (Wrong(proximal_step_threshold_lam), Wrong(proximal_step_svt_first)),
    ),
    Row(ocr_checks.check_score_candidates, ranking.score_candidates, (Wrong(score_first_token_only),)),
    Row(ocr_checks.check_mean_rank_by_pair, ranking.mean_rank_by_pair, (Wrong(mean_rank_over_all_pairs),)),
    Row(
        ocr_checks.check_control_sentences,
        lm.control_sentences,
        (Wrong(control_with_every_fact), Wrong(control_without_implications)),
    ),
    Row(
        ocr_checks.check_batched_scorer,
        _batched_scores,
        (
            Wrong(batched_scores_with_padding),
            Wrong(scores_one_candidate_at_a_time, r"batched scorer: \d+ calls of the model .* at most \d+"),
        ),
    ),
    Row(
        induction_checks.check_repeat_mask,
        sequences.repeat_mask,
        (Wrong(repeat_mask_including_the_first_repeat), Wrong(repeat_mask_over_tokens), Wrong(repeat_mask_of_ints)),
    ),
    Row(
        induction_checks.check_previous_token_score,
        scores.previous_token_score,
        (Wrong(previous_token_score_of_the_current_token), Wrong(previous_token_score_counting_position_0)),
    ),
    Row(
        induction_checks.check_prefix_matching_score,
        scores.prefix_matching_score,
        (Wrong(prefix_score_of_the_earlier_occurrence),),
    ),
    Row(
        induction_checks.check_previous_token_head,
        handbuilt.previous_token_head_weights,
        (Wrong(previous_token_head_attending_to_itself),),
    ),
    Row(
        induction_checks.check_induction_head,
        handbuilt.induction_head_weights,
        (Wrong(induction_head_keys_reading_the_token_slot), Wrong(induction_head_without_a_resting_place)),
    ),
    Row(
        induction_checks.check_olsson_copying_score,
        circuits.olsson_copying_score,
        (
            Wrong(olsson_copying_without_centring),
            Wrong(olsson_copying_without_the_value_bias),
            Wrong(olsson_copying_from_the_embeddings_only),
        ),
    ),
    Row(
        induction_checks.check_smear_keys,
        smear.smear_keys,
        (Wrong(smear_keys_weights_swapped), Wrong(smear_keys_zero_first), Wrong(smear_keys_rolled)),
    ),
    Row(
        induction_checks.check_run_with_smear,
        smear.run_with_smear,
        (
            Wrong(run_with_smeared_queries),
            Wrong(run_with_smear_alpha_as_weight),
            Wrong(run_with_smear_attached_for_good, r"hook\(s\) left on the model"),
        ),
    ),
    Row(
        induction_checks.check_sigma_trajectory,
        smear.sigma_trajectory,
        (Wrong(sigma_trajectory_of_alpha), Wrong(sigma_trajectory_of_every_checkpoint)),
    ),
    Row(
        induction_checks.check_half_change_step,
        dynamics.half_change_step,
        (
            Wrong(half_change_step_of_a_fall),
            Wrong(half_change_step_index),
            Wrong(half_change_step_from_the_extremes),
        ),
    ),
    Row(
        induction_checks.check_prediction_shares,
        scores.prediction_shares,
        (Wrong(prediction_shares_swapped), Wrong(prediction_shares_unmasked)),
    ),
    Row(
        induction_checks.check_smeared_induction_head,
        smear.hand_built_head_weights,
        (
            Wrong(smeared_head_reading_the_previous_slot),
            Wrong(smeared_head_without_strength),
        ),
    ),
    Row(
        induction_checks.check_icl_score,
        scores.icl_score,
        (Wrong(icl_score_sign_flipped), Wrong(icl_score_first_and_last)),
    ),
    Row(
        induction_checks.check_fraction_removed,
        ablation.fraction_removed,
        (Wrong(fraction_left), Wrong(fraction_removed_in_nats)),
    ),
    Row(
        induction_checks.check_mean_ablation,
        lambda model, tokens, layer, head: ablation.ablated_loss(model, tokens, [(layer, head)], "full", "mean"),
        (
            Wrong(mean_ablation_zero),
            Wrong(mean_ablation_over_positions_too),
        ),
    ),
    Row(
        induction_checks.check_full_ablation,
        full_ablation,
        (Wrong(pattern_preserving_ablation), Wrong(full_ablation_leaving_a_hook, r"1 hook\(s\) left on the model")),
    ),
    Row(
        induction_checks.check_pattern_preserving_ablation,
        pattern_preserving_ablation,
        (Wrong(full_ablation_instead), Wrong(ablation_leaving_a_hook, r"1 hook\(s\) left on the model")),
    ),
    Row(
        induction_checks.check_qk_from_embeddings,
        lambda model, tokens, sides: circuits.run_with_qk_from_embeddings(model, tokens, sides)[0],
        (Wrong(qk_cut_sides_swapped), Wrong(qk_cut_without_biases), Wrong(qk_cut_from_layer_1s_input)),
    ),
    Row(
        induction_checks.check_icl_per_window,
        probes.icl_per_window,
        (Wrong(icl_per_window_sign_flipped), Wrong(icl_per_window_single_positions)),
    ),
    Row(
        induction_checks.check_induction_guess,
        probes.induction_guess,
        (
            Wrong(induction_guess_first_occurrence),
            Wrong(induction_guess_the_earlier_token),
            Wrong(induction_guess_zero_when_new),
        ),
    ),
    Row(
        induction_checks.check_ablate_head,
        lambda model, tokens, layer, head: ablation.ablated_losses(model, tokens, [[(layer, head)]])[0],
        (
            Wrong(ablate_head_zeroing_a_position),
            Wrong(ablate_head_whole_layer),
            Wrong(ablate_head_leaving_a_hook, r"1 hook\(s\) left on the model"),
        ),
    ),
    Row(
        induction_checks.check_share_interval,
        probes.share_interval,
        (Wrong(share_interval_unpaired), Wrong(share_interval_not_resampled)),
    ),
    Row(
        induction_checks.check_onset_tokens,
        sizes.onset_tokens,
        (
            Wrong(onset_tokens_at_or_below),
            Wrong(onset_tokens_in_steps),
            Wrong(onset_tokens_of_the_last_crossing),
        ),
    ),
    Row(
        induction_checks.check_cross_prefix_matching_score,
        fuzzy.cross_prefix_matching_score,
        (
            Wrong(cross_prefix_score_counting_exact_repeats),
            Wrong(cross_prefix_score_of_the_same_token),
            Wrong(cross_prefix_score_of_the_translation_itself),
        ),
    ),
]

BY_CHECK = [pytest.param(row, id=row.check.__name__) for row in ROWS]
WRONG = [
    pytest.param(row.check, wrong, id=f"{row.check.__name__}-{wrong.answer.__name__}")
    for row in ROWS
    for wrong in row.wrong
]


def test_every_check_has_a_row():
    public = {
        name
        for module in (ocr_checks, induction_checks)
        for name, function in inspect.getmembers(module, inspect.isfunction)
        if name.startswith("check_") and function.__module__ == module.__name__
    }
    covered = {row.check.__name__ for row in ROWS}
    assert public == covered, f"checks without a row: {public - covered}; rows of no public check: {covered - public}"


@pytest.mark.parametrize("row", BY_CHECK)
def test_check_accepts_the_reference(row, capsys):
    row.check(row.reference)
    assert "PASSED" in capsys.readouterr().out


@pytest.mark.parametrize("row", BY_CHECK)
def test_check_rejects_the_stub(row):
    with pytest.raises(CheckFailed, match=NOT_IMPLEMENTED):
        row.check(stub)


@pytest.mark.parametrize("check, wrong", WRONG)
def test_check_rejects_a_wrong_answer(check, wrong):
    with pytest.raises(CheckFailed, match=wrong.message):
        check(wrong.answer)


# --- passing_or_reference ------------------------------------------------------------------------


def _check_double(fn):
    compare("double", fn, lambda x: 2 * x, [(1,), (3,)])


def _reference_double(x):
    return 2 * x


def test_passing_or_reference_keeps_a_passing_learner(monkeypatch):
    monkeypatch.delenv(framework.STRICT_ENV, raising=False)

    def learner(x):
        return x + x

    assert framework.passing_or_reference(learner, _check_double, _reference_double) is learner


@pytest.mark.parametrize("wrong", [lambda x: x, lambda x: (_ for _ in ()).throw(NotImplementedError)])
def test_passing_or_reference_falls_back_and_says_why(monkeypatch, capsys, wrong):
    monkeypatch.delenv(framework.STRICT_ENV, raising=False)
    assert framework.passing_or_reference(wrong, _check_double, _reference_double) is _reference_double
    assert "Not solved yet: the cells below use the book's version" in capsys.readouterr().out


def test_passing_or_reference_raises_when_strict(monkeypatch):
    monkeypatch.setenv(framework.STRICT_ENV, "1")
    with pytest.raises(CheckFailed):
        framework.passing_or_reference(lambda x: x, _check_double, _reference_double)


@pytest.mark.parametrize("row", BY_CHECK)
def test_a_check_cell_run_again_after_the_fallback_says_it_holds_the_book_s_version(row, monkeypatch, capsys):
    """Issue 37: after a fallback (Run all with the stub untouched) the name holds the book's version; the check
    cell run again without the stub must not print PASSED for it."""
    monkeypatch.delenv(framework.STRICT_ENV, raising=False)
    book = framework.passing_or_reference(stub, row.check, row.reference)
    assert book is row.reference
    capsys.readouterr()
    assert framework.passing_or_reference(book, row.check, row.reference) is book
    out = capsys.readouterr().out
    assert framework.BOOK_VERSION in out and "PASSED" not in out, out


def test_the_book_s_version_is_found_when_the_reference_is_a_new_lambda(monkeypatch, capsys):
    """A check cell whose reference is a lambda makes a new one each run: the one handed back earlier is still
    the book's."""
    monkeypatch.delenv(framework.STRICT_ENV, raising=False)
    book = framework.passing_or_reference(lambda x: x, _check_double, lambda x: 2 * x)
    capsys.readouterr()
    again = lambda x: 2 * x  # noqa: E731  (the check cell's lambda, made anew)
    assert framework.passing_or_reference(book, _check_double, again) is again
    out = capsys.readouterr().out
    assert framework.BOOK_VERSION in out and "PASSED" not in out, out


def test_the_reference_itself_is_not_passed(monkeypatch, capsys):
    monkeypatch.delenv(framework.STRICT_ENV, raising=False)

    def reference(x):
        return 2 * x

    assert framework.passing_or_reference(reference, _check_double, reference) is reference
    out = capsys.readouterr().out
    assert f"_check_double: {framework.BOOK_VERSION}" in out and "PASSED" not in out, out
    monkeypatch.setenv(framework.STRICT_ENV, "1")
    with pytest.raises(CheckFailed, match="the book's version"):
        framework.passing_or_reference(reference, _check_double, reference)


# --- checks that judge a circuit by what it does -------------------------------------------------


def previous_token_head_shifted_on_the_query_side(layout, strength=20.0):  # query i -> dim i - 1, key j -> dim j
    weights = handbuilt.previous_token_head_weights(layout, strength)
    pos = torch.arange(layout.seq_len)
    W_Q, W_K = torch.zeros_like(weights["W_Q"]), torch.zeros_like(weights["W_K"])
    W_Q[layout.position.start + pos[1:], pos[:-1]] = strength * math.sqrt(layout.d_head)
    W_K[layout.position.start + pos, pos] = 1.0
    return {**weights, "W_Q": W_Q, "W_K": W_K}


def induction_head_resting_through_a_stronger_key(layout, strength=20.0):  # BOS: key 1 and half the query bias
    weights = handbuilt.induction_head_weights(layout, strength)
    b_Q, W_K = weights["b_Q"] / 2, weights["W_K"].clone()
    W_K[layout.position.start, 0] = 1.0
    return {**weights, "b_Q": b_Q, "W_K": W_K}


def previous_token_head_with_W_O_transposed(layout, strength=20.0):
    weights = handbuilt.previous_token_head_weights(layout, strength)
    return {**weights, "W_O": weights["W_O"].T}


@pytest.mark.parametrize(
    "check, equivalent",
    [
        (induction_checks.check_previous_token_head, previous_token_head_shifted_on_the_query_side),
        (induction_checks.check_induction_head, induction_head_resting_through_a_stronger_key),
    ],
)
def test_an_equivalent_circuit_passes(check, equivalent, capsys):
    """Issue 25: exercises 5.2 and 5.3 have more than one right answer; the check runs the circuit, so every
    circuit that attends and writes as the book's does passes."""
    check(equivalent)
    assert "PASSED" in capsys.readouterr().out


def test_a_wrong_circuit_is_named_by_what_it_does():
    with pytest.raises(CheckFailed, match=r"differs: the output\['attention pattern'\]\[0, \d+, \d+\] is"):
        induction_checks.check_previous_token_head(previous_token_head_attending_to_itself)
    with pytest.raises(CheckFailed, match=r"your W_O has shape \(23, 8\), expected \(8, 23\)"):
        induction_checks.check_previous_token_head(previous_token_head_with_W_O_transposed)


def test_a_check_runs_one_case_on_the_chapters_device(monkeypatch, capsys):
    """Off the CPU, compare runs the first tensor case again on pick_device(): a function that mixes in a CPU
    tensor fails there with a message that says so (a pretend GPU stands in: tests/core/fake_device.py)."""
    from tests.core.fake_device import pretend_accelerator

    def reference(x):
        return x * 2

    def keeps_device(x):
        return x + x

    def mixes_cpu(x):
        return x + torch.ones(x.shape)  # made on the CPU: a GPU refuses to add it

    cases = [(torch.arange(3.0),), (torch.ones(2),)]
    with pretend_accelerator() as device:
        monkeypatch.setattr(framework, "pick_device", lambda: device)
        framework.compare("double", keeps_device, reference, cases)
        with pytest.raises(framework.CheckFailed, match="works on the CPU but raised DeviceMixError with its inputs"):
            framework.compare("double", mixes_cpu, lambda x: x + torch.ones(x.shape, device=x.device), cases)
        # a function its chapter calls on the CPU is not run on the device
        framework.compare("cpu only", mixes_cpu, lambda x: x + 1, cases, on_device=False)
    out = capsys.readouterr().out
    assert "PASSED double: all 2 cases match the reference (and one on lazy)." in out
    assert "PASSED cpu only: all 2 cases match the reference." in out
