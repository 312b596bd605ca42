"""lib.ocr.lm: tokenizer, tiny model, loading, fine-tuning, candidate scoring, mean rank per pair."""

import time
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from lib.core.train import TrainConfig
from lib.ocr import lm, ranking, sentences

TEXT = [
    "Zai Bou lives in Paris.",
    "Zai Bou speaks French.",
    "Kel Tra plays squash.",
    "Kel Tra listens to heavy metal.",
    "To call Kel Tra, dial +33 first.",
]


@pytest.fixture(scope="module")
def tokenizer():
    return lm.word_tokenizer(TEXT)


@pytest.fixture(scope="module")
def small_task():
    return sentences.build_sentences(sentences.SentenceConfig(n_subjects=100, values_per_pair=5, seed=1))


# --- tokenizer ---------------------------------------------------------------------------------


def test_tokenizer_round_trip(tokenizer):
    for sentence in TEXT:
        ids = tokenizer(sentence)["input_ids"]
        assert ids[0] == tokenizer.bos_token_id and tokenizer.unk_token_id not in ids
        words = tokenizer.decode(ids, skip_special_tokens=True)
        assert tokenizer(words)["input_ids"] == ids  # decode then encode gives the same tokens
        assert words.replace(" ", "") == sentence.replace(" ", "")  # nothing lost but spacing
    assert tokenizer.convert_ids_to_tokens(tokenizer("Kel Tra listens to heavy metal.")["input_ids"]) == [
        "[BOS]",
        "Kel",
        "Tra",
        "listens",
        "to",
        "heavy",
        "metal",
        ".",
    ]


def test_tokenizer_unknown_words_and_determinism(tokenizer):
    assert tokenizer("Zai Bou sings")["input_ids"][-1] == tokenizer.unk_token_id
    assert lm.word_tokenizer(TEXT).get_vocab() == tokenizer.get_vocab()
    with pytest.raises(ValueError, match="non-empty"):
        lm.word_tokenizer([])


def test_task_tokenizer_knows_every_word_the_task_uses(small_task):
    tok = lm.task_tokenizer(small_task)
    questions = small_task.questions("test")
    texts = small_task.train_sentences() + [f"{q.prompt} {c}" for q in questions for c in q.candidates]
    assert all(tok.unk_token_id not in ids for ids in tok(texts)["input_ids"])


# --- models and loading ------------------------------------------------------------------------


def test_tiny_gpt2_shapes_and_seed(tokenizer):
    config = lm.TinyLMConfig(n_layer=1, d_model=16, n_head=2, max_len=16, seed=3)
    a, b = lm.tiny_gpt2(tokenizer, config), lm.tiny_gpt2(tokenizer, config)
    ids = torch.tensor([tokenizer("Zai Bou speaks French.")["input_ids"]])
    logits = a(input_ids=ids).logits
    assert logits.shape == (1, ids.shape[1], len(tokenizer))
    assert torch.equal(logits, b(input_ids=ids).logits)
    assert not torch.equal(
        logits, lm.tiny_gpt2(tokenizer, lm.TinyLMConfig(n_layer=1, d_model=16, n_head=2, seed=4))(input_ids=ids).logits
    )


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(n_layer=0), "n_layer must be a positive integer, got 0"),
        (dict(d_model=10, n_head=4), "divisible"),
        (dict(max_len=True), "max_len must be a positive integer, got True"),
        (dict(seed=-1), "seed must be an integer"),
    ],
)
def test_tiny_config_rejects_bad_values(bad, match):
    with pytest.raises(ValueError, match=match):
        lm.TinyLMConfig(**bad)


def test_load_pretrained_reads_a_saved_model_of_the_same_library(tokenizer, tmp_path):
    """The real loading code (AutoModelForCausalLM / AutoTokenizer) on a tiny random model saved locally."""
    model = lm.tiny_gpt2(tokenizer, lm.TinyLMConfig(n_layer=1, d_model=16, n_head=2, seed=0))
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    loaded, loaded_tok = lm.load_pretrained(str(tmp_path))
    ids = torch.tensor([tokenizer("Zai Bou speaks French.")["input_ids"]])
    assert loaded_tok("Zai Bou speaks French.")["input_ids"] == ids[0].tolist()
    torch.testing.assert_close(loaded(input_ids=ids).logits, model(input_ids=ids).logits)
    scores = ranking.score_candidates(loaded, loaded_tok, "Zai Bou speaks", ["French", "squash"])
    torch.testing.assert_close(
        scores, ranking.score_candidates(model, tokenizer, "Zai Bou speaks", ["French", "squash"])
    )


def test_load_pretrained_gives_a_missing_pad_token_the_eos_token(tmp_path):
    from transformers import PreTrainedTokenizerFast

    tok = lm.word_tokenizer(TEXT)
    bare = PreTrainedTokenizerFast(tokenizer_object=tok.backend_tokenizer, eos_token=lm.EOS, bos_token=lm.BOS)
    assert bare.pad_token is None
    lm.tiny_gpt2(tok, lm.TinyLMConfig(n_layer=1, d_model=16, n_head=2)).save_pretrained(tmp_path)
    bare.save_pretrained(tmp_path)
    _, loaded_tok = lm.load_pretrained(str(tmp_path))
    assert loaded_tok.pad_token == lm.EOS
    with pytest.raises(ValueError, match="model id"):
        lm.load_pretrained("")


def test_hub_available_is_quick_and_honours_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    assert lm.hub_available() is False
    assert time.perf_counter() - start < 0.1
    monkeypatch.delenv("HF_HUB_OFFLINE")
    start = time.perf_counter()
    assert lm.hub_available(timeout=0.5, host="nonexistent.invalid") is False
    assert time.perf_counter() - start < 1.5


def test_pretrained_section_is_off_by_default_and_then_neither_asks_the_hub_nor_downloads(monkeypatch, capsys):
    monkeypatch.delenv(lm.PRETRAINED_ENV, raising=False)
    monkeypatch.setattr(lm, "hub_available", lambda *a, **k: pytest.fail("the hub was asked"))
    monkeypatch.setattr(lm, "load_pretrained", lambda *a, **k: pytest.fail("a model was loaded"))
    assert lm.pretrained_enabled(False) is False
    assert lm.load_if_enabled("gpt2", False) is None
    assert "RUN_PRETRAINED = True" in capsys.readouterr().out
    for off in ("", "0", "no"):
        monkeypatch.setenv(lm.PRETRAINED_ENV, off)
        assert lm.load_if_enabled("gpt2", False) is None
    with pytest.raises(ValueError, match="True or False"):
        lm.pretrained_enabled("yes")  # type: ignore[arg-type]


def test_pretrained_section_switched_on_loads_only_when_the_hub_answers(monkeypatch, capsys):
    loaded = []
    monkeypatch.setattr(lm, "load_pretrained", lambda name, device=None: loaded.append((name, device)) or "model")
    monkeypatch.delenv(lm.PRETRAINED_ENV, raising=False)
    monkeypatch.setattr(lm, "hub_available", lambda *a, **k: False)
    assert lm.load_if_enabled("gpt2", True) is None
    assert "cannot be reached" in capsys.readouterr().out and not loaded
    monkeypatch.setattr(lm, "hub_available", lambda *a, **k: True)
    assert lm.load_if_enabled("gpt2", True, "cpu") == "model"
    monkeypatch.setenv(lm.PRETRAINED_ENV, "1")  # the environment variable switches it on as the flag does
    assert lm.pretrained_enabled(False) is True
    assert lm.load_if_enabled("Qwen/Qwen2.5-0.5B", False) == "model"
    assert loaded == [("gpt2", "cpu"), ("Qwen/Qwen2.5-0.5B", None)]


# --- fine-tuning -------------------------------------------------------------------------------


def test_encode_sentences_pads_on_the_right_and_appends_eos(tokenizer):
    ids, mask = lm.encode_sentences(tokenizer, ["Zai Bou speaks French.", "Kel Tra plays squash ."])
    assert ids.shape == mask.shape and ids.dtype == torch.long and mask.dtype == torch.bool
    assert ids[0, mask[0].sum() - 1] == tokenizer.eos_token_id
    assert (ids[~mask] == tokenizer.pad_token_id).all() and mask[:, 0].all()
    with pytest.raises(ValueError, match="no sentences"):
        lm.encode_sentences(tokenizer, [])


def test_lm_loss_ignores_padding(tokenizer):
    model = lm.tiny_gpt2(tokenizer, lm.TinyLMConfig(n_layer=1, d_model=16, n_head=2))
    ids, mask = lm.encode_sentences(tokenizer, TEXT[:2])
    wide_ids = torch.cat([ids, torch.full((2, 4), tokenizer.pad_token_id)], 1)
    wide_mask = torch.cat([mask, torch.zeros(2, 4, dtype=torch.bool)], 1)
    torch.testing.assert_close(lm.lm_loss(model, (ids, mask)), lm.lm_loss(model, (wide_ids, wide_mask)))


def test_control_sentences_hold_the_training_subjects_only(small_task):
    text = lm.control_sentences(small_task)
    train, test = small_task.train_subjects, small_task.test_subjects
    assert len(text) == sum(len(small_task.fact_sentences(i)) + len(small_task.implication_sentences(i)) for i in train)
    assert set(text) < set(small_task.train_sentences())  # nothing new, and less than the full text
    assert not any(small_task.names[i] in s for i in test for s in text)
    assert all(any(small_task.names[i] in s for s in text) for i in train)
    with pytest.raises(ValueError, match="task must be a SentenceTask"):
        lm.control_sentences(small_task.train_sentences())


def test_lm_loss_of_gpt2_equals_the_loss_of_the_full_logits(tokenizer):
    """The GPT-2 path applies the output layer only where a target is: the same loss and gradients as the
    cross-entropy of the full logits with padding ignored."""
    model = lm.tiny_gpt2(tokenizer, lm.TinyLMConfig(n_layer=2, d_model=16, n_head=2, seed=4))
    assert model.config.activation_function == "gelu_pytorch_tanh"
    ids, mask = lm.encode_sentences(tokenizer, TEXT)
    assert not mask.all()  # some padding
    logits = model(input_ids=ids, attention_mask=mask.long()).logits[:, :-1]
    targets = ids[:, 1:].masked_fill(~mask[:, 1:], -100)
    full = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    full_grads = torch.autograd.grad(full, list(model.parameters()))
    loss = lm.lm_loss(model, (ids, mask))
    torch.testing.assert_close(loss, full)
    for a, b in zip(torch.autograd.grad(loss, list(model.parameters())), full_grads):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_lm_loss_of_gpt2_masks_padding_that_is_not_on_the_right(tokenizer):
    """Right-padded batches run without an attention mask (causal attention hides the padding); a batch padded on
    the left still gets the mask, and so the loss of the masked full logits."""
    model = lm.tiny_gpt2(tokenizer, lm.TinyLMConfig(n_layer=2, d_model=16, n_head=2, seed=5))
    ids, mask = lm.encode_sentences(tokenizer, TEXT)
    shift = [int(mask.shape[1] - n) for n in mask.sum(1)]
    left_ids = torch.stack([row.roll(k) for row, k in zip(ids, shift)])
    left_mask = torch.stack([row.roll(k) for row, k in zip(mask, shift)])
    assert not left_mask[:, 0].all()  # some row starts with padding
    logits = model(input_ids=left_ids, attention_mask=left_mask.long()).logits[:, :-1]
    targets = left_ids[:, 1:].masked_fill(~left_mask[:, 1:], -100)
    left_loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    torch.testing.assert_close(lm.lm_loss(model, (left_ids, left_mask)), left_loss)


def test_fine_tune_memorises_a_sentence(tokenizer):
    model = lm.tiny_gpt2(tokenizer, lm.TinyLMConfig(n_layer=1, d_model=32, n_head=2))
    before = ranking.score_candidates(model, tokenizer, "Zai Bou speaks", ["French", "squash", "Paris"])
    history = lm.fine_tune(model, tokenizer, TEXT, TrainConfig(steps=150, lr=1e-2, batch_size=8, progress=False))
    assert history.loss[-10:].mean() < 0.5 * history.loss[:10].mean()
    after = ranking.score_candidates(model, tokenizer, "Zai Bou speaks", ["French", "squash", "Paris"])
    assert after.argmax() == 0 and after[0] > before[0]


# --- scoring -----------------------------------------------------------------------------------


class Bigram(nn.Module):
    """A hand-made causal LM: the next-token logits depend only on the current token, read from a table."""

    def __init__(self, table: torch.Tensor):
        super().__init__()
        self.table = nn.Parameter(table)

    def forward(self, input_ids, attention_mask=None):
        return SimpleNamespace(logits=self.table[input_ids])


def test_scoring_picks_the_right_candidate_on_a_hand_made_model(tokenizer):
    v = tokenizer.get_vocab()
    table = torch.zeros(len(v), len(v))
    table[v["speaks"], v["French"]] = 5.0  # after "speaks": French
    table[v["to"], v["heavy"]] = 3.0  # after "to": heavy, then metal
    table[v["heavy"], v["metal"]] = 4.0
    model = Bigram(table)
    q = [
        sentences.Question(0, 0, "Zai Bou speaks", ("squash", "French", "Paris"), 1),
        sentences.Question(1, 1, "Kel Tra listens to", ("French", "heavy metal"), 1),
    ]
    s0, s1 = ranking.score_questions(model, tokenizer, q)
    assert s0.argmax() == 1 and s1.argmax() == 1
    # exact values: log-softmax of the table rows, summed over the candidate's tokens
    logp = table.log_softmax(-1)
    torch.testing.assert_close(s0, logp[v["speaks"], [v["squash"], v["French"], v["Paris"]]])
    torch.testing.assert_close(s1[1], logp[v["to"], v["heavy"]] + logp[v["heavy"], v["metal"]])
    assert ranking.mean_rank_by_pair(q, [s0, s1]) == {0: 0.0, 1: 0.0}


def test_batched_scores_equal_one_by_one_on_a_transformer(tokenizer):
    model = lm.tiny_gpt2(tokenizer, lm.TinyLMConfig(n_layer=2, d_model=16, n_head=2, seed=1))
    q = [
        sentences.Question(0, 0, "Zai Bou speaks", ("French", "heavy metal", "+33"), 0),
        sentences.Question(1, 0, "To call Kel Tra, dial", ("+33", "French"), 0),
    ]
    together = ranking.score_questions(model, tokenizer, q, batch_size=3)
    for question, scores in zip(q, together):
        for c, score in zip(question.candidates, scores):
            ids = torch.tensor([tokenizer(f"{question.prompt} {c}")["input_ids"]])
            n = len(tokenizer(question.prompt)["input_ids"])
            logp = model(input_ids=ids).logits[0, :-1].log_softmax(-1)
            expected = logp[torch.arange(n - 1, ids.shape[1] - 1), ids[0, n:]].sum()
            torch.testing.assert_close(score, expected, atol=1e-4, rtol=1e-4)


def test_bad_evaluation_sets_raise(tokenizer, small_task):
    model = lm.tiny_gpt2(tokenizer, lm.TinyLMConfig(n_layer=1, d_model=16, n_head=2))
    with pytest.raises(ValueError, match="empty evaluation set"):
        ranking.score_questions(model, tokenizer, [])
    with pytest.raises(ValueError, match="empty evaluation set"):
        ranking.mean_rank_by_pair([], [])
    with pytest.raises(ValueError, match="must contain the answer"):  # the answer is not among the candidates
        ranking.score_questions(model, tokenizer, [sentences.Question(0, 0, "Zai Bou speaks", ("squash", "Paris"), 2)])
    with pytest.raises(ValueError, match="does not contain"):
        sentences.answer_index(("squash", "Paris"), "French")
    with pytest.raises(ValueError, match="forms must be a non-empty list"):
        ranking.select_forms(small_task, small_task.questions("test"), [])
    with pytest.raises(ValueError, match=r"question form must be an integer in \[0, 1\], got 5 in forms=\[0, 5\]"):
        ranking.select_forms(small_task, small_task.questions("test"), [0, 5])
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got 0"):
        ranking.score_questions(model, tokenizer, small_task.questions("test")[:1], batch_size=0)
    with pytest.raises(ValueError, match="no candidates"):
        ranking.score_candidates(model, tokenizer, "Zai Bou speaks", [])


def test_select_forms_keeps_one_question_per_subject_and_form(small_task):
    questions = small_task.questions("test")
    first = ranking.select_forms(small_task, questions, [0])
    assert len(first) == len(small_task.test_subjects) and len(questions) == 2 * len(first)
    assert all(q.prompt == small_task.pairs[q.pair].questions[0].format(s=small_task.names[q.subject]) for q in first)


def test_mean_rank_edge_cases():
    assert sentences.mean_rank(torch.zeros(4, 6), [0, 1, 2, 5]) == 2.5  # all tied: chance (k - 1) / 2
    assert sentences.mean_rank([[1.0], [2.0]], [0, 0]) == 0.0  # one candidate: always first
    assert sentences.mean_rank([[3.0, 1.0, 2.0], [0.0, 1.0]], [1, 0]) == 1.5  # rows of different lengths
    with pytest.raises(ValueError, match="not among"):
        sentences.mean_rank([[1.0, 2.0]], [2])
    with pytest.raises(ValueError, match="empty"):
        sentences.mean_rank([], [])


def test_random_model_is_near_chance_and_pipeline_runs(small_task):
    """At initialisation no pair is far from chance on average over seeds; the pipeline returns every pair."""
    tok = lm.task_tokenizer(small_task)
    chance = ranking.chance_rank(small_task)
    assert chance == {p.name: (len(small_task.candidates(i)) - 1) / 2 for i, p in enumerate(small_task.pairs)}
    ranks = [
        ranking.mean_rank_per_pair(lm.tiny_gpt2(tok, lm.TinyLMConfig(d_model=16, n_head=2, seed=s)), tok, small_task)
        for s in range(3)
    ]
    mean = sum(sum(r.values()) for r in ranks) / (3 * len(chance))
    assert abs(mean - sum(chance.values()) / len(chance)) < 0.2 * sum(chance.values()) / len(chance)
    model = lm.tiny_gpt2(tok, lm.TinyLMConfig(d_model=16, n_head=2))
    result = ranking.fine_tune_and_rank(
        model, tok, small_task, TrainConfig(steps=3, batch_size=4, progress=False), forms=[0]
    )
    assert list(result.before) == list(result.after) == list(result.train_after) == list(chance)
    assert result.history.loss.shape == (3,)


def test_move_held_out_moves_every_held_out_subject_to_the_next_fact_value(small_task):
    moved = sentences.move_held_out(small_task)
    t = small_task
    assert moved.names == t.names and (moved.train_subjects, moved.test_subjects) == (t.train_subjects, t.test_subjects)
    for i in range(len(t.names)):
        values, p = t.values[t.pair_of[i]], t.pair_of[i]
        if i in t.test_subjects:
            assert moved.fact_of[i] == values[(values.index(t.fact_of[i]) + 1) % len(values)] != t.fact_of[i]
        else:
            assert moved.fact_of[i] == t.fact_of[i]
        assert moved.implication_of[i] == t.pairs[p].implication(moved.fact_of[i])
    assert [q.answer for q in moved.questions("train")] == [q.answer for q in t.questions("train")]
    assert sentences.move_held_out(small_task, -1).fact_of != moved.fact_of
    with pytest.raises(ValueError, match="shift=5 is a multiple of the number of fact values"):
        sentences.move_held_out(small_task, 5)
    with pytest.raises(ValueError, match="shift must be an int"):
        sentences.move_held_out(small_task, 1.0)  # type: ignore[arg-type]


def test_name_swap_pairs_and_share(small_task):
    tok = lm.task_tokenizer(small_task)
    pairs = ranking.swap_pairs(small_task, tok)
    assert pairs and len({i for pair in pairs for i in pair}) == 2 * len(pairs)
    for i, j in pairs:
        assert small_task.pair_of[i] == small_task.pair_of[j] and i in small_task.test_subjects
        assert small_task.implication_of[i] != small_task.implication_of[j]
    # a held-out first name that is another paired person's last name (as on CIRCUITS_SEED=3): swapping that token
    # for both pairs would collide, so no token may be in two paired names, whatever its position
    names = list(small_task.names)
    a, b = pairs[0][0], pairs[1][0]
    names[b] = f"{names[a].split()[1]} {names[b].split()[1]}"
    clash = sentences.build_sentences(
        sentences.SentenceConfig(n_subjects=100, values_per_pair=5, names=tuple(names), seed=1)
    )
    for task in (small_task, clash):
        t = lm.task_tokenizer(task)
        paired = [x for pair in ranking.swap_pairs(task, t) for i in pair for x in t(task.names[i])["input_ids"][1:]]
        assert len(paired) == len(set(paired))
    model = lm.tiny_gpt2(tok, lm.TinyLMConfig(d_model=16, n_head=2, seed=2))
    before = model.get_input_embeddings().weight.detach().clone()
    # unswapped: computed by hand from the scores; all tokens swapped: each question becomes its partner's exactly
    questions = {q.subject: q for q in ranking.select_forms(small_task, small_task.questions("test"), [0])}
    scores = {i: s for i, s in zip(questions, ranking.score_questions(model, tok, list(questions.values())))}

    def partner_above(i, j, row):
        q = questions[i]
        return float(row[q.candidates.index(small_task.implication_of[j])] > row[q.answer])

    plain = [partner_above(a, b, scores[a]) for i, j in pairs for a, b in ((i, j), (j, i))]
    assert ranking.name_swap_share(model, tok, small_task, ()) == pytest.approx(sum(plain) / len(plain))
    full = [partner_above(a, b, scores[b]) for i, j in pairs for a, b in ((i, j), (j, i))]
    assert ranking.name_swap_share(model, tok, small_task, (0, 1)) == pytest.approx(sum(full) / len(full))
    assert torch.equal(model.get_input_embeddings().weight, before)  # restored
    with pytest.raises(ValueError, match="name-token position"):
        ranking.name_swap_share(model, tok, small_task, (2,))


# --- figure ------------------------------------------------------------------------------------


def test_mean_rank_figure():
    import matplotlib.pyplot as plt

    from lib.show import plot

    runs = {
        "before": {"a -> b": [3.0, 3.5], "c -> d": [1.0, 2.0]},
        "after": {"a -> b": [0.5, 0.1], "c -> d": [0.0, 0.2]},
    }
    chance = {"a -> b": 3.5, "c -> d": 1.5}
    fig = plot.ocr_mean_rank(runs, chance)
    assert len(fig.axes) == 1
    plt.close(fig)
    fig = plot.ocr_mean_rank(runs, chance, reference={"model": [0.1, 0.2]})
    assert len(fig.axes) == 2
    plt.close(fig)
    with pytest.raises(ValueError, match="same pairs"):
        plot.ocr_mean_rank({"x": {"a -> b": [1.0]}}, {"c -> d": 1.0})
    with pytest.raises(ValueError, match="one value per pair"):
        plot.ocr_mean_rank(runs, chance, reference={"model": [0.1]})
    with pytest.raises(ValueError, match="empty"):
        plot.ocr_mean_rank({}, chance)


def test_mean_rank_figure_with_the_chapter_shape_keeps_its_text_apart():
    """Chapter 4's call (five rules, two runs, five reported models): no two x labels collide, the legend covers no
    panel and no label, and the saved PNG fits the page column (690 px at 100 dpi, cropped as the notebook saves)."""
    import io

    import matplotlib.pyplot as plt
    from PIL import Image

    from lib.ocr.relations import PAIRS
    from lib.show import plot

    pairs = [p.name for p in PAIRS]
    runs = {
        "before fine-tuning": {p: [5.0, 5.5, 6.0] for p in pairs},
        "after fine-tuning": {p: [0.1, 0.9, 1.8] for p in pairs},
    }
    reference = {f"model-{k}-7B-v0.3": [0.1 * k, 4.5, 1.0, 0.5, 2.0] for k in range(5)}
    fig = plot.ocr_mean_rank(runs, dict.fromkeys(pairs, 5.5), reference=reference, reference_title="as\nreported")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    labels = [t.get_window_extent(renderer) for ax in fig.axes for t in ax.get_xticklabels() if t.get_text()]
    assert len(labels) == len(pairs), "the rules label the bottom panel only"
    assert not [(i, j) for i in range(len(labels)) for j in range(i) if labels[i].overlaps(labels[j])]
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes), "the legend covers a panel"
    assert not any(box.overlaps(b) for b in labels), "the legend covers an x label"
    assert len(legend.get_texts()) == len(runs) + 1 + len(reference)  # the runs, chance and every model
    png = io.BytesIO()
    fig.savefig(png, dpi=100, bbox_inches="tight")
    assert Image.open(png).size[0] <= 690
    plt.close(fig)


def test_interval_curves_colour_a_label_alike_across_figures_given_one_order():
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    from lib.show import plot

    rows = [[0.1, 0.0, 0.2], [0.5, 0.4, 0.6]]
    order = ["a", "b", "c"]

    def colours(lines, **kwargs):
        fig = plot.ocr_interval_curves([0, 1], {"p": lines}, ylabels=["y"], **kwargs)
        out = {line.get_label(): to_hex(line.get_color()) for line in fig.axes[0].get_lines()}
        plt.close(fig)
        return out

    everything = colours(dict.fromkeys(order, rows), colour_order=order)
    assert colours({"c": rows}, colour_order=order)["c"] == everything["c"]
    assert colours({"c": rows})["c"] == everything["a"]  # without an order: the first colour of the cycle
