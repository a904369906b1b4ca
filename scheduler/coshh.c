/* coshh.c: COSHH's classification (k-means), class-to-node-type program (GLPK) and routing. */
#include "coshh.h"

#include <assert.h>
#include <errno.h>
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

/* θ below this is the simplex's rounding, not a share. */
#define COSHH_THETA_EPSILON 1e-9

/* ---- Classification ---- */

static double dist2(const double *a, const double *b) {
        return (a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]);
}

static void scale_axis(double *pts, size_t n, size_t axis) {
        double lo = INFINITY, hi = -INFINITY;
        for (size_t i = 0; i < n; i++) {
                lo = MIN(lo, pts[2 * i + axis]);
                hi = MAX(hi, pts[2 * i + axis]);
        }
        for (size_t i = 0; i < n; i++)
                pts[2 * i + axis] = hi > lo ? (pts[2 * i + axis] - lo) / (hi - lo) : 0;
}

int coshh_classify(const CoshhJob *jobs, size_t n, size_t k, size_t *ret_class) {
        if (k == 0 || (n > 0 && (!jobs || !ret_class)))
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (!(jobs[i].size_s >= 0) || !isfinite(jobs[i].size_s) || !(jobs[i].mix >= 0) || !(jobs[i].mix <= 1))
                        return -EINVAL;
        if (n == 0)
                return 0;

        _cleanup_free_ double *pts = malloc(2 * n * sizeof(double));
        _cleanup_free_ double *centre = malloc(2 * MIN(n, k) * sizeof(double));
        _cleanup_free_ double *sum = malloc(2 * MIN(n, k) * sizeof(double));
        _cleanup_free_ size_t *count = malloc(MIN(n, k) * sizeof(size_t));
        _cleanup_free_ size_t *assign = malloc(n * sizeof(size_t));
        _cleanup_free_ size_t *renumber = malloc(MIN(n, k) * sizeof(size_t));
        if (!pts || !centre || !sum || !count || !assign || !renumber)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                pts[2 * i] = log1p(jobs[i].size_s);
                pts[2 * i + 1] = jobs[i].mix;
        }
        scale_axis(pts, n, 0);
        scale_axis(pts, n, 1);

        /* Farthest-first seeding from the largest job: deterministic, and it never picks a
         * point twice, so k centres exist only where k distinct points do. */
        size_t first = 0;
        for (size_t i = 1; i < n; i++)
                if (pts[2 * i] > pts[2 * first])
                        first = i;
        size_t n_centres = 1;
        memcpy(centre, &pts[2 * first], 2 * sizeof(double));
        while (n_centres < k) {
                size_t far = COSHH_NONE;
                double far_d = 0;
                for (size_t i = 0; i < n; i++) {
                        double d = INFINITY;
                        for (size_t c = 0; c < n_centres; c++)
                                d = MIN(d, dist2(&pts[2 * i], &centre[2 * c]));
                        if (d > far_d) {
                                far = i;
                                far_d = d;
                        }
                }
                if (far == COSHH_NONE)
                        break; /* every job sits on a centre already */
                memcpy(&centre[2 * n_centres++], &pts[2 * far], 2 * sizeof(double));
        }

        /* Lloyd's iterations; each strictly lowers the total squared distance, so they end. */
        for (size_t i = 0; i < n; i++)
                assign[i] = COSHH_NONE;
        for (bool moved = true; moved;) {
                moved = false;
                for (size_t i = 0; i < n; i++) {
                        size_t best = 0;
                        for (size_t c = 1; c < n_centres; c++)
                                if (dist2(&pts[2 * i], &centre[2 * c]) < dist2(&pts[2 * i], &centre[2 * best]))
                                        best = c;
                        if (assign[i] != best) {
                                assign[i] = best;
                                moved = true;
                        }
                }
                memset(sum, 0, 2 * n_centres * sizeof(double));
                memset(count, 0, n_centres * sizeof(size_t));
                for (size_t i = 0; i < n; i++) {
                        sum[2 * assign[i]] += pts[2 * i];
                        sum[2 * assign[i] + 1] += pts[2 * i + 1];
                        count[assign[i]]++;
                }
                for (size_t c = 0; c < n_centres; c++)
                        if (count[c] > 0) {
                                centre[2 * c] = sum[2 * c] / count[c];
                                centre[2 * c + 1] = sum[2 * c + 1] / count[c];
                        }
        }

        /* Number classes by their first job; empty ones disappear. */
        size_t n_classes = 0;
        for (size_t c = 0; c < n_centres; c++)
                renumber[c] = COSHH_NONE;
        for (size_t i = 0; i < n; i++) {
                if (renumber[assign[i]] == COSHH_NONE)
                        renumber[assign[i]] = n_classes++;
                ret_class[i] = renumber[assign[i]];
        }
        return (int) n_classes;
}

/* ---- The class-to-node-type program ---- */

void coshh_plan_done(CoshhPlan *p) {
        if (!p)
                return;
        free(p->theta);
        *p = (CoshhPlan) {};
}

static void glp_probp(glp_prob **p) {
        if (*p)
                glp_delete_prob(*p);
}

int coshh_plan_solve(const double *sigma, const double *psi, size_t n_classes, size_t n_types,
                     CoshhPlan *ret) {
        if (!sigma || !psi || !ret || n_classes == 0 || n_types == 0 || n_classes > 10000 || n_types > 10000)
                return -EINVAL;
        for (size_t i = 0; i < n_classes; i++) {
                if (!(sigma[i] >= 0) || !isfinite(sigma[i]))
                        return -EINVAL;
                for (size_t j = 0; j < n_types; j++)
                        if (!(psi[i * n_types + j] >= 0) || !isfinite(psi[i * n_types + j]))
                                return -EINVAL;
        }

        /* Columns: θ_ij (1 + i·M + j), then γ. Rows: one per class (Σ_j ψ_ij θ_ij − σ_i γ ≥ 0),
         * one per type (Σ_i θ_ij ≤ 1). GLPK's arrays are 1-based. */
        size_t n_theta = n_classes * n_types;
        int gamma_col = (int) n_theta + 1;
        size_t n_nz = 2 * n_theta + n_classes;
        _cleanup_free_ int *ia = malloc((n_nz + 1) * sizeof(int));
        _cleanup_free_ int *ja = malloc((n_nz + 1) * sizeof(int));
        _cleanup_free_ double *ar = malloc((n_nz + 1) * sizeof(double));
        double *theta = calloc(n_theta, sizeof(double));
        if (!ia || !ja || !ar || !theta) {
                free(theta);
                return -ENOMEM;
        }

        _cleanup_(glp_probp) glp_prob *lp = glp_create_prob();
        glp_set_obj_dir(lp, GLP_MAX);
        glp_add_rows(lp, (int) (n_classes + n_types));
        glp_add_cols(lp, gamma_col);
        for (size_t i = 0; i < n_classes; i++)
                glp_set_row_bnds(lp, (int) i + 1, GLP_LO, 0, 0);
        for (size_t j = 0; j < n_types; j++)
                glp_set_row_bnds(lp, (int) (n_classes + j) + 1, GLP_UP, 0, 1);
        for (int c = 1; c <= gamma_col; c++)
                glp_set_col_bnds(lp, c, GLP_LO, 0, 0);
        glp_set_obj_coef(lp, gamma_col, 1);

        size_t k = 0;
        for (size_t i = 0; i < n_classes; i++) {
                for (size_t j = 0; j < n_types; j++) {
                        int col = (int) (i * n_types + j) + 1;
                        k++;
                        ia[k] = (int) i + 1, ja[k] = col, ar[k] = psi[i * n_types + j];
                        k++;
                        ia[k] = (int) (n_classes + j) + 1, ja[k] = col, ar[k] = 1;
                }
                k++;
                ia[k] = (int) i + 1, ja[k] = gamma_col, ar[k] = -sigma[i];
        }
        glp_load_matrix(lp, (int) k, ia, ja, ar);

        glp_smcp parm;
        glp_init_smcp(&parm);
        parm.msg_lev = GLP_MSG_OFF;
        if (glp_simplex(lp, &parm) != 0 || glp_get_status(lp) != GLP_OPT) {
                free(theta);
                /* Σ σ_i = 0 leaves γ unbounded: no arrivals, nothing to match. */
                return glp_get_status(lp) == GLP_UNBND ? -EDOM : -EIO;
        }
        double gamma = glp_get_obj_val(lp);
        if (!(gamma > COSHH_THETA_EPSILON)) {
                free(theta);
                return -EDOM;
        }
        for (size_t c = 0; c < n_theta; c++) {
                double v = glp_get_col_prim(lp, (int) c + 1);
                theta[c] = v > COSHH_THETA_EPSILON ? v : 0;
        }
        *ret = (CoshhPlan) { .n_classes = n_classes, .n_types = n_types, .gamma = gamma, .theta = theta };
        return 0;
}

bool coshh_suggests(const CoshhPlan *p, size_t class, size_t type) {
        if (!p || class >= p->n_classes || type >= p->n_types)
                return false;
        if (p->theta[class * p->n_types + type] > 0)
                return true;
        for (size_t i = 0; i < p->n_classes; i++)
                if (p->theta[i * p->n_types + type] > 0)
                        return false;
        return true;
}

/* ---- Routing ---- */

size_t coshh_route(const CoshhPlan *p, size_t type, const CoshhCandidate *c, size_t n) {
        size_t best = COSHH_NONE;
        double best_deficit = 0;
        for (size_t i = 0; i < n; i++) {
                if (!coshh_suggests(p, c[i].class, type))
                        continue;
                double deficit = (c[i].min_share - c[i].share) * c[i].weight;
                if (c[i].min_share - c[i].share > 0 && (best == COSHH_NONE || deficit > best_deficit)) {
                        best = i;
                        best_deficit = deficit;
                }
        }
        if (best != COSHH_NONE)
                return best;

        double best_level = 0;
        for (size_t i = 0; i < n; i++) {
                if (!coshh_suggests(p, c[i].class, type))
                        continue;
                double level = c[i].share / c[i].weight;
                if (best == COSHH_NONE || level < best_level) {
                        best = i;
                        best_level = level;
                }
        }
        return best;
}
