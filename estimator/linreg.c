/* linreg.c: simple regression by centred updates (with removal), its sliding window, and
 * multiple regression by Givens QR. */
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

int linreg_multi_add(LinregMulti *m, const double *x, double y, double w) {
        double row[LINREG_MULTI_MAX_COLUMNS];
        size_t p = m->p;

        if (!point_valid(0, y, w))
                return -EINVAL;
        for (size_t j = 1; j < p; j++)
                if (!isfinite(x[j - 1]))
                        return -EINVAL;

        if (m->n == 0) {
                for (size_t j = 1; j < p; j++)
                        m->shift_x[j] = x[j - 1];
                m->shift_y = y;
        }

        /* The weighted problem is the unweighted one on rows scaled by √w. */
        double sw = sqrt(w);
        row[0] = sw;
        for (size_t j = 1; j < p; j++)
                row[j] = sw * (x[j - 1] - m->shift_x[j]);
        double b = sw * (y - m->shift_y);

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
