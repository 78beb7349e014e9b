/* loom: the trace validator -- whole-schedule legality after replay
 * (DESIGN.md "The validator"; MetaSchedule's postprocessor checks, TACO's
 * preconditions, see shared/research/sparse.md "What TACO does not check").
 *
 * Replay already checks each primitive's own preconditions; the validator
 * then checks the schedule as a whole and returns the first violated rule,
 * with the stage and loop where it is.
 *
 * The rules are one table, one row per rule (loom_validate_rule: name,
 * scope, check function, one-line doc; traces/validate.c), in checking
 * order.  `loom validate --rules` prints it; docs/schedule-language.md "The
 * validator" explains each rule at length (a test checks it names every
 * row).  For each block, in statement order, the rows run in table order:
 * LOOM_RULE_BLOCK rows on every block, LOOM_RULE_LOOPS rows on a block
 * whose loops are emitted (not inlined), LOOM_RULE_PLACED rows on a block
 * placed at a loop (ComputeAt, ReverseComputeAt, RollingUpdate).  A check
 * may find several related rules in one pass (the parallel rules, loop by
 * loop): those rows name the same check, which runs once, at its first
 * row.  Adding a rule is one row: a built-in one in validate.c's table, or
 * at run time with loom_validate_register_rule (a user module's or a
 * test's; it runs after the built-in rows).
 *
 * Rule names are stable and never reused: messages start with them, and
 * tests and the search count invalid candidates by them.
 */
#ifndef LOOM_VALIDATE_H
#define LOOM_VALIDATE_H

#include <stdio.h>

#include "../dsl/ir/limits.h" /* loom_limits */
#include "../dsl/schedule/schedule.h"

typedef struct loom_violation {
    char rule[32];   /* one of the rule names above */
    int stage;       /* the block's stage, -1 if none */
    int loop;        /* position of the loop in the stage, -1 if none */
    char msg[512];   /* "rule: what is wrong where, and what to do" */
} loom_violation;

/* Check sch against the limits of the target it is for: lim is the target
 * handle's (loom_target.limits, runtime/target/target.h; this CPU's:
 * loom_target_cpu_limits, runtime/machine/machine.h) -- there is no
 * default, so that a trace tuned for one target is never checked against
 * the host by accident.  Returns LOOM_OK when every rule holds, else
 * LOOM_ERR_SEMANTIC with *v (and err, when not NULL: same message) filled
 * for the first violation.  lim NULL: LOOM_ERR_INVALID, v->rule "" and the
 * message "loom_validate: no limits given ...". */
loom_status loom_validate(const loom_schedule *sch, const loom_limits *lim, loom_violation *v, loom_error *err);

/* The rules of one stage s only (its fusion group, its loops, its
 * placement), as loom_validate checks them for s: LOOM_OK or
 * LOOM_ERR_SEMANTIC with *v filled (lim NULL: LOOM_ERR_INVALID, as
 * loom_validate).  For a module that asks whether a
 * change of one block is legal while other blocks are not scheduled yet
 * (modules/reverse_location.c). */
loom_status loom_validate_stage(const loom_schedule *sch, int s, const loom_limits *lim, loom_violation *v,
                                loom_error *err);

/* The rule names, in checking order (the table's rows, then the
 * registered ones); *n receives the count.  The array lives as long as the
 * process; a later registration appends to it (read *n again). */
const char *const *loom_validator_rules(int *n);

/* ---- the rule table ------------------------------------------------------ */

/* Which blocks a rule is checked on (see the top of this file). */
typedef enum loom_rule_scope {
    LOOM_RULE_BLOCK = 0, /* every block, inlined ones too */
    LOOM_RULE_LOOPS,     /* every block whose loops are emitted (not inlined) */
    LOOM_RULE_PLACED,    /* every block placed at a loop (compute_at == LOOM_AT_LOOP) */
} loom_rule_scope;

/* What a check is called with: one block of the schedule being validated. */
typedef struct loom_rule_ctx {
    const loom_schedule *sch;
    const loom_stage *S;  /* &sch->stages[s] */
    int s;                /* the block's stage */
    const char *block;    /* its name (the statement's left-hand side) */
    const loom_limits *lim; /* the target's, never NULL */
    loom_violation *v;    /* where loom_rule_violate writes (NULL: nowhere) */
    loom_error *err;      /* likewise (may be NULL) */
    const struct loom__sp_access *acc; /* the validator's own: the block's sparse accesses */
    int nacc;
} loom_rule_ctx;

/* A check: LOOM_OK when its rules hold on block c->s, else the status of
 * loom_rule_violate for the first violation it finds. */
typedef loom_status (*loom_rule_check_fn)(const loom_rule_ctx *c);

/* One rule. */
typedef struct loom_validate_rule {
    const char *name;          /* 1..31 characters of [a-z0-9-]; stable, never reused */
    loom_rule_scope scope;
    loom_rule_check_fn check;  /* reports this rule (and maybe the rows next to it naming it too) */
    const char *doc;           /* one line: when the rule is violated */
} loom_validate_rule;

/* Number of rules (built-in and registered) and rule k in checking order
 * (NULL when k is out of range).  The row lives as long as the process. */
int loom_validate_rule_count(void);
const loom_validate_rule *loom_validate_rule_at(int k);

/* At most this many rules registered at run time. */
#define LOOM_VALIDATE_MAX_REGISTERED 8
/* The most rules there can be (built-in and registered). */
#define LOOM_VALIDATE_MAX_RULES 40

/* Add rule *R at run time (copied; its strings and check must live as long
 * as the process): loom_validate, loom_validate_stage, loom_validator_rules
 * and `loom validate --rules` then include it, after the built-in rows.
 * Thread safe for readers; register before validating from other threads.
 * Errors (LOOM_ERR_INVALID, the message names the problem): R NULL, a name
 * not of 1..31 characters of [a-z0-9-], a name that is a rule's already,
 * no check, no doc, a scope that is not a loom_rule_scope, or
 * LOOM_VALIDATE_MAX_REGISTERED rules registered already. */
loom_status loom_validate_register_rule(const loom_validate_rule *R, loom_error *err);

/* Print the rules to `out`, one line each in checking order: the name,
 * the blocks it applies to ("every block", "loop nests", "placed blocks")
 * and its doc (`loom validate --rules`).  Returns 0, or -1 when writing
 * failed (errno set). */
int loom_validate_print_rules(FILE *out);

/* Report a violation of rule `rule` at loop position `loop` of block c->s
 * (-1: no loop): fills *c->v and c->err with "RULE: message" (the message
 * formatted from fmt, printf-style) and returns LOOM_ERR_SEMANTIC.  For
 * checks, the built-in ones and registered ones alike. */
loom_status loom_rule_violate(const loom_rule_ctx *c, const char *rule, int loop, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
