"""Chapter 8's checkpoint-wise ablation of the smeared model's L0H6 on more held-out windows than the chapter uses.

    python bench/natural_ablation.py [WINDOWS]   (default 128; the chapter uses the first 64)

Prints, at every shipped checkpoint: the held-out loss of the intact model, with the head removed and with only its
attention to prefix-matching keys removed (:mod:`lib.induction.natural.edits`); the share of the ICL score each
removes; the ICL score at eligible and ineligible positions (:func:`lib.induction.natural.probes.icl_where`); and the
control's held-out loss on the same windows. Then, as the chapter does: a 90% paired bootstrap interval of every
share, the shares within eligible and within ineligible positions, and the paired change of each share (and of the
ICL score removed, in nats) from one checkpoint to the next. About 15 s for 128 windows on one CPU core.
"""

import sys

import torch

from lib.induction.natural import corpus, edits, probes, runs

HEAD = (0, 6)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 128
tokens = corpus.tiled_windows(corpus.held_out_ids())[:n]
eligible = probes.eligible_positions(tokens)
smeared, control = runs.load_run("one layer, smeared"), runs.load_run("one layer")
control_loss = probes.window_loss(control.model_at(max(control.checkpoints)), tokens).mean()
print(f"{n} windows; control's held-out loss {control_loss:.3f}")
print(" step   loss: intact whole  edit   removed: whole  edit   ICL elig.: intact whole  inelig.: intact whole")
PER_WINDOW = {}  # step -> (3, windows) per-window ICL: intact, whole head removed, pattern edit
WITHIN = {}  # step -> (eligible (2,), ineligible (2,)) share removed: whole, edit
for step in sorted(smeared.checkpoints):
    model = smeared.model_at(step)
    loss = torch.cat(
        [
            probes.ablated_window_loss(model, tokens, [[], [HEAD]]),
            edits.without_prefix_matching_loss(model, tokens, HEAD)[None],
        ]
    )
    held, icl = loss.mean((-1, -2)), probes.icl_per_window(loss).mean(-1)
    share = 1 - icl[1:] / icl[0]
    e, i = probes.icl_where(loss, eligible), probes.icl_where(loss, ~eligible)
    PER_WINDOW[step] = probes.icl_per_window(loss)
    WITHIN[step] = (1 - e[1:] / e[0], 1 - i[1:] / i[0])
    print(
        f"{step:5d}   {held[0]:.3f} {held[1]:.3f} {held[2]:.3f}     {share[0]:5.0%} {share[1]:5.0%}"
        f"        {e[0]:+.3f} {e[1]:+.3f}           {i[0]:+.3f} {i[1]:+.3f}"
    )


def share(w: torch.Tensor) -> torch.Tensor:
    return 1 - w[1].mean(-1) / w[0].mean(-1)


def nats(w: torch.Tensor) -> torch.Tensor:
    return w[1].mean(-1) - w[0].mean(-1)


print("\n step   share, 90% interval: whole           edit     within eligible: whole edit  ineligible: whole edit")
for step, w in PER_WINDOW.items():
    ends = [probes.bootstrap_interval(share, w[[0, k]]) for k in (1, 2)]
    (ew, ee), (iw, ie) = WITHIN[step]
    print(
        f"{step:5d}   "
        + "   ".join(f"{share(w[[0, k]]):4.0%} [{lo:+.2f}, {hi:+.2f}]" for k, (lo, hi) in zip((1, 2), ends))
        + f"      {ew:4.0%} {ee:4.0%}         {iw:4.0%} {ie:4.0%}"
    )
print("\npaired change from one checkpoint to the next, 90% interval")
steps = sorted(PER_WINDOW)
for a, b in zip(steps, steps[1:]):
    for name, statistic in (("share", share), ("nats", nats)):
        cells = []
        for k, label in ((1, "whole"), (2, "edit")):
            w = torch.cat([PER_WINDOW[a][[0, k]], PER_WINDOW[b][[0, k]]])
            lo, hi = probes.bootstrap_interval(lambda x, f=statistic: f(x[2:]) - f(x[:2]), w)
            cells.append(f"{label} {(statistic(w[2:]) - statistic(w[:2])).item():+.3f} [{lo:+.2f}, {hi:+.2f}]")
        print(f"  {a:5d} -> {b:5d}  {name:<6}" + "  ".join(cells))
