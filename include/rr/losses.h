/* How each machine of a run ended, from its ledger: the losses no notice covered, which set
 * how often `--every auto` checkpoints (rr/interval.h) and what `report` counts as lost. */
#ifndef RR_LOSSES_H
#define RR_LOSSES_H

#include <stddef.h>
#include <stdint.h>

#include "rr/ledger.h"
#include "rr/report.h"

enum rr_machine_end {
	RR_END_UNKNOWN,        /* nothing says it ended: still running, or the run's last */
	RR_END_EXIT,           /* its agent recorded an orderly exit */
	RR_END_NOTICE_MET,     /* a preemption notice whose checkpoint was durable in time */
	RR_END_NOTICE_MISSED,  /* a preemption notice whose checkpoint was not: uncovered */
	RR_END_VANISHED,       /* a later machine started and this one said nothing: uncovered */
};

struct rr_machine_life {
	size_t attempt;        /* index into the report's attempts */
	int64_t from_ms, to_ms;
	enum rr_machine_end end;
	/* Uncovered ends: the training since the machine's newest durable checkpoint (or its
	 * start), up to its last event (for a vanished machine a lower bound: it may have
	 * trained on past its last event); 0 otherwise. */
	int64_t lost_ms;
};

struct rr_loss_history {
	struct rr_machine_life *lives; /* one per machine considered, in the report's order */
	size_t n;
	unsigned losses;       /* uncovered: vanished + missed */
	unsigned vanished, missed;
	int64_t exposure_ms;   /* the union of the machines' spans (a multi-node job's nodes
				* overlap: the run's own time, not the sum) */
	int64_t end_ms;        /* the newest event considered */
	int64_t lost_ms;       /* sum over the uncovered ends */
	int64_t cost_ms;       /* the checkpoint cost the newest interval event recorded, 0: none */
};

/* Classifies the machines of report r (built from the same n events ev). A machine whose
 * last event is more than concurrent_ms before a later machine's start, and that recorded
 * neither an exit nor a preemption notice, vanished; later_start_ms (> 0) stands for one
 * more machine starting then (the agent asking about its own run's past); concurrent_ms > 0
 * treats machines of a multi-node job that started together as still running. Returns 0 or
 * RR_ENOMEM; free with rr_losses_free. */
int rr_losses_build(const struct rr_report *r, const struct rr_ledger_event *ev, size_t n,
		    int64_t later_start_ms, int64_t concurrent_ms, struct rr_loss_history *out);
void rr_losses_free(struct rr_loss_history *h);

/* "unknown", "exit", "notice met", "notice missed", "vanished" */
const char *rr_machine_end_name(enum rr_machine_end e);

#endif
