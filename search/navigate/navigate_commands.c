/* The navigation engine's commands (navigate.h: pick, default, defaults,
 * undo, goto, adopt, a choice's completion) and printing the sketch; the
 * states and menus they recompute are navigate.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "navigate_internal.h"

/* ---- commands ---------------------------------------------------------------- */

static loom_status push_undo(loom_nav *nav, loom_error *err)
{
    if (nav->nundo == nav->capundo) {
        int nc = nav->capundo ? 2 * nav->capundo : 16;
        dec_state *u = realloc(nav->undo, sizeof *u * (size_t)nc);
        if (!u)
            return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        nav->undo = u;
        nav->capundo = nc;
    }
    nav->undo[nav->nundo++] = nav->d;
    return LOOM_OK;
}

/* Recompute after a change; on failure restore the last undo entry. */
static loom_status commit(loom_nav *nav, loom_error *err)
{
    nav->goto_ord = -1;
    loom_status st = loom__nav_compute_state(nav, err);
    if (st && nav->nundo > 0) {
        nav->d = nav->undo[--nav->nundo];
        loom_error e;
        loom__nav_compute_state(nav, &e);
    }
    return st;
}

static loom_status decide_current(loom_nav *nav, const loom_nav_value *v, loom_error *err)
{
    loom_status st = push_undo(nav, err);
    if (st)
        return st;
    int j = nav->holes[nav->current].ordinal;
    nav->d.decided[j] = 1;
    nav->d.value[j] = *v;
    return commit(nav, err);
}

loom_status loom_nav_pick(loom_nav *nav, int k, loom_error *err)
{
    if (nav->current < 0)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "every hole is decided: nothing to pick");
    if (k < 0 || k >= nav->nmenu)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "choice %d out of range 1..%d (the menu's entries)",
                              k + 1, nav->nmenu);
    loom_nav_value v = nav->menu[k].value;
    return decide_current(nav, &v, err);
}

loom_status loom_nav_default(loom_nav *nav, loom_error *err)
{
    for (int k = 0; k < nav->nmenu; k++)
        if (nav->menu[k].is_default)
            return loom_nav_pick(nav, k, err);
    return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                          nav->current < 0 ? "every hole is decided: nothing to pick"
                                           : "this hole has no valid choice");
}

loom_status loom_nav_defaults(loom_nav *nav, loom_error *err)
{
    if (nav->current < 0)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "every hole is decided already");
    if (!nav->sk_valid)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "no valid completion of this state was found: undo a decision");
    loom_status st = push_undo(nav, err);
    if (st)
        return st;
    for (int k = 0; k < nav->nholes; k++) {
        nav->d.decided[nav->holes[k].ordinal] = 1;
        nav->d.value[nav->holes[k].ordinal] = nav->holes[k].value;
    }
    return commit(nav, err);
}

loom_status loom_nav_undo(loom_nav *nav, loom_error *err)
{
    if (nav->nundo == 0)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "nothing to undo");
    nav->d = nav->undo[--nav->nundo];
    nav->goto_ord = -1;
    return loom__nav_compute_state(nav, err);
}

loom_status loom_nav_goto(loom_nav *nav, int ordinal, loom_error *err)
{
    for (int k = 0; k < nav->nholes; k++)
        if (nav->holes[k].ordinal == ordinal) {
            if (nav->holes[k].decided)
                return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                      "?%d is decided already: undo to change it", ordinal + 1);
            nav->goto_ord = ordinal;
            return loom__nav_compute_state(nav, err);
        }
    return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "?%d is not a hole of the current sketch", ordinal + 1);
}

loom_status loom_nav_adopt(loom_nav *nav, const loom_trace *t, loom_error *err)
{
    loom_pins *p = malloc(sizeof *p);
    if (!p)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_status st = loom_pins_from_trace(t, NULL, 0, p, err);
    for (int k = 0; k < p->n && !st; k++) {
        int j = p->ordinal[k];
        if (nav->d.decided[j] && !loom_nav_value_equal(&nav->d.value[j], &p->value[k]))
            st = loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "the trace contradicts the decision of ?%d", j + 1);
    }
    if (!st)
        st = push_undo(nav, err);
    if (!st) {
        for (int k = 0; k < p->n; k++) {
            nav->d.decided[p->ordinal[k]] = 1;
            nav->d.value[p->ordinal[k]] = p->value[k];
        }
        st = commit(nav, err);
        if (!st && (!nav->sk_valid || nav->current >= 0)) {
            nav->d = nav->undo[--nav->nundo];
            loom__nav_compute_state(nav, err);
            st = loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                "the trace is not a valid complete schedule of this design space");
        }
    }
    free(p);
    return st;
}

loom_status loom_nav_choice_completion(loom_nav *nav, int k, loom_trace **out, loom_schedule *sch, loom_error *err)
{
    *out = NULL;
    if (k < 0 || k >= nav->nmenu || nav->current < 0)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "choice %d out of range 1..%d", k + 1, nav->nmenu);
    dec_state *tmp = malloc(sizeof *tmp), *tmp2 = malloc(sizeof *tmp2);
    loom_schedule *s = sch ? sch : malloc(sizeof *s);
    loom_trace *t = loom_trace_new();
    loom_status st = tmp && tmp2 && s && t ? LOOM_OK : loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    int valid = 0;
    if (!st) {
        *tmp = nav->d;
        tmp->decided[nav->holes[nav->current].ordinal] = 1;
        tmp->value[nav->holes[nav->current].ordinal] = nav->menu[k].value;
        long count, w = nav->have_table ? loom__nav_table_witness(nav, tmp, &count) : -1;
        if (nav->have_table && w >= 0)
            st = loom__nav_run_leaf(nav, w, tmp2, nav->rc, t, s, &valid, err);
        else if (!nav->have_table)
            st = loom__nav_witness_search(nav, tmp, nav->rc, t, s, &valid, err);
        if (!st && !valid)
            st = loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "choice %d has no valid completion", k + 1);
    }
    free(tmp);
    free(tmp2);
    if (s != sch)
        free(s);
    if (st)
        loom_trace_free(t);
    else
        *out = t;
    return st;
}

/* ---- printing ------------------------------------------------------------------- */

void loom_nav_print_sketch(const loom_nav *nav, FILE *out)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        return;
    loom_trace_print_c(nav->sk_trace, nav->prog, mem);
    fclose(mem);
    char *line = text;
    int idx = -1, h = 0; /* the first line is the header comment */
    while (line && *line) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        if (line[0] == '/' && line[1] == '*') {
            fprintf(out, "%s\n", line);
        } else {
            idx++;
            while (h < nav->nholes && nav->holes[h].inst < idx)
                h++;
            char *dec = strstr(line, " /* decision: ");
            if (dec && h < nav->nholes && nav->holes[h].inst == idx) {
                const loom_nav_hole *H = &nav->holes[h];
                *dec = 0;
                fprintf(out, "%s /* ?%d ", line, H->ordinal + 1);
                if (H->decided) {
                    fputs("= ", out);
                    loom_nav_value_print(&H->value, out);
                } else {
                    fprintf(out, "open: %d candidates, default ", H->ncand);
                    loom_nav_value_print(&H->value, out);
                }
                fprintf(out, " */%s\n", h == nav->current ? "   <-- current" : "");
            } else
                fprintf(out, "%s\n", line);
        }
        line = nl ? nl + 1 : NULL;
    }
    free(text);
}
