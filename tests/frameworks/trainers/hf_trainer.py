"""transformers' Trainer with resume_run.hf.ResumeRunCallback: a tiny GPT-2 made from a config
(no download), with dropout (so the RNG states matter) and a shuffled dataset (so the data
position matters). The lines a user adds are marked "resume-run"."""
import common  # noqa: I100 (sets seeds and threads first)

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

import resume_run
from resume_run.hf import ResumeRunCallback


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n=48, length=8, vocab=32):
        g = torch.Generator().manual_seed(7)
        self.data = torch.randint(0, vocab, (n, length), generator=g)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"input_ids": self.data[i], "labels": self.data[i]}


class Pace(TrainerCallback):
    def __init__(self, a):
        self.a = a

    def on_step_end(self, args, state, control, **kwargs):
        common.pace(self.a, state.global_step)

    def on_save(self, args, state, control, **kwargs):
        common.log("saved at step %d" % state.global_step)


def best_arg(ap):
    ap.add_argument("--save-best", action="store_true",
                    help="evaluate every step, save_strategy best (a metric that never improves)")
    ap.add_argument("--keep-one", action="store_true",
                    help="save_total_limit=1: the end of train() keeps the best checkpoint only")


def main():
    a = common.parse(best_arg)
    callback = ResumeRunCallback()  # resume-run: the handler, before training starts
    config = GPT2Config(vocab_size=32, n_positions=8, n_embd=16, n_layer=2, n_head=2,
                        resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1)
    model = GPT2LMHeadModel(config)
    args = TrainingArguments(
        output_dir=resume_run.checkpoint_dir(),  # resume-run: where the agent looks
        max_steps=a.steps, per_device_train_batch_size=4, learning_rate=1e-2,
        warmup_steps=2, lr_scheduler_type="linear", weight_decay=0.01,
        save_strategy="best" if a.save_best else "steps" if a.save_every else "no",
        save_steps=a.save_every or 500,
        # --save-best: eval loss called better when greater, so after the first evaluation
        # no step is "best": only the notice's save is
        eval_strategy="steps" if a.save_best else "no", eval_steps=1,
        metric_for_best_model="loss" if a.save_best else None, greater_is_better=True,
        save_total_limit=1 if a.keep_one else None,
        logging_strategy="no", report_to=[], use_cpu=common.DEVICE == "cpu", seed=1, data_seed=2,
        dataloader_num_workers=0, disable_tqdm=True)
    trainer = Trainer(model=model, args=args, train_dataset=Tokens(),
                      eval_dataset=Tokens(n=8) if a.save_best else None,
                      callbacks=[callback, Pace(a)])
    if a.crash_at_save:
        # The Trainer's save: model.safetensors, then optimizer.pt (torch.save), ...,
        # trainer_state.json last. Crash half-way through the optimizer of the Nth save.
        common.on_nth_call(trainer, "_save_checkpoint", a.crash_at_save,
                           lambda: common.crash_in(torch, "save", 1, common.torch_save_half))
    restored = resume_run.restore_dir()
    common.log("resumed at step %d" % resume_run.step_of(restored) if restored else "fresh start")
    trainer.train(resume_from_checkpoint=restored)  # resume-run: HF's own resume
    if trainer.state.global_step < a.steps:
        common.log("left at step %d for the notice" % trainer.state.global_step)
        return
    common.log("done at step %d" % trainer.state.global_step)
    common.write_weights(model, a.out)


if __name__ == "__main__":
    main()
