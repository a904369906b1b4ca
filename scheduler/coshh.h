/* coshh.h: COSHH heterogeneity-aware placement (Rasooli, PhD thesis, McMaster 2013, Ch. 6) —
 * pure policy code shared by the controller and the simulator: job classes by k-means over
 * (size, resource mix), the linear program that matches classes to node types (solved with
 * GLPK's simplex), and the routing rule that picks the job a free node serves. No I/O. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define COSHH_NONE ((size_t) -1)

/* What k-means sees of a job: its size (CPU-seconds) and its resource mix (a number in [0, 1]
 * the caller defines, e.g. the share of a task's time it is CPU-bound). */
typedef struct CoshhJob {
        double size_s;
        double mix;
} CoshhJob;

/* Groups n jobs into at most k classes by k-means over (log(1 + size_s), mix), each axis
 * scaled to [0, 1] over the jobs. Deterministic: the first centre is the largest job (ties:
 * the earliest), each next one the job farthest from the centres chosen (ties: the earliest);
 * Lloyd iterations until no job moves. Classes are numbered by their first job, so the same
 * jobs give the same numbers. ret_class[i] receives job i's class. Returns the number of
 * classes (≤ k; fewer when the jobs have fewer distinct points), -EINVAL. */
int coshh_classify(const CoshhJob *jobs, size_t n, size_t k, size_t *ret_class);

/* The class-to-node-type matching (thesis eq. 6.1–6.3):
 *
 *   max γ  s.t.  Σ_j ψ_ij·θ_ij ≥ γ·σ_i  for every class i,
 *                Σ_i θ_ij ≤ 1           for every node type j,   θ_ij ≥ 0,
 *
 * σ_i the arrival rate of class i (jobs per second), ψ_ij the rate at which all the nodes of
 * type j together would complete jobs of class i (jobs per second), θ_ij the share of type j
 * given to class i. Nodes of one type are one column: the solution then says which classes a
 * type serves, not which of two identical nodes does. */
typedef struct CoshhPlan {
        size_t n_classes, n_types;
        double gamma;
        double *theta;            /* n_classes × n_types, row-major */
} CoshhPlan;

/* Solves the program with GLPK (primal simplex, quiet). -EINVAL on bad input (negative or
 * non-finite rates, no class or no type), -EDOM when no γ > 0 is feasible (a class with
 * arrivals that no type can run), -ENOMEM, -EIO when GLPK fails. */
int coshh_plan_solve(const double *sigma, const double *psi, size_t n_classes, size_t n_types,
                     CoshhPlan *ret);
void coshh_plan_done(CoshhPlan *p);

/* θ_ij > 0: class i is in type j's suggested set SC_j. A type the solution gives to no class
 * (it is not needed for the max-min share) suggests every class rather than idle. */
bool coshh_suggests(const CoshhPlan *p, size_t class, size_t type);

/* A job waiting for a slot, as the routing sees it. Candidates come in the scheduler's order
 * (its job order decides whatever the shares leave tied). */
typedef struct CoshhCandidate {
        size_t class;
        double share;             /* its user's current share, in the caller's unit */
        double min_share;         /* its user's minimum share, same unit (0: none) */
        double weight;            /* its user's weight (> 0) */
} CoshhCandidate;

/* The thesis's routing (Algorithm 3) for one free slot on a node of type `type`: first the
 * jobs of suggested classes whose users are below their minimum share, the one furthest below
 * it (× weight) first; then the jobs of suggested classes by their users' share over weight,
 * the smallest first. Ties go to the earlier candidate (the thesis breaks them at random). A
 * caller whose scheduler already orders jobs passes equal shares: the first candidate whose
 * class the type suggests. Returns the candidate's index, or COSHH_NONE. */
size_t coshh_route(const CoshhPlan *p, size_t type, const CoshhCandidate *c, size_t n);
