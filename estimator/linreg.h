/* linreg.h: least squares — simple linear regression with centred (Welford/West) updates that
 * can also remove points, a sliding window on top of it, and multiple regression by Givens QR
 * with a sliding window that removes rows by QR downdating.
 * Pure: no I/O, no globals, no allocation (the window's storage belongs to the caller). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Simple weighted regression y ≈ a + b·x, kept as weighted means and centred co-moments
 *     W = Σw,  x̄ = Σwx/W,  ȳ = Σwy/W,  Sxx = Σw(x−x̄)²,  Sxy = Σw(x−x̄)(y−ȳ),  Syy = Σw(y−ȳ)²
 * updated one point at a time (West 1979, the weighted form of Welford's update), on data
 * shifted by the first point (x − x₀ is exact for nearby x, and the running means then stay
 * small numbers with small rounding). Unlike the normal equations on raw sums (Σx², (Σx)²/n,
 * ...), nothing here subtracts two huge nearly equal numbers, so x around 1e9 with a spread of
 * 1 keeps full precision. */
typedef struct LinregSimple {
        size_t n;
        double sum_w;
        double shift_x, shift_y;        /* the first point added */
        double mean_dx, mean_dy;        /* x̄ − shift_x, ȳ − shift_y */
        double sxx, sxy, syy;
} LinregSimple;

typedef struct LinregFit {
        double slope;           /* b = Sxy / Sxx */
        double intercept;       /* a = ȳ − b·x̄ (the value at x = 0) */
        double mean_x, mean_y;  /* x̄, ȳ */
        double shift_x, shift_y, mean_dx, mean_dy;  /* for linreg_predict() */
        double sse;             /* weighted residual sum of squares Σw(y − ŷ)² = Syy − Sxy²/Sxx */
        double r2;              /* 1 − SSE/Syy; 1 when y is constant (the fit is exact) */
        double sum_w;
        size_t n;
} LinregFit;

void linreg_simple_init(LinregSimple *s);
/* w > 0 (1 for the unweighted fit). -EINVAL on a non-finite input or w <= 0. */
int linreg_simple_add(LinregSimple *s, double x, double y, double w);
/* Exactly undoes linreg_simple_add(s, x, y, w) for a point that was added (up to rounding).
 * -EINVAL if s is empty or the input is invalid. */
int linreg_simple_remove(LinregSimple *s, double x, double y, double w);
/* -ENODATA with no points; -EDOM when the x values do not spread (fewer than two distinct x
 * values, to within the rounding of x): the slope is undefined. */
int linreg_simple_fit(const LinregSimple *s, LinregFit *ret_fit);
/* Convenience: fit n points in one call; w may be NULL for unit weights. */
int linreg_simple_fit_points(const double *x, const double *y, const double *w, size_t n, LinregFit *ret_fit);

/* ŷ(x) = ȳ + b·(x − x̄), evaluated in the shifted coordinates: nothing is lost for large x. */
double linreg_predict(const LinregFit *fit, double x);
/* ret_residuals[i] = y[i] − ŷ(x[i]). */
void linreg_residuals(const LinregFit *fit, const double *x, const double *y, size_t n, double *ret_residuals);

/* Sliding window of the last `capacity` points over caller-owned storage. Pushing into a full
 * window removes the oldest point with linreg_simple_remove(); because removal can slowly
 * accumulate rounding error, the sums are rebuilt from the stored points after every
 * `capacity` removals (amortised O(1) per push). */
typedef struct LinregPoint {
        double x, y, w;
} LinregPoint;

typedef struct LinregWindow {
        LinregPoint *points;    /* ring buffer, capacity entries, owned by the caller */
        size_t capacity;
        size_t head;            /* index of the oldest point */
        size_t count;
        size_t removals;        /* since the last rebuild */
        LinregSimple sums;
} LinregWindow;

int linreg_window_init(LinregWindow *win, LinregPoint *storage, size_t capacity);
int linreg_window_push(LinregWindow *win, double x, double y, double w);
int linreg_window_fit(const LinregWindow *win, LinregFit *ret_fit);

/* Multiple weighted regression y ≈ β0 + Σ βj·xj by Givens rotations: each row updates the
 * upper-triangular R and Qᵀy of the QR factorisation in O(p²), without forming XᵀX (whose
 * condition number is the square of X's). The first row's x and y are subtracted from every
 * row before rotating (a free shift that the intercept absorbs), so large offsets such as
 * timestamps do not swamp the spread. Rows are removed through LinregMultiWindow below, which
 * keeps them and so can both check a removal and refactorise from them. */
#define LINREG_MULTI_MAX_FEATURES 7
#define LINREG_MULTI_MAX_COLUMNS (LINREG_MULTI_MAX_FEATURES + 1)

typedef struct LinregMulti {
        size_t p;                                /* columns: the intercept + n_features */
        size_t n;
        double shift_x[LINREG_MULTI_MAX_COLUMNS]; /* [0] unused */
        double shift_y;
        double r[LINREG_MULTI_MAX_COLUMNS][LINREG_MULTI_MAX_COLUMNS];
        double qty[LINREG_MULTI_MAX_COLUMNS];
        double sse;                              /* Σ of the rotated-out residual components² */
        LinregSimple y_stats;                    /* for Syy (R²); x is unused there */
} LinregMulti;

typedef struct LinregMultiFit {
        size_t p;
        double coef[LINREG_MULTI_MAX_COLUMNS];   /* β0 (at x = 0), β1..βp−1 */
        double shift_x[LINREG_MULTI_MAX_COLUMNS];
        double shift_y;
        double coef_shifted0;                    /* intercept at x = shift: used by predict */
        double sse, r2;
        size_t n;
} LinregMultiFit;

/* -EINVAL unless 1 <= n_features <= LINREG_MULTI_MAX_FEATURES. */
int linreg_multi_init(LinregMulti *m, size_t n_features);
int linreg_multi_add(LinregMulti *m, const double *x, double y, double w);
/* -ENODATA with fewer rows than columns; -EDOM when X is rank deficient (a feature constant or
 * collinear with others, to within 1e-12 relative to the largest diagonal of R). */
int linreg_multi_fit(const LinregMulti *m, LinregMultiFit *ret_fit);
double linreg_multi_predict(const LinregMultiFit *fit, const double *x);

/* Sliding window of the last `capacity` rows for multiple regression, over caller-owned storage.
 * A row leaves by the LINPACK/Saunders downdate (LINPACK's dchdd, after Saunders 1972): solve
 * Rᵀa = z, then p orthogonal Givens rotations carry [R; 0] to [R'; zᵀ], with Qᵀy and the residual
 * sum updated alongside, O(p²) like an add. It is mixed stable (Stewart 1979), unlike hyperbolic
 * rotations, but its error grows like 1/(1 − leverage of the row): a row whose leverage exceeds
 * LINREG_MULTI_DOWNDATE_MAX_LEVERAGE (at most two digits lost in one downdate), or a downdate
 * that fails, triggers a refactorisation of the window's rows instead, and so does every
 * `capacity`-th removal (re-shifting to the oldest row), so rounding error never accumulates
 * over more than `capacity` downdates. A push into a full window adds the new row before the
 * oldest leaves, which keeps the leaving row's leverage low. */
#define LINREG_MULTI_DOWNDATE_MAX_LEVERAGE 0.99

typedef struct LinregMultiRow {
        double x[LINREG_MULTI_MAX_FEATURES];
        double y, w;
} LinregMultiRow;

typedef struct LinregMultiWindow {
        LinregMultiRow *rows;   /* ring buffer, capacity entries, owned by the caller */
        size_t capacity;
        size_t head;            /* index of the oldest row */
        size_t count;
        size_t removals;        /* downdates since the last refactorisation */
        size_t refactorisations; /* for tests and benchmarks: how often the rows were refitted */
        LinregMulti qr;
} LinregMultiWindow;

/* -EINVAL without storage, with a bad n_features, or with capacity < n_features + 1: such a window
 * could never hold enough rows to determine the coefficients. */
int linreg_multi_window_init(LinregMultiWindow *win, LinregMultiRow *storage, size_t capacity, size_t n_features);
/* Adds a row; into a full window, the oldest row leaves. -EINVAL on a non-finite x or y or w <= 0
 * (the window is then unchanged). */
int linreg_multi_window_push(LinregMultiWindow *win, const double *x, double y, double w);
/* Removes the oldest row. -ENODATA when the window is empty. */
int linreg_multi_window_drop_oldest(LinregMultiWindow *win);
/* Removes the oldest row equal to (x, y, w). -ENOENT when the window holds no such row: a row
 * that was never added (or already left) is refused, not subtracted. */
int linreg_multi_window_remove(LinregMultiWindow *win, const double *x, double y, double w);
/* As linreg_multi_fit(): -ENODATA while the window holds fewer rows than columns (the system is
 * underdetermined), -EDOM when its rows are rank deficient. */
int linreg_multi_window_fit(const LinregMultiWindow *win, LinregMultiFit *ret_fit);
