/* What commits a checkpoint (docs/trainer-contract.md, "The trainer contract", "Committing a
 * checkpoint"): --commit auto|rename|marker:NAME|pointer:NAME. Name logic, which the watcher
 * applies, and the pointer file restore writes back. */
#ifndef RR_COMMIT_RULE_H
#define RR_COMMIT_RULE_H

enum rr_commit_kind { RR_COMMIT_AUTO, RR_COMMIT_RENAME, RR_COMMIT_MARKER, RR_COMMIT_POINTER };

struct rr_commit_rule {
	enum rr_commit_kind kind;
	char name[256]; /* the marker or pointer file name (marker:NAME, pointer:NAME) */
};

/* The names auto recognises: HF Trainer's marker (transformers Trainer._save_checkpoint
 * writes trainer_state.json last), torch.distributed.checkpoint's (.metadata, written
 * after every .distcp file) and DeepSpeed's pointer (DeepSpeedEngine.save_checkpoint
 * writes `latest` after the tag directory). */
#define RR_COMMIT_HF_MARKER "trainer_state.json"
#define RR_COMMIT_DCP_MARKER ".metadata"
/* Lightning's DeepSpeed strategy saves epoch=E-step=S.ckpt/ as a DeepSpeed checkpoint
 * directory (engine.save_checkpoint(path, tag="checkpoint")): the tag's directory inside it,
 * then `latest` naming the tag, in place: inside a *.ckpt directory that file is its marker
 * (beside the checkpoints, DeepSpeed's own layout, it is the pointer). */
#define RR_COMMIT_DS_DIR_MARKER "latest"
#define RR_COMMIT_DS_POINTER "latest"

/* Parses "auto", "rename", "marker:NAME" or "pointer:NAME" (NAME a plain file name: no
 * '/', not "." or "..", 1..255 bytes). Returns 0 or RR_EINVAL. */
int rr_commit_rule_parse(const char *text, struct rr_commit_rule *out);

/* 1 when name is never a checkpoint: a dot-name, or a temporary file by its name (tmp*
 * as Python's tempfile and fsspec make them, *.tmp, *.temp, *.part, *.partial, *~). */
int rr_commit_is_temp_name(const char *name);

/* 1 when a file's name is a checkpoint's by itself: a step number in it, or a checkpoint
 * extension (.ckpt .pt .pth .bin .safetensors .tar); never a temporary name. */
int rr_commit_file_looks_like_checkpoint(const char *name);

/* 1 when a regular file or directory renamed into the checkpoint dir is a commit. */
int rr_commit_takes_renames(const struct rr_commit_rule *r);

/* 1 when file name, inside the checkpoint directory dir (its name), is the rule's marker:
 * auto's trainer_state.json and .metadata anywhere, and `latest` in a directory named
 * *.ckpt (Lightning's DeepSpeed strategy; in checkpoint-N, HF Trainer with DeepSpeed, it
 * comes before trainer_state.json, which stays the marker there). */
int rr_commit_is_marker(const struct rr_commit_rule *r, const char *dir, const char *name);

/* 1 when the file called name in the checkpoint dir names the committed directory. */
int rr_commit_is_pointer(const struct rr_commit_rule *r, const char *name);

/* 1 when the rule has markers at all (so new directories need watching inside). */
int rr_commit_has_markers(const struct rr_commit_rule *r);

/* For a directory found by a scan with no marker and not named by a pointer: 1 when a
 * rename could have committed it, i.e. the rule takes renames and, under auto, the
 * directory is not one a framework writes in place (checkpoint-N of HF, global_stepN of
 * DeepSpeed), since those are committed by their marker or pointer only. */
int rr_commit_scan_takes_dir(const struct rr_commit_rule *r, const char *name);

/* For a regular file found by a scan (its rename, if any, went unseen): 1 when it is taken
 * as a one-file checkpoint. rename: any file but the pointer's. auto: only files that look
 * like checkpoints (a step number in the name, or .ckpt, .pt, .pth, .bin, .safetensors,
 * .tar), since frameworks leave other files beside their checkpoints written in place
 * (DeepSpeed's zero_to_fp32.py, `latest`). */
int rr_commit_scan_takes_file(const struct rr_commit_rule *r, const char *name);

/* 1 when checkpoint name in dir is a directory the trainer wrote in place and committed by a
 * marker or pointer (marker:NAME, pointer:NAME; under auto one holding trainer_state.json or
 * .metadata, or named checkpoint-N or global_stepN): files may still be closed in it after
 * the commit. 0 for what a rename committed (complete when it appeared) and for files. */
int rr_commit_in_place(const struct rr_commit_rule *r, const char *dir, const char *name);

/* The pointer file restore writes beside checkpoint name, or NULL: pointer:NAME gives
 * NAME; auto gives "latest" for DeepSpeed's global_stepN names. */
const char *rr_commit_pointer_for(const struct rr_commit_rule *r, const char *name);

/* Writes the pointer file of the rule (rr_commit_pointer_for) into dir, naming the restored
 * checkpoint name, durably (temp file, fsync, rename). Does nothing when the rule has no
 * pointer for that name. Returns 0 or an rr_error; *pointer_out (may be NULL) is the file
 * name written or NULL. */
int rr_commit_write_pointer(const struct rr_commit_rule *r, const char *dir, const char *name,
			    const char **pointer_out);

#endif
