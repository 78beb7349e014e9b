/* loom: `loom navigate` -- interactive scheduling over a design space
 * (search/navigate/navigate.h; docs/navigation.md): a terminal session, or with
 * --json one JSON request per line in and one response per line out. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../modules/module.h"
#include "../runtime/lower/codegen.h"
#include "../runtime/lower/lir.h"
#include "../runtime/lower/lower.h"
#include "../runtime/runner/runner.h"
#include "../runtime/target/target.h"
#include "../search/navigate/navigate.h"
#include "../search/tune/tune.h"
#include "cli.h"

static const char *NAV_HELP =
    "usage: loom navigate WORKLOAD.loom [options]\n"
    "\n"
    "Schedules a workload by navigation (Honeybee, docs/navigation.md): the design space's\n"
    "program is shown as a sketch whose sampling instructions are holes ?1, ?2 ...; for the\n"
    "current hole a menu lists only the choices that some valid schedule has (by exhaustive\n"
    "enumeration of the completions when there are at most --enum-limit, else by witnesses),\n"
    "the default marked; every valid schedule of the space stays reachable.  Each entry\n"
    "says what it decides ([i, k, f] for a loop order, f: 4 x 4 x 1 x 1 for a tiling,\n"
    "stream stores: yes for a categorical) and its simulated latency, marked (slow: Nx\n"
    "default) at 3x the default's or more.  Menu numbers count from 1, errors too.\n"
    "\n"
    "commands (one per line):\n"
    "  N | pick N     decide the current hole with menu entry N (1-based)\n"
    "  default        decide the current hole with its default\n"
    "  defaults       decide every open hole with its default\n"
    "  tune N         a campaign of N trials over the open holes only (the decided ones\n"
    "                 pinned); the best schedule becomes the state (undo reverts it)\n"
    "  undo           revert the last decision (or defaults, or tune)\n"
    "  goto ?N        make open hole ?N the current one\n"
    "  show           the generated C of the sketch (open holes at their defaults)\n"
    "  sketch         print the state again\n"
    "  save FILE      write the sketch's trace with the decided holes pinned (a partial\n"
    "                 trace: loom run --trace runs it, loom tune --pin explores the rest)\n"
    "  quit           end the session (also end of input)\n"
    "\n"
    "options:\n"
    "  --target T           cpu (default), sim, sim:NAME or FILE.json: validation limits,\n"
    "                       tune's target and, on a simulator, the latency of each choice\n"
    "  --modules A,B,...    the design space's modules (default: the target's list)\n"
    "  --enum-limit N       enumerate at most N completions (default 20000)\n"
    "  --db DIR             where `tune` keeps its campaigns (default: a new /tmp directory)\n"
    "  --json               the line-oriented JSON protocol (docs/navigation.md)\n"
    "  --no-consequences    do not simulate each menu choice's default completion (on a\n"
    "                       cpu target the simulator's model of this host, sim:host)\n"
    "  --estimate-limit N   simulate at most N entries of a menu (default 64): a longer\n"
    "                       menu gets the default and an even sample of N, the rest say\n"
    "                       (not estimated); 0 estimates nothing; at most 10 s per menu\n"
    "  --data NAME=FILE     read tensor NAME from a Matrix Market file (repeatable)\n"
    "  --param NAME=INT     bind size NAME (repeatable)\n"
    "  -h, --help           this text\n"
    "exit codes: 0 the session ended, 1 the space has no valid schedule, 2 bad input\n";

typedef struct session {
    const char *workload, *target, *modules, *db;
    char name[256];
    char *text;
    int json, consequences, simulated, have_sim, ntune, est_limit;
    char dbdir[512];
    loom_target tgt;          /* the session's target handle (loom_target_open), chosen once */
    loom_target est;          /* the model the estimates are simulated on: tgt, or sim:host for cpu */
    loom_runner *est_runner;  /* est's simulator runner (runtime/runner/runner.h), made at first use */
    loom_limits lim;          /* tgt.limits */
    loom_program *prog;
    loom_dataset *ds;
    loom_registry *reg;
    loom_space *space;
    loom_nav *nav;
    FILE *out;
} session;

static const char *kind_name(int kind)
{
    const loom_inst_kind *K = loom_inst_kind_at(kind);
    return K ? K->name : "?";
}

/* What a value means, for people (loom_nav_describe), with the raw
 * decision where the words do not show it (an index). */
static const char *meaning(session *s, const loom_nav_value *v, char *buf, size_t n)
{
    char d[160];
    loom_nav_describe(s->nav, v, d, sizeof d);
    if (v->kind == LOOM_INST_SAMPLE_CATEGORICAL || v->kind == LOOM_INST_SAMPLE_LOOP_ORDER)
        snprintf(buf, n, "%s%s(decision %lld)", d, *d ? " " : "", (long long)v->v[0]);
    else
        snprintf(buf, n, "%s", d);
    return buf;
}

/* The simulated latency of menu entry k's default completion; NAN when not simulated. */
static double consequence(session *s, int k)
{
    if (!s->have_sim || !s->consequences)
        return NAN;
    loom_trace *t = NULL;
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error e;
    double lat = NAN;
    if (!s->est_runner && loom_runner_sim_new(&s->est, s->ds, NULL, &s->est_runner, &e))
        s->est_runner = NULL;
    if (sch && s->est_runner && loom_nav_choice_completion(s->nav, k, &t, sch, &e) == LOOM_OK) {
        double l = loom_runner_run_one(s->est_runner, sch, NULL, NULL);
        lat = isfinite(l) ? l : NAN;
    }
    loom_trace_free(t);
    free(sch);
    return lat;
}

#define SLOW_FACTOR 3.0      /* an entry this many times the default's estimate is marked slow */
#define ESTIMATE_BUDGET_S 10 /* wall-clock cap on one menu's estimates */

/* The estimates of a menu of nm entries into lat[] (NAN: not estimated):
 * every entry when nm <= s->est_limit, else the default and an evenly
 * spaced sample of limit entries (entry floor(j nm / limit), j = 0..limit-1), in
 * menu order, until ESTIMATE_BUDGET_S of wall clock; *def the default's
 * index.  Returns how many were estimated. */
static int estimate_menu(session *s, const loom_nav_choice *menu, int nm, double *lat, int *def)
{
    *def = 0;
    for (int k = 0; k < nm; k++) {
        lat[k] = NAN;
        if (menu[k].is_default)
            *def = k;
    }
    if (!s->have_sim || !s->consequences || s->est_limit <= 0)
        return 0;
    int picks = nm <= s->est_limit ? nm : s->est_limit, n = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    lat[*def] = consequence(s, *def);
    n += isfinite(lat[*def]) != 0;
    for (int j = 0; j < picks; j++) {
        int k = (int)((long)j * nm / picks);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec) > ESTIMATE_BUDGET_S)
            break;
        if (k != *def) {
            lat[k] = consequence(s, k);
            n += isfinite(lat[k]) != 0;
        }
    }
    return n;
}

static cJSON *value_json(const loom_nav_value *v)
{
    if (v->kind != LOOM_INST_SAMPLE_PERFECT_TILE)
        return cJSON_CreateNumber((double)(v->n ? v->v[0] : 0));
    cJSON *a = cJSON_CreateArray();
    for (int k = 0; k < v->n; k++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v->v[k]));
    return a;
}

static cJSON *state_json(session *s)
{
    loom_nav_state st;
    loom_nav_get_state(s->nav, &st);
    cJSON *o = cJSON_CreateObject();
    int nh;
    const loom_nav_hole *holes = loom_nav_holes(s->nav, &nh);
    cJSON *ha = cJSON_AddArrayToObject(o, "holes");
    for (int k = 0; k < nh; k++) {
        cJSON *h = cJSON_CreateObject();
        cJSON_AddNumberToObject(h, "hole", holes[k].ordinal + 1);
        cJSON_AddStringToObject(h, "kind", kind_name(holes[k].kind));
        cJSON_AddNumberToObject(h, "inst", holes[k].inst);
        cJSON_AddBoolToObject(h, "decided", holes[k].decided);
        cJSON_AddItemToObject(h, "value", value_json(&holes[k].value));
        cJSON_AddNumberToObject(h, "candidates", holes[k].ncand);
        cJSON_AddItemToArray(ha, h);
    }
    if (st.current >= 0)
        cJSON_AddNumberToObject(o, "current", holes[st.current].ordinal + 1);
    else
        cJSON_AddNullToObject(o, "current");
    cJSON_AddBoolToObject(o, "complete", st.complete);
    cJSON_AddBoolToObject(o, "sketch_valid", st.sketch_valid);
    cJSON_AddStringToObject(o, "method", st.method);
    cJSON_AddNumberToObject(o, "size", st.size);
    cJSON_AddBoolToObject(o, "size_exact", st.size_exact);
    cJSON_AddStringToObject(o, "size_method", st.size_method);
    cJSON_AddBoolToObject(o, "default_in_space", st.default_in_space);
    if (!st.default_in_space)
        cJSON_AddStringToObject(o, "default_why_not", st.default_why_not);
    const loom_nav_choice *menu;
    int nm = loom_nav_menu(s->nav, &menu), def;
    double *lat = malloc(sizeof *lat * (size_t)(nm > 0 ? nm : 1));
    int nest = lat ? estimate_menu(s, menu, nm, lat, &def) : 0;
    char ctx[512];
    loom_nav_context(s->nav, ctx, sizeof ctx);
    if (*ctx)
        cJSON_AddStringToObject(o, "context", ctx);
    cJSON_AddNumberToObject(o, "estimated", nest);
    cJSON *ma = cJSON_AddArrayToObject(o, "menu");
    for (int k = 0; k < nm; k++) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddNumberToObject(m, "choice", k + 1);
        cJSON_AddItemToObject(m, "value", value_json(&menu[k].value));
        char mb[200];
        loom_nav_describe(s->nav, &menu[k].value, mb, sizeof mb);
        if (*mb)
            cJSON_AddStringToObject(m, "meaning", mb);
        const loom_trace *t = loom_nav_trace(s->nav);
        const loom_nav_hole *H = &holes[st.current];
        if (H->kind == LOOM_INST_SAMPLE_CATEGORICAL && H->inst >= 0 && H->inst < t->ninsts &&
            menu[k].value.v[0] < t->insts[H->inst].nattrs)
            cJSON_AddNumberToObject(m, "candidate", (double)t->insts[H->inst].attrs[menu[k].value.v[0]]);
        cJSON_AddBoolToObject(m, "default", menu[k].is_default);
        if (menu[k].completions >= 0)
            cJSON_AddNumberToObject(m, "completions", (double)menu[k].completions);
        int have = lat && isfinite(lat[k]);
        cJSON_AddBoolToObject(m, "estimated", have);
        if (have)
            cJSON_AddNumberToObject(m, "sim_latency_s", lat[k]);
        if (have && isfinite(lat[def]) && lat[def] > 0) {
            cJSON_AddNumberToObject(m, "slowdown", lat[k] / lat[def]);
            cJSON_AddBoolToObject(m, "slow", lat[k] >= SLOW_FACTOR * lat[def]);
        }
        cJSON_AddItemToArray(ma, m);
    }
    free(lat);
    return o;
}

static void print_state(session *s)
{
    FILE *out = s->out;
    loom_nav_print_sketch(s->nav, out);
    loom_nav_state st;
    loom_nav_get_state(s->nav, &st);
    fprintf(out, "remaining: %s%.6g %sschedules (%s; %s menus)\n", st.size_exact ? "" : "at most about ", st.size,
            st.size_exact ? "valid " : "", st.size_method, st.method);
    if (!st.default_in_space)
        fprintf(out, "note: the default schedule is not a schedule of this space (%s); the holes' defaults are "
                     "the samplers' priors\n", st.default_why_not);
    if (st.complete) {
        fprintf(out, "every hole is decided: `save FILE` writes the schedule, `show` its C, `undo` goes back\n");
        return;
    }
    int nh;
    const loom_nav_hole *holes = loom_nav_holes(s->nav, &nh);
    const loom_nav_hole *H = &holes[st.current];
    const loom_nav_choice *menu;
    int nm = loom_nav_menu(s->nav, &menu);
    char ctx[512];
    loom_nav_context(s->nav, ctx, sizeof ctx);
    fprintf(out, "?%d %s%s%s: %d valid choice%s of %d (%d open hole%s)\n", H->ordinal + 1, kind_name(H->kind),
            *ctx ? " on " : "", ctx, nm, nm == 1 ? "" : "s", H->ncand, st.nopen, st.nopen == 1 ? "" : "s");
    int def;
    double *lat = malloc(sizeof *lat * (size_t)(nm > 0 ? nm : 1));
    int nest = lat ? estimate_menu(s, menu, nm, lat, &def) : 0;
    for (int k = 0; k < nm; k++) {
        fprintf(out, "  [%d] ", k + 1);
        char mb[240];
        if (*meaning(s, &menu[k].value, mb, sizeof mb))
            fputs(mb, out);
        else
            loom_nav_value_print(&menu[k].value, out);
        if (menu[k].completions >= 0)
            fprintf(out, "  (%ld completion%s)", menu[k].completions, menu[k].completions == 1 ? "" : "s");
        if (lat && isfinite(lat[k])) {
            fprintf(out, "  %s %.4g us", s->simulated ? "sim" : "sim:host", lat[k] * 1e6);
            if (isfinite(lat[def]) && lat[k] >= SLOW_FACTOR * lat[def])
                fprintf(out, "  (slow: %.3gx default)", lat[k] / lat[def]);
        } else if (nest > 0)
            fputs("  (not estimated)", out);
        fprintf(out, "%s\n", menu[k].is_default ? "  <- default" : "");
    }
    if (nest > 0 && nest < nm)
        fprintf(out,
                "  estimates: %d of %d entries (the default and an even sample of %d: --estimate-limit; at most %d s)\n",
                nest, nm, s->est_limit, ESTIMATE_BUDGET_S);
    free(lat);
}

/* The sketch's C, or NULL with err. */
static char *sketch_code(session *s, loom_error *err)
{
    loom_nav_state st;
    loom_nav_get_state(s->nav, &st);
    if (!st.sketch_valid) {
        loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "the sketch is not a valid schedule");
        return NULL;
    }
    lir_func *f = NULL;
    char *code = NULL;
    if (loom_lower_for(loom_nav_schedule(s->nav), &s->lim, &f, err) == LOOM_OK)
        loom_codegen_c(f, "kernel", &code, err);
    loom_lir_func_free(f);
    return code;
}

static loom_status do_save(session *s, const char *file, loom_error *err)
{
    loom_nav_state st;
    loom_nav_get_state(s->nav, &st);
    if (!st.sketch_valid)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "the sketch is not a valid schedule: nothing to save");
    loom_pins pins;
    loom_nav_pins(s->nav, &pins);
    char *json = NULL;
    loom_status rc = loom_partial_trace_to_json(loom_nav_trace(s->nav), s->prog, &pins, &json, err);
    if (rc)
        return rc;
    FILE *f = fopen(file, "w");
    if (!f || fprintf(f, "%s\n", json) < 0 || fclose(f)) {
        free(json);
        return loom_error_set(err, LOOM_ERR_IO, file, 0, 0, "cannot write: %s", strerror(errno));
    }
    free(json);
    return LOOM_OK;
}

/* A campaign of n trials over the open holes; the best becomes the state. */
static loom_status do_tune(session *s, int n, double *best, double *def, loom_error *err)
{
    if (!s->dbdir[0]) {
        if (s->db)
            snprintf(s->dbdir, sizeof s->dbdir, "%s", s->db);
        else {
            snprintf(s->dbdir, sizeof s->dbdir, "/tmp/loom-navigate-XXXXXX");
            if (!mkdtemp(s->dbdir))
                return loom_error_set(err, LOOM_ERR_IO, NULL, 0, 0, "cannot make a directory for tune: %s",
                                      strerror(errno));
        }
    }
    char dir[600];
    snprintf(dir, sizeof dir, "%s/tune%d", s->dbdir, ++s->ntune);
    loom_pins *pins = malloc(sizeof *pins);
    if (!pins)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_nav_pins(s->nav, pins);
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = dir;
    o.trials = n;
    o.batch = n < 16 ? n : 16;
    o.target = s->target;
    o.modules = s->modules;
    o.workload_name = s->name;
    o.workload_text = s->text;
    o.remeasure_rounds = 0;
    o.pins = pins;
    o.warn = stderr;
    loom_tune_result r;
    loom_status st = loom_tune(s->prog, s->ds, &o, &r, err);
    free(pins);
    *best = r.best_latency_s; /* a record carrying every pin (the pinned campaign's records only) */
    *def = r.default_latency_s; /* the unpinned default: for comparison, never the state */
    if (st)
        return st;
    if (!r.best_trace[0])
        return loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0, "the campaign in %s found no working schedule", dir);
    char *text = cli_read_text(r.best_trace);
    loom_trace *t = NULL;
    if (!text)
        return loom_error_set(err, LOOM_ERR_IO, r.best_trace, 0, 0, "cannot read the best trace");
    st = loom_trace_from_json(text, r.best_trace, &t, err);
    free(text);
    if (!st)
        st = loom_nav_adopt(s->nav, t, err);
    loom_trace_free(t);
    return st;
}

/* Run one command (words in argv); fills *resp (JSON mode) or prints. Returns 1 on quit. */
static int command(session *s, const char *cmd, const char *arg, int have_num, long num, cJSON *resp)
{
    loom_error err;
    loom_error_clear(&err);
    loom_status st = LOOM_OK;
    int quit = 0, print = 1;
    if (!strcmp(cmd, "pick")) {
        st = have_num ? loom_nav_pick(s->nav, (int)num - 1, &err)
                      : loom_error_set(&err, LOOM_ERR_INVALID, NULL, 0, 0, "pick needs a menu number");
    } else if (!strcmp(cmd, "default")) {
        st = loom_nav_default(s->nav, &err);
    } else if (!strcmp(cmd, "defaults")) {
        st = loom_nav_defaults(s->nav, &err);
    } else if (!strcmp(cmd, "undo")) {
        st = loom_nav_undo(s->nav, &err);
    } else if (!strcmp(cmd, "goto")) {
        st = have_num ? loom_nav_goto(s->nav, (int)num - 1, &err)
                      : loom_error_set(&err, LOOM_ERR_INVALID, NULL, 0, 0, "goto needs a hole: goto ?N");
    } else if (!strcmp(cmd, "show")) {
        char *code = sketch_code(s, &err);
        st = code ? LOOM_OK : (err.status ? err.status : LOOM_ERR_INVALID);
        if (code && resp)
            cJSON_AddStringToObject(resp, "code", code);
        else if (code)
            fprintf(s->out, "%s", code);
        free(code);
        print = 0;
    } else if (!strcmp(cmd, "tune")) {
        double best = INFINITY, def = INFINITY;
        st = have_num && num > 0 && num <= 100000
                 ? do_tune(s, (int)num, &best, &def, &err)
                 : loom_error_set(&err, LOOM_ERR_INVALID, NULL, 0, 0, "tune needs a trial count 1..100000");
        if (!st && resp) {
            cJSON_AddNumberToObject(resp, "best_latency_s", best);
            if (isfinite(def))
                cJSON_AddNumberToObject(resp, "default_latency_s", def);
        } else if (!st) {
            fprintf(s->out, "tune: best %.4g us, carrying every pinned decision (campaign in %s/tune%d)", best * 1e6,
                    s->dbdir, s->ntune);
            if (isfinite(def))
                fprintf(s->out, "; the unpinned default %.4g us, for comparison only", def * 1e6);
            fprintf(s->out, "\n");
        }
    } else if (!strcmp(cmd, "save")) {
        st = arg && *arg ? do_save(s, arg, &err)
                         : loom_error_set(&err, LOOM_ERR_INVALID, NULL, 0, 0, "save needs a file name");
        if (!st && resp)
            cJSON_AddStringToObject(resp, "file", arg);
        else if (!st)
            fprintf(s->out, "saved %s\n", arg);
        print = 0;
    } else if (!strcmp(cmd, "state") || !strcmp(cmd, "sketch")) {
        /* the state only */
    } else if (!strcmp(cmd, "quit") || !strcmp(cmd, "exit")) {
        quit = 1;
        print = 0;
    } else if (!strcmp(cmd, "help")) {
        if (!resp)
            fprintf(s->out, "%s", NAV_HELP);
        print = 0;
    } else {
        st = loom_error_set(&err, LOOM_ERR_INVALID, NULL, 0, 0, "unknown command '%s' (help lists them)", cmd);
        print = 0;
    }
    if (resp) {
        cJSON_AddBoolToObject(resp, "ok", st == LOOM_OK);
        if (st)
            cJSON_AddStringToObject(resp, "error", err.msg);
        if (!quit)
            cJSON_AddItemToObject(resp, "state", state_json(s));
    } else if (st) {
        fprintf(s->out, "error: %s\n", err.msg);
    } else if (print) {
        print_state(s);
    }
    return quit;
}

/* One terminal line: "N", "pick N", "goto ?N", "tune N", "save FILE", ... */
static int text_line(session *s, char *line)
{
    char *p = line;
    while (isspace((unsigned char)*p))
        p++;
    char *end = p + strlen(p);
    while (end > p && isspace((unsigned char)end[-1]))
        *--end = 0;
    if (!*p)
        return 0;
    char cmd[32] = "";
    const char *arg = NULL;
    if (isdigit((unsigned char)*p)) {
        snprintf(cmd, sizeof cmd, "pick");
        arg = p;
    } else {
        size_t n = strcspn(p, " \t");
        snprintf(cmd, sizeof cmd, "%.*s", (int)(n < 31 ? n : 31), p);
        arg = p + n;
        while (isspace((unsigned char)*arg))
            arg++;
    }
    const char *q = arg && *arg == '?' ? arg + 1 : arg;
    char *e = NULL;
    long num = q && *q ? strtol(q, &e, 10) : 0;
    int have_num = q && *q && e && *e == 0;
    return command(s, cmd, arg, have_num, num, NULL);
}

/* One JSON request: {"cmd": "pick", "choice": N} / "goto" "hole" / "tune" "trials" / "save" "file". */
static int json_line(session *s, const char *line)
{
    const char *p = line;
    while (isspace((unsigned char)*p))
        p++;
    if (!*p)
        return 0;
    cJSON *resp = cJSON_CreateObject(), *req = cJSON_Parse(line);
    int quit = 0;
    const cJSON *c = req ? cJSON_GetObjectItemCaseSensitive(req, "cmd") : NULL;
    if (!req || !cJSON_IsString(c)) {
        cJSON_AddBoolToObject(resp, "ok", 0);
        cJSON_AddStringToObject(resp, "error",
                                req ? "a request is an object with a \"cmd\" string" : "not valid JSON");
    } else {
        cJSON_AddStringToObject(resp, "cmd", c->valuestring);
        const char *keys[] = {"choice", "hole", "trials"};
        int have = 0;
        long num = 0;
        for (int k = 0; k < 3 && !have; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, keys[k]);
            if (cJSON_IsNumber(v)) {
                have = 1;
                num = (long)v->valuedouble;
            }
        }
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(req, "file");
        quit = command(s, c->valuestring, cJSON_IsString(f) ? f->valuestring : NULL, have, num, resp);
    }
    char *txt = cJSON_PrintUnformatted(resp);
    fprintf(s->out, "%s\n", txt ? txt : "{\"ok\": false, \"error\": \"out of memory\"}");
    fflush(s->out);
    free(txt);
    cJSON_Delete(resp);
    cJSON_Delete(req);
    return quit;
}

static int open_session(session *s, cli_inputs *in)
{
    loom_error err;
    if (loom_target_open(s->target, NULL, NULL, &s->tgt, &err)) {
        cli_print_err("navigate", &err);
        return EXIT_BADINPUT;
    }
    s->simulated = s->tgt.kind == LOOM_TARGET_SIM;
    s->lim = s->tgt.limits;
    const char *kind = s->simulated ? "sim" : "cpu";
    s->est = s->tgt;
    /* consequences on a CPU target: the simulator's model of this host */
    s->have_sim = s->simulated || loom_target_load("host", &s->est, &err) == LOOM_OK;
    int rc = cli_make_space("navigate", s->modules, kind, NULL, 0, &s->reg, &s->space);
    if (rc)
        return rc;
    loom_space_set_limits(s->space, &s->lim);
    return cli_load_workload("navigate", s->workload, in, 1, 1, &s->prog, &s->ds);
}

int cmd_navigate(int argc, char **argv)
{
    static session s;
    static cli_inputs in;
    memset(&s, 0, sizeof s);
    memset(&in, 0, sizeof in);
    s.target = "cpu";
    s.consequences = 1;
    s.est_limit = 64;
    s.out = stdout;
    uint64_t limit = LOOM_NAV_ENUM_LIMIT;
    enum { TARGET, MODULES, ENUM_LIMIT, DB, JSON, NOCONS, EST_LIMIT };
    static const cli_opt opts[] = {
        {"target", 0, 1, TARGET}, {"modules", 0, 1, MODULES}, {"enum-limit", 0, 1, ENUM_LIMIT},
        {"db", 0, 1, DB},         {"json", 0, 0, JSON},       {"no-consequences", 0, 0, NOCONS},
        {"estimate-limit", 0, 1, EST_LIMIT},
    };
    static cli_args args;
    cli_args_init(&args, "navigate", argc, argv, NAV_HELP, opts, (int)(sizeof opts / sizeof *opts), &in);
    const char *a, *val;
    int id, prc;
    while ((id = cli_next(&args, &a, &val, &prc)) != CLI_END) {
        if (id == CLI_STOP)
            return prc;
        if (id == TARGET)
            s.target = val;
        else if (id == MODULES)
            s.modules = val;
        else if (id == ENUM_LIMIT) {
            if (cli_parse_u64("navigate", "--enum-limit", val, &limit))
                return EXIT_BADINPUT;
        } else if (id == DB)
            s.db = val;
        else if (id == JSON)
            s.json = 1;
        else if (id == NOCONS)
            s.consequences = 0;
        else if (id == EST_LIMIT) {
            uint64_t e;
            if (cli_parse_u64("navigate", "--estimate-limit", val, &e))
                return EXIT_BADINPUT;
            s.est_limit = e > 4096 ? 4096 : (int)e;
        }
        else if (!s.workload)
            s.workload = val;
        else {
            fprintf(stderr, "loom navigate: more than one workload ('%s' and '%s')\n", s.workload, val);
            return EXIT_BADINPUT;
        }
    }
    (void)a;
    if (!s.workload) {
        fprintf(stderr, "loom navigate: no workload given\n%s", NAV_HELP);
        return EXIT_BADINPUT;
    }
    int rc = open_session(&s, &in);
    if (!rc) {
        const char *base = strrchr(s.workload, '/');
        snprintf(s.name, sizeof s.name, "%s", base ? base + 1 : s.workload);
        char *dot = strrchr(s.name, '.');
        if (dot)
            *dot = 0;
        s.text = cli_read_text(s.workload);
        loom_error err;
        loom_error_clear(&err);
        if (loom_nav_new(s.prog, s.space, &s.lim, (long)limit, &s.nav, &err)) {
            cli_print_err("navigate", &err);
            rc = err.status == LOOM_ERR_SEMANTIC ? EXIT_WRONG : EXIT_BADINPUT;
        }
    }
    if (!rc) {
        int tty = isatty(0);
        if (!s.json) {
            print_state(&s);
            if (tty)
                fprintf(s.out, "(help lists the commands)\n");
        }
        char *line = NULL;
        size_t cap = 0;
        for (;;) {
            if (!s.json) {
                fprintf(s.out, "navigate> ");
                fflush(s.out);
            }
            if (getline(&line, &cap, stdin) < 0)
                break;
            if (s.json ? json_line(&s, line) : text_line(&s, line))
                break;
            fflush(s.out);
        }
        if (!s.json)
            fputc('\n', s.out);
        free(line);
    }
    loom_nav_free(s.nav);
    free(s.text);
    loom_runner_free(s.est_runner);
    loom_space_free(s.space);
    loom_registry_free(s.reg);
    loom_dataset_free(s.ds);
    loom_program_free(s.prog);
    return rc;
}
