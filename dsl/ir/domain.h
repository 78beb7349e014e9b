/* loom: the sparse domain of an expression -- where it may be non-zero
 * (docs/schedule-language.md "Sparse semantics").
 *
 * The algebra of a sparse compiler (TACO's merge lattices, Kjolstad et al.,
 * "The Tensor Algebra Compiler", OOPSLA 2017, section 5): an entry a sparse
 * tensor does not store is a zero, so
 *   - a product or quotient is non-zero only where both operands are
 *     (intersection of their domains),
 *   - a sum or difference wherever either is (union),
 *   - a negation where its operand is,
 *   - a dense tensor or a constant everywhere (the universe).
 * loom adds one rule for masks (attention): an elementwise function
 * (exp, sqrt, relu, max, min) is evaluated only where every sparse tensor
 * its arguments read stores an entry (the intersection of all of them),
 * so `exp(S(i,j) - m(i))` over a masked S stays masked.  Which rule an
 * operator follows is its row's `sparsity` in the operator table (op.h);
 * a unary function with f(0) = 0 may keep its operand's domain instead
 * (LOOM_OP_SPARSE_KEEP).  A statement
 * iterates the domain of its right-hand side; `max=` and the sum reduce
 * over its points only.
 *
 * A domain is kept in disjunctive normal form: a union of terms, each the
 * intersection of a set of *atoms* (the caller's sparse operands: sparse
 * accesses for loom_expr_domain, operand groups for lowering), stored as a
 * bit set.  The empty term is the universe.  Terms are kept minimal: a term
 * whose atoms include another term's is absorbed by it.
 */
#ifndef LOOM_DOMAIN_H
#define LOOM_DOMAIN_H

#include <stdint.h>

#include "op.h"
#include "program.h"

#define LOOM_DOMAIN_MAX_TERMS 16 /* terms of one domain */
#define LOOM_DOMAIN_MAX_ATOMS 64 /* atoms are 0..63 (bits of a term) */

typedef struct loom_domain {
    int nterms;                            /* 0: empty set (never arises from an expression) */
    uint64_t term[LOOM_DOMAIN_MAX_TERMS];  /* bit a set: atom a is in the intersection */
    int overflow;                          /* 1 if a result needed more terms (then the
                                              domain is wrong; callers must refuse it) */
} loom_domain;

/* The universe (one empty term) and a single atom. */
void loom_domain_universe(loom_domain *d);
void loom_domain_atom(loom_domain *d, int atom);
/* *d = *d union *o;  *d = *d intersect *o (the cross product of terms);
 * both keep the result minimal and set overflow past LOOM_DOMAIN_MAX_TERMS. */
void loom_domain_union(loom_domain *d, const loom_domain *o);
void loom_domain_intersect(loom_domain *d, const loom_domain *o);
/* The OR of every term's atoms (the mask of an elementwise function). */
uint64_t loom_domain_atoms(const loom_domain *d);
/* *out = the domain of an operator with sparsity rule `rule` over its
 * operands' domains args[0 .. nargs): the first for KEEP, their union or
 * intersection for UNION or INTERSECT; for MASK (and nargs 0) the single
 * term `mask` (the atoms read under the arguments).  overflow is set when
 * an operand's or mask_ovf is. */
void loom_domain_apply(loom_op_sparsity rule, const loom_domain *args, int nargs, uint64_t mask, int mask_ovf,
                       loom_domain *out);
/* 1 if the domain is the plain intersection of `all` (one term equal to all). */
int loom_domain_is_intersection(const loom_domain *d, uint64_t all);

/* The domain of expression e of prog, whose atoms are its sparse accesses
 * (tensors with a compressed or range level, or with a pattern) in the
 * pre-order of the expression tree: atom k is access_expr[k].  *natoms
 * receives their number.  Errors: LOOM_ERR_UNSUPPORTED when the expression
 * has more than LOOM_DOMAIN_MAX_ATOMS sparse accesses or its domain more
 * than LOOM_DOMAIN_MAX_TERMS terms (the message names the statement line). */
loom_status loom_expr_domain(const loom_program *prog, int e, loom_domain *out,
                             int access_expr[LOOM_DOMAIN_MAX_ATOMS], int *natoms, loom_error *err);

/* How a csr output's pattern is assembled from its statement (TACO's
 * assemble, Kjolstad et al. OOPSLA 2017 section 6: a symbolic pass builds
 * pos/crd, then the kernel is the numeric pass).  The output's pattern
 * holds the projection of the domain on its indices (i, j): for each union
 * term, either the row pattern of an operand stored csr with exactly the
 * indices (i, j) (`A(i,j) + B(i,j)`), or the symbolic product of operands
 * A(i,k) and B(k,j) stored csr (SpGEMM).  A term with more operands gives a
 * superset (stored zeros). */
typedef struct loom_assembly {
    int nterms;
    int row[LOOM_DOMAIN_MAX_TERMS];  /* expr of the (i, j) operand, or -1 */
    int left[LOOM_DOMAIN_MAX_TERMS]; /* exprs of A(i, k) and B(k, j), or -1 */
    int right[LOOM_DOMAIN_MAX_TERMS];
} loom_assembly;

/* The assembly of statement s's left-hand side (order 2, declared csr).
 * Errors: LOOM_ERR_UNSUPPORTED naming the term that fits neither shape
 * (e.g. a dense term: the output would be dense). */
loom_status loom__assembly_plan(const loom_program *prog, int s, loom_assembly *out, loom_error *err);

/* 1 if statement s's left-hand side is an output with an assembled pattern
 * (pattern_of is itself) stored compressed at index variable v: a loop over
 * v then merges its row with the operands' (a coiteration), so the
 * positions of one operand alone do not drive it. */
int loom__lhs_assembled_at(const loom_program *prog, int s, int v);

/* 1 if statement s's domain is not the plain intersection of its sparse
 * accesses (a union: its lowering merges with presence flags, and a loop
 * over a compressed index is a coiteration even with one pattern there);
 * 0 otherwise and when the domain cannot be computed. */
int loom__stmt_is_union(const loom_program *prog, int s);

#endif
