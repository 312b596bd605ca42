"""Chapter 8's checkpoint-wise ablation of the smeared model's L0H6 on more held-out windows than the chapter uses.

    python bench/natural_ablation.py [WINDOWS]   (default 128; the chapter uses the first 64)

Prints, at every shipped checkpoint: the held-out loss of the intact model, with the head removed and with only its
attention to prefix-matching keys removed (:mod:`lib.induction.natural.edits`); the share of the ICL score each
removes; the ICL score at eligible and ineligible positions (:func:`lib.induction.natural.probes.icl_where`); and the
control's held-out loss on the same windows. About 15 s for 128 windows on one CPU core.
"""

import sys

import torch

from lib.induction import ablation
from lib.induction.natural import corpus, edits, probes, runs

HEAD = (0, 6)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 128
tokens = corpus.tiled_windows(corpus.held_out_ids())[:n]
eligible = probes.eligible_positions(tokens)
smeared, control = runs.load_run("one layer, smeared"), runs.load_run("one layer")
control_loss = probes.window_loss(control.model_at(max(control.checkpoints)), tokens).mean()
print(f"{n} windows; control's held-out loss {control_loss:.3f}")
print(" step   loss: intact whole  edit   removed: whole  edit   ICL elig.: intact whole  inelig.: intact whole")
for step in sorted(smeared.checkpoints):
    model = smeared.model_at(step)
    loss = torch.cat(
        [
            ablation.ablated_losses(model, tokens, [[], [HEAD]], max_rows=8),
            edits.without_prefix_matching_loss(model, tokens, HEAD)[None],
        ]
    )
    held, icl = loss.mean((-1, -2)), probes.icl_per_window(loss).mean(-1)
    share = 1 - icl[1:] / icl[0]
    e, i = probes.icl_where(loss, eligible), probes.icl_where(loss, ~eligible)
    print(
        f"{step:5d}   {held[0]:.3f} {held[1]:.3f} {held[2]:.3f}     {share[0]:5.0%} {share[1]:5.0%}"
        f"        {e[0]:+.3f} {e[1]:+.3f}           {i[0]:+.3f} {i[1]:+.3f}"
    )
