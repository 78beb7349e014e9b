/* `make install` (issue 17): only public headers (no *_internal.h), among
 * them search/tune/tune.h; libloom.so and a pkg-config file with which a C
 * program driving a campaign (tests/ship/drive_campaign.c) and a user
 * module (examples/modules/pin_feature.c) build; the module takes part in
 * campaigns, from C (loom_tune_opts.module_libs) and from `loom tune
 * --module NAME.so` (a name without ./). */
#include <criterion/criterion.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../dsl/schedule/inst.h"
#include "../search/database/database.h"
#include "../traces/trace.h"

static int sh(const char *cmd)
{
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* 1 when trace JSON `text` has the example module's decision: a
 * SampleCategorical over {W, 2W, 4W} feeding a Split's inner factor. */
static int trace_has_module_decision(const char *text, const char *where)
{
    loom_trace *t = NULL;
    loom_error err;
    cr_assert_eq(loom_trace_from_json(text, where, &t, &err), LOOM_OK, "%s", err.msg);
    int found = 0;
    for (int i = 0; i + 2 < t->ninsts && !found; i++) {
        const loom_inst *c = &t->insts[i + 1];
        const loom_inst *sp = &t->insts[i + 2];
        found = !strcmp(loom_inst_kind_at(c->kind)->name, "SampleCategorical") && c->nattrs == 3 &&
                c->attrs[1] == 2 * c->attrs[0] && c->attrs[2] == 4 * c->attrs[0] &&
                !strcmp(loom_inst_kind_at(sp->kind)->name, "Split") && sp->inputs[2] == c->outputs[0];
    }
    loom_trace_free(t);
    return found;
}

/* How many of the campaign's records in dir carry the module's decision
 * (the default schedule's record does not). */
static int records_with_module(const char *dir)
{
    loom_db *db = NULL;
    loom_error err;
    cr_assert_eq(loom_db_open_readonly(dir, stderr, &db, &err), LOOM_OK, "%s", err.msg);
    int n = 0;
    for (int i = 0; i < loom_db_count(db); i++)
        n += trace_has_module_decision(loom_db_record(db, i)->trace_json, dir);
    loom_db_close(db);
    return n;
}

Test(install, public_headers_shared_library_pkg_config_and_modules_in_campaigns, .timeout = 600)
{
    const char *bin = getenv("LOOM_BIN");
    char bdir[4096], tmp[] = "/tmp/loom-install-XXXXXX", cmd[16384], root[4096];
    snprintf(bdir, sizeof bdir, "%s", bin ? bin : "build/loom");
    char *b = dirname(bdir);
    cr_assert_not_null(getcwd(root, sizeof root));
    cr_assert_not_null(mkdtemp(tmp));
    snprintf(cmd, sizeof cmd, "make -s -q all B=%s", b);
    cr_assert_eq(sh(cmd), 0, "the build in %s is out of date: run make first (make test does)", b);
    snprintf(cmd, sizeof cmd, "make -s install B=%s PREFIX=%s/prefix > %s/install.log 2>&1", b, tmp, tmp);
    cr_assert_eq(sh(cmd), 0, "make install failed: see %s/install.log", tmp);
    /* public headers only, the campaign's and the shipping ones among them */
    snprintf(cmd, sizeof cmd, "test -z \"$(find %s/prefix/include -name '*_internal.h' -o -name '*_impl.h')\"", tmp);
    cr_assert_eq(sh(cmd), 0, "an internal header was installed");
    const char *want[] = {"search/tune/tune.h", "ship/ship.h", "modules/module.h", "runtime/lower/kernel_abi.h"};
    for (int k = 0; k < 4; k++) {
        snprintf(cmd, sizeof cmd, "test -f %s/prefix/include/loom/%s", tmp, want[k]);
        cr_assert_eq(sh(cmd), 0, "%s not installed", want[k]);
    }
    snprintf(cmd, sizeof cmd, "test -f %s/prefix/lib/libloom.so", tmp);
    cr_assert_eq(sh(cmd), 0, "libloom.so not installed");
    /* a module and a campaign driver, built with what pkg-config says */
    snprintf(cmd, sizeof cmd,
             "cd %s && export PKG_CONFIG_PATH=%s/prefix/lib/pkgconfig && "
             "cc -std=c11 -Wall -Wextra -Werror -shared -fPIC %s/examples/modules/pin_feature.c -o pin_feature.so "
             "$(pkg-config --cflags --libs loom) && "
             "cc -std=c11 -Wall -Wextra -Werror %s/tests/ship/drive_campaign.c -o drive $(pkg-config --cflags --libs loom) "
             "> build.log 2>&1",
             tmp, tmp, root, root);
    cr_assert_eq(sh(cmd), 0, "building against the install failed: see %s/build.log", tmp);
    snprintf(cmd, sizeof cmd, "ldd %s/drive | grep -q '%s/prefix/lib/libloom.so'", tmp, tmp);
    cr_assert_eq(sh(cmd), 0, "the driver is not linked with the installed libloom.so");
    snprintf(cmd, sizeof cmd, "cd %s && ./drive %s/pin_feature.so db1 %s > drive.log 2>&1", tmp, tmp, root);
    cr_assert_eq(sh(cmd), 0, "the campaign driver failed: see %s/drive.log", tmp);
    char path[4200];
    snprintf(path, sizeof path, "%s/db1", tmp);
    cr_assert_geq(records_with_module(path), 3, "the C campaign's records lack the module's decisions");
    /* loom tune --module NAME.so, without ./ */
    snprintf(cmd, sizeof cmd,
             "cd %s && prefix/bin/loom tune %s/workloads/spmm.loom --data A=%s/data/cora500_adj.mtx --param F=64 "
             "--trials 6 --batch 6 --target sim --remeasure 0 -q --db db2 --module pin_feature.so > tune.log 2>&1",
             tmp, root, root);
    cr_assert_eq(sh(cmd), 0, "loom tune --module failed: see %s/tune.log", tmp);
    snprintf(path, sizeof path, "%s/db2", tmp);
    cr_assert_geq(records_with_module(path), 3, "loom tune --module: the records lack the module's decisions");
    snprintf(cmd, sizeof cmd,
             "cd %s && prefix/bin/loom tune %s/workloads/spmm.loom --data A=%s/data/cora500_adj.mtx --trials 6 "
             "--target sim --db db3 --module nothere.so 2> err.log; test $? = 2 && grep -q 'no such file' err.log",
             tmp, root, root);
    cr_assert_eq(sh(cmd), 0, "a missing module library is not reported: see %s/err.log", tmp);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    sh(cmd);
}
