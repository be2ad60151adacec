/* `resume-run [OPTIONS] -- COMMAND`: restore, launch, watch, persist, exit
 * (docs/how-it-works.md, "How it works"). */
#ifndef RR_RUN_H
#define RR_RUN_H

#include "rr/run_config.h"

/* Runs the trainer under supervision until it is done. Returns the process exit status:
 * the trainer's own, 128+N for a signal, 127/126 when it cannot be executed, 125 for an
 * agent error (already logged in one line). */
int rr_run(const struct rr_config *cfg);

#endif
