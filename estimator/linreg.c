/* linreg.c: simple regression by centred updates (with removal), its sliding window, and
 * multiple regression by Givens QR with its sliding window (LINPACK downdating). */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "linreg.h"

void linreg_simple_init(LinregSimple *s) {
        *s = (LinregSimple) { 0 };
}

static bool point_valid(double x, double y, double w) {
        return isfinite(x) && isfinite(y) && isfinite(w) && w > 0;
}

int linreg_simple_add(LinregSimple *s, double x, double y, double w) {
        if (!point_valid(x, y, w))
                return -EINVAL;

        if (s->n == 0) {
                s->shift_x = x;
                s->shift_y = y;
        }
        x -= s->shift_x;
        y -= s->shift_y;

        /* West (1979): with W' = W + w,
         *   x̄' = x̄ + (w/W')(x − x̄),  Sxx' = Sxx + w(x − x̄)(x − x̄'),  Sxy' = Sxy + w(x − x̄)(y − ȳ'). */
        double sum_w = s->sum_w + w;
        double dx = x - s->mean_dx, dy = y - s->mean_dy;
        double mean_dx = s->mean_dx + (w / sum_w) * dx;
        double mean_dy = s->mean_dy + (w / sum_w) * dy;

        s->sxx += w * dx * (x - mean_dx);
        s->sxy += w * dx * (y - mean_dy);
        s->syy += w * dy * (y - mean_dy);
        s->mean_dx = mean_dx;
        s->mean_dy = mean_dy;
        s->sum_w = sum_w;
        s->n++;
        return 0;
}

int linreg_simple_remove(LinregSimple *s, double x, double y, double w) {
        if (!point_valid(x, y, w) || s->n == 0)
                return -EINVAL;

        if (s->n == 1) {
                linreg_simple_init(s);
                return 0;
        }

        /* The add step run backwards: W = W' − w, x̄ = x̄' − (w/W)(x − x̄'), then
         * Sxx = Sxx' − w(x − x̄)(x − x̄'). */
        double sum_w = s->sum_w - w;
        if (!(sum_w > 0))
                return -EINVAL;
        x -= s->shift_x;
        y -= s->shift_y;
        double mean_dx = s->mean_dx - (w / sum_w) * (x - s->mean_dx);
        double mean_dy = s->mean_dy - (w / sum_w) * (y - s->mean_dy);

        s->sxx -= w * (x - mean_dx) * (x - s->mean_dx);
        s->sxy -= w * (x - mean_dx) * (y - s->mean_dy);
        s->syy -= w * (y - mean_dy) * (y - s->mean_dy);
        /* Rounding may leave a sum of squares a hair below zero. */
        s->sxx = s->sxx > 0 ? s->sxx : 0;
        s->syy = s->syy > 0 ? s->syy : 0;
        s->mean_dx = mean_dx;
        s->mean_dy = mean_dy;
        s->sum_w = sum_w;
        s->n--;
        return 0;
}

int linreg_simple_fit(const LinregSimple *s, LinregFit *ret_fit) {
        if (s->n == 0)
                return -ENODATA;

        /* x values that agree to within their own rounding carry no slope information. */
        double mean_x = s->shift_x + s->mean_dx, mean_y = s->shift_y + s->mean_dy;
        double noise = 4 * DBL_EPSILON * fabs(mean_x);
        if (s->n < 2 || !(s->sxx > s->sum_w * noise * noise))
                return -EDOM;

        double slope = s->sxy / s->sxx;
        double sse = s->syy - slope * s->sxy;
        if (sse < 0)
                sse = 0;

        *ret_fit = (LinregFit) {
                .slope = slope,
                .intercept = mean_y - slope * mean_x,
                .mean_x = mean_x,
                .mean_y = mean_y,
                .shift_x = s->shift_x,
                .shift_y = s->shift_y,
                .mean_dx = s->mean_dx,
                .mean_dy = s->mean_dy,
                .sse = sse,
                .r2 = s->syy > 0 ? 1 - sse / s->syy : 1,
                .sum_w = s->sum_w,
                .n = s->n,
        };
        return 0;
}

int linreg_simple_fit_points(const double *x, const double *y, const double *w, size_t n, LinregFit *ret_fit) {
        LinregSimple s;
        int r;

        linreg_simple_init(&s);
        for (size_t i = 0; i < n; i++) {
                r = linreg_simple_add(&s, x[i], y[i], w ? w[i] : 1);
                if (r < 0)
                        return r;
        }
        return linreg_simple_fit(&s, ret_fit);
}

double linreg_predict(const LinregFit *fit, double x) {
        return fit->shift_y + (fit->mean_dy + fit->slope * ((x - fit->shift_x) - fit->mean_dx));
}

void linreg_residuals(const LinregFit *fit, const double *x, const double *y, size_t n, double *ret_residuals) {
        for (size_t i = 0; i < n; i++)
                ret_residuals[i] = y[i] - linreg_predict(fit, x[i]);
}

int linreg_window_init(LinregWindow *win, LinregPoint *storage, size_t capacity) {
        if (!storage || capacity == 0)
                return -EINVAL;

        *win = (LinregWindow) { .points = storage, .capacity = capacity };
        linreg_simple_init(&win->sums);
        return 0;
}

static void window_rebuild(LinregWindow *win) {
        linreg_simple_init(&win->sums);
        for (size_t i = 0; i < win->count; i++) {
                const LinregPoint *p = &win->points[(win->head + i) % win->capacity];
                (void) linreg_simple_add(&win->sums, p->x, p->y, p->w);
        }
        win->removals = 0;
}

int linreg_window_push(LinregWindow *win, double x, double y, double w) {
        if (!point_valid(x, y, w))
                return -EINVAL;

        if (win->count == win->capacity) {
                const LinregPoint *old = &win->points[win->head];
                (void) linreg_simple_remove(&win->sums, old->x, old->y, old->w);
                win->head = (win->head + 1) % win->capacity;
                win->count--;
                win->removals++;
        }

        win->points[(win->head + win->count) % win->capacity] = (LinregPoint) { x, y, w };
        win->count++;

        if (win->removals >= win->capacity)
                window_rebuild(win);
        else
                (void) linreg_simple_add(&win->sums, x, y, w);
        return 0;
}

int linreg_window_fit(const LinregWindow *win, LinregFit *ret_fit) {
        return linreg_simple_fit(&win->sums, ret_fit);
}

int linreg_multi_init(LinregMulti *m, size_t n_features) {
        if (n_features < 1 || n_features > LINREG_MULTI_MAX_FEATURES)
                return -EINVAL;

        *m = (LinregMulti) { .p = n_features + 1 };
        linreg_simple_init(&m->y_stats);
        return 0;
}

static bool multi_row_valid(size_t p, const double *x, double y, double w) {
        if (!point_valid(0, y, w))
                return false;
        for (size_t j = 1; j < p; j++)
                if (!isfinite(x[j - 1]))
                        return false;
        return true;
}

/* The weighted problem is the unweighted one on rows scaled by √w; returns the scaled,
 * shifted right-hand side. */
static double multi_scaled_row(const LinregMulti *m, const double *x, double y, double w, double *ret_row) {
        double sw = sqrt(w);

        ret_row[0] = sw;
        for (size_t j = 1; j < m->p; j++)
                ret_row[j] = sw * (x[j - 1] - m->shift_x[j]);
        return sw * (y - m->shift_y);
}

int linreg_multi_add(LinregMulti *m, const double *x, double y, double w) {
        double row[LINREG_MULTI_MAX_COLUMNS];
        size_t p = m->p;

        if (!multi_row_valid(p, x, y, w))
                return -EINVAL;

        if (m->n == 0) {
                for (size_t j = 1; j < p; j++)
                        m->shift_x[j] = x[j - 1];
                m->shift_y = y;
        }

        double b = multi_scaled_row(m, x, y, w, row);

        /* Rotate the new row into R, zeroing it column by column; what is left of b after all
         * p rotations is this row's contribution to the residual sum of squares. */
        for (size_t j = 0; j < p; j++) {
                if (row[j] == 0)
                        continue;
                double h = hypot(m->r[j][j], row[j]);
                double c = m->r[j][j] / h, s = row[j] / h;
                m->r[j][j] = h;
                for (size_t k = j + 1; k < p; k++) {
                        double t = m->r[j][k];
                        m->r[j][k] = c * t + s * row[k];
                        row[k] = -s * t + c * row[k];
                }
                double t = m->qty[j];
                m->qty[j] = c * t + s * b;
                b = -s * t + c * b;
        }
        m->sse += b * b;
        (void) linreg_simple_add(&m->y_stats, 0, y, w);
        m->n++;
        return 0;
}

int linreg_multi_fit(const LinregMulti *m, LinregMultiFit *ret_fit) {
        LinregMultiFit fit = { .p = m->p, .n = m->n, .shift_y = m->shift_y, .sse = m->sse };
        size_t p = m->p;

        if (m->n < p)
                return -ENODATA;

        double max_diag = 0;
        for (size_t j = 0; j < p; j++)
                max_diag = fmax(max_diag, fabs(m->r[j][j]));
        for (size_t j = 0; j < p; j++)
                if (!(fabs(m->r[j][j]) > 1e-12 * max_diag))
                        return -EDOM;

        /* Back substitution R·β = Qᵀy, in the shifted coordinates. */
        double beta[LINREG_MULTI_MAX_COLUMNS] = { 0 };
        for (size_t jj = p; jj-- > 0;) {
                double v = m->qty[jj];
                for (size_t k = jj + 1; k < p; k++)
                        v -= m->r[jj][k] * beta[k];
                beta[jj] = v / m->r[jj][jj];
        }

        /* Back to the caller's coordinates: y = shift_y + β0 + Σ βj (xj − shift_j). */
        fit.coef_shifted0 = beta[0];
        fit.coef[0] = m->shift_y + beta[0];
        for (size_t j = 1; j < p; j++) {
                fit.coef[j] = beta[j];
                fit.shift_x[j] = m->shift_x[j];
                fit.coef[0] -= beta[j] * m->shift_x[j];
        }
        fit.r2 = m->y_stats.syy > 0 ? 1 - m->sse / m->y_stats.syy : 1;

        *ret_fit = fit;
        return 0;
}

double linreg_multi_predict(const LinregMultiFit *fit, const double *x) {
        double y = fit->shift_y + fit->coef_shifted0;

        for (size_t j = 1; j < fit->p; j++)
                y += fit->coef[j] * (x[j - 1] - fit->shift_x[j]);
        return y;
}

/* Removes a row that was added, by the LINPACK/Saunders downdate (dchdd). With R̃ = [R; 0] and
 * a = R⁻ᵀz (z the scaled, shifted row), ‖a‖² is the row's leverage and α = √(1 − ‖a‖²); rotations
 * in the planes (i, p), i = p−1 … 0, carry [a; α] to [0; 1], and the same rotations carry
 * [R; 0] to [R'; zᵀ] with R'ᵀR' = RᵀR − zzᵀ. Qᵀy is run through them backwards (the removed b is
 * known at the end, not the start), and what is left, ζ, is the row's share of the residual sum.
 * -EDOM, with m unchanged, when the downdate would lose too much precision (leverage near 1,
 * which includes every row of a square or singular R) or the residual sum would go negative
 * beyond rounding: the caller then refactorises from the rows it kept. */
static int multi_downdate(LinregMulti *m, const double *x, double y, double w) {
        double z[LINREG_MULTI_MAX_COLUMNS], a[LINREG_MULTI_MAX_COLUMNS];
        double c[LINREG_MULTI_MAX_COLUMNS], s[LINREG_MULTI_MAX_COLUMNS], qty[LINREG_MULTI_MAX_COLUMNS];
        size_t p = m->p;

        if (m->n == 0)
                return -EINVAL;
        if (m->n == 1)
                return linreg_multi_init(m, p - 1);

        double b = multi_scaled_row(m, x, y, w, z);

        /* Rᵀa = z by forward substitution. */
        double leverage = 0;
        for (size_t i = 0; i < p; i++) {
                double v = z[i];
                if (!(fabs(m->r[i][i]) > 0))
                        return -EDOM;
                for (size_t k = 0; k < i; k++)
                        v -= m->r[k][i] * a[k];
                a[i] = v / m->r[i][i];
                leverage += a[i] * a[i];
        }
        if (!(leverage < LINREG_MULTI_DOWNDATE_MAX_LEVERAGE))
                return -EDOM;

        double alpha = sqrt(1 - leverage);
        for (size_t i = p; i-- > 0;) {
                double h = hypot(alpha, a[i]);
                c[i] = alpha / h;
                s[i] = a[i] / h;
                alpha = h;
        }

        /* Row i is touched by rotation i only, so Qᵀy can be solved for from the known end
         * (the extra row ends up holding b). */
        double zeta = b, scale = m->sse;
        for (size_t i = 0; i < p; i++) {
                qty[i] = (m->qty[i] - s[i] * zeta) / c[i];
                zeta = c[i] * zeta - s[i] * qty[i];
                scale += m->qty[i] * m->qty[i];
        }
        double sse = m->sse - zeta * zeta;
        if (sse < -1e-9 * scale)
                return -EDOM;

        for (size_t j = 0; j < p; j++) {
                double xx = 0;
                for (size_t i = j + 1; i-- > 0;) {
                        double t = c[i] * xx + s[i] * m->r[i][j];
                        m->r[i][j] = c[i] * m->r[i][j] - s[i] * xx;
                        xx = t;
                }
        }
        memcpy(m->qty, qty, p * sizeof(double));
        m->sse = sse > 0 ? sse : 0;
        (void) linreg_simple_remove(&m->y_stats, 0, y, w);
        m->n--;
        return 0;
}

int linreg_multi_window_init(LinregMultiWindow *win, LinregMultiRow *storage, size_t capacity, size_t n_features) {
        LinregMulti qr;
        int r;

        r = linreg_multi_init(&qr, n_features);
        if (r < 0)
                return r;
        if (!storage || capacity < qr.p)
                return -EINVAL;

        *win = (LinregMultiWindow) { .rows = storage, .capacity = capacity, .qr = qr };
        return 0;
}

static void multi_window_refactorise(LinregMultiWindow *win) {
        (void) linreg_multi_init(&win->qr, win->qr.p - 1);
        for (size_t i = 0; i < win->count; i++) {
                const LinregMultiRow *row = &win->rows[(win->head + i) % win->capacity];
                (void) linreg_multi_add(&win->qr, row->x, row->y, row->w);
        }
        win->removals = 0;
        win->refactorisations++;
}

/* `old` has already left the ring: a refactorisation rebuilds from what is still there. */
static void multi_window_downdate(LinregMultiWindow *win, const LinregMultiRow *old) {
        if (++win->removals >= win->capacity || multi_downdate(&win->qr, old->x, old->y, old->w) < 0)
                multi_window_refactorise(win);
}

int linreg_multi_window_push(LinregMultiWindow *win, const double *x, double y, double w) {
        size_t n_features = win->qr.p - 1;

        if (!multi_row_valid(win->qr.p, x, y, w))
                return -EINVAL;

        LinregMultiRow row = { .y = y, .w = w };
        memcpy(row.x, x, n_features * sizeof(double));

        if (win->count < win->capacity) {
                (void) linreg_multi_add(&win->qr, x, y, w);
                win->rows[(win->head + win->count) % win->capacity] = row;
                win->count++;
                return 0;
        }

        /* Add before removing: among capacity + 1 rows the oldest has a lower leverage, and a
         * window of exactly p rows would otherwise pass through a singular R. */
        LinregMultiRow old = win->rows[win->head];
        (void) linreg_multi_add(&win->qr, x, y, w);
        win->rows[win->head] = row;
        win->head = (win->head + 1) % win->capacity;
        multi_window_downdate(win, &old);
        return 0;
}

int linreg_multi_window_drop_oldest(LinregMultiWindow *win) {
        if (win->count == 0)
                return -ENODATA;

        LinregMultiRow old = win->rows[win->head];
        win->head = (win->head + 1) % win->capacity;
        win->count--;
        multi_window_downdate(win, &old);
        return 0;
}

static bool multi_row_equal(const LinregMultiRow *row, size_t n_features, const double *x, double y, double w) {
        if (row->y != y || row->w != w)
                return false;
        for (size_t j = 0; j < n_features; j++)
                if (row->x[j] != x[j])
                        return false;
        return true;
}

int linreg_multi_window_remove(LinregMultiWindow *win, const double *x, double y, double w) {
        size_t n_features = win->qr.p - 1, found;

        if (!multi_row_valid(win->qr.p, x, y, w))
                return -EINVAL;

        for (found = 0; found < win->count; found++)
                if (multi_row_equal(&win->rows[(win->head + found) % win->capacity], n_features, x, y, w))
                        break;
        if (found == win->count)
                return -ENOENT;

        /* Close the gap by moving the older rows up one slot, which keeps the ring in order. */
        LinregMultiRow old = win->rows[(win->head + found) % win->capacity];
        for (size_t i = found; i > 0; i--)
                win->rows[(win->head + i) % win->capacity] = win->rows[(win->head + i - 1) % win->capacity];
        win->head = (win->head + 1) % win->capacity;
        win->count--;
        multi_window_downdate(win, &old);
        return 0;
}

int linreg_multi_window_fit(const LinregMultiWindow *win, LinregMultiFit *ret_fit) {
        return linreg_multi_fit(&win->qr, ret_fit);
}
