"""HF transformers: a `TrainerCallback` that saves on the agent's signal.

    import resume_run
    from resume_run.hf import ResumeRunCallback

    args = TrainingArguments(output_dir=resume_run.checkpoint_dir(), ...)
    trainer = Trainer(model, args, ..., callbacks=[ResumeRunCallback()])
    trainer.train(resume_from_checkpoint=resume_run.restore_dir())

On the checkpoint signal the Trainer saves at the end of the current step, its own way
(`checkpoint-N/`, `trainer_state.json` written last, which is the commit the agent waits
for); when the notice says the machine is going it stops training after that save.
`resume_from_checkpoint` is None on a fresh start; after a restore it names the restored
`checkpoint-N`, and the Trainer's own resume puts back the model, optimizer, scheduler, RNG
states and data position. Under torch.distributed every rank takes the same decision (an
all-reduce of the two flags per step), so all ranks save the same step.
"""

import os
import sys

from transformers import TrainerCallback

from . import Checkpointer, agree, checkpoint_dir

__all__ = ["ResumeRunCallback"]


class ResumeRunCallback(TrainerCallback):
    """Makes the Trainer save at the end of the step in which the agent's signal came, and
    stop after that save when the notice says the machine is going.

    Create it before `trainer.train()` (it installs the signal handler, which only sets a
    flag, from the main thread). `checkpointer` is a resume_run.Checkpointer to share with
    other code; by default one is made for RESUME_RUN_CHECKPOINT_DIR.
    """

    def __init__(self, checkpointer=None):
        self.checkpointer = checkpointer if checkpointer is not None else Checkpointer()
        self.leaving = False

    def on_train_begin(self, args, state, control, **kwargs):
        # A save elsewhere is never seen by the agent: say so once, at the start.
        if "RESUME_RUN_CHECKPOINT_DIR" in os.environ and not _same_dir(args.output_dir,
                                                                        checkpoint_dir()):
            print("resume_run.hf: output_dir %r is not RESUME_RUN_CHECKPOINT_DIR %r: the agent "
                  "will not see the Trainer's checkpoints" % (args.output_dir, checkpoint_dir()),
                  file=sys.stderr, flush=True)

    def on_step_end(self, args, state, control, **kwargs):
        save, leave = agree(self.checkpointer)
        if save:
            control.should_save = True
            # The Trainer evaluates before it saves, and under save_strategy="best" sets
            # should_save from the metric: the notice's save would be dropped. That step's
            # evaluation is skipped then (its RNG draw too: the run goes on as it would have,
            # less that draw), and whenever the machine is going: an evaluation there spent
            # the notice's window (30 s on GCP and Azure) before the save. Otherwise it stays.
            if _strategy(args.save_strategy) == "best" or leave:
                control.should_evaluate = False
            if leave:
                control.should_training_stop = True
                self.leaving = True
                # With save_total_limit=1 and a best checkpoint, the end of train() deletes
                # every checkpoint but the best: the notice's with them, before the agent
                # could store it.
                if getattr(args, "save_total_limit", None) is not None:
                    object.__setattr__(args, "save_total_limit", None)
        return control

    def on_epoch_end(self, args, state, control, **kwargs):
        # Leaving ends the epoch: its save and evaluation (save_strategy="epoch") would
        # evaluate and write checkpoint-N again, in place, after its commit.
        if self.leaving:
            control.should_save = False
            control.should_evaluate = False
        return control


def _strategy(value):
    """A TrainingArguments strategy as its string ("steps", "best", ...), enum or not."""
    return str(getattr(value, "value", value))


def _same_dir(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)
