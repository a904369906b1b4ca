/* sim-model.c: CPU sharing, the thrashing penalty and step profiles (see sim-model.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "sim-model.h"

double sim_thrash_penalty(double working_set_bytes, double limit_bytes, double exponent) {
        if (limit_bytes <= 0 || working_set_bytes <= limit_bytes)
                return 1.0;
        return pow(limit_bytes / working_set_bytes, exponent);
}

int sim_cfs_share(const SimShareReq *req, size_t n, double capacity_cpus, double *ret_got, size_t *scratch) {
        if (!(capacity_cpus >= 0))
                return -EINVAL;
        double demand = 0, weights = 0;
        for (size_t i = 0; i < n; i++) {
                if (!(req[i].demand_cpus >= 0) || !(req[i].weight > 0))
                        return -EINVAL;
                demand += req[i].demand_cpus;
                weights += req[i].weight;
        }
        if (demand <= capacity_cpus) {
                /* Nobody waits: everyone runs at its demand. */
                for (size_t i = 0; i < n; i++)
                        ret_got[i] = req[i].demand_cpus;
                return 0;
        }
        /* Water filling: the tasks wanting least per unit of weight are satisfied first; the rest
         * share what is left in proportion to their weights. n is a node's tasks: insertion sort. */
        for (size_t i = 0; i < n; i++) {
                size_t k = i;
                double key = req[i].demand_cpus / req[i].weight;
                while (k > 0 && req[scratch[k - 1]].demand_cpus / req[scratch[k - 1]].weight > key) {
                        scratch[k] = scratch[k - 1];
                        k--;
                }
                scratch[k] = i;
        }
        double left = capacity_cpus;
        size_t i = 0;
        for (; i < n; i++) {
                const SimShareReq *r = &req[scratch[i]];
                if (r->demand_cpus / r->weight > left / weights)
                        break;
                ret_got[scratch[i]] = r->demand_cpus;
                left -= r->demand_cpus;
                weights -= r->weight;
        }
        double level = weights > 0 ? MAX(left, 0.0) / weights : 0;
        for (; i < n; i++)
                ret_got[scratch[i]] = req[scratch[i]].weight * level;
        return 0;
}

unsigned sim_profile_step(const SimProfile *p, double progress) {
        unsigned k = 0;
        /* A tolerance so that a task stopped exactly at a step's start is in that step. */
        while (k + 1 < p->n && progress >= (double) p->at[k + 1] - 1e-9)
                k++;
        return k;
}

double sim_profile_at(const SimProfile *p, double progress) {
        return p->value[sim_profile_step(p, progress)];
}

double sim_profile_max(const SimProfile *p) {
        double m = 0;
        for (unsigned k = 0; k < p->n; k++)
                m = MAX(m, p->value[k]);
        return m;
}

double sim_profile_next_at(const SimProfile *p, unsigned step) {
        return step + 1 < p->n ? (double) p->at[step + 1] : 2.0;
}

int sim_profile_parse(const char *s, double scale, SimProfile *ret) {
        SimProfile p = { 0 };
        const char *c = s;
        for (;;) {
                char *end;
                if (p.n == SIM_PROFILE_MAX)
                        return -EINVAL;
                errno = 0;
                double v = strtod(c, &end);
                if (errno || end == c || !isfinite(v) || v < 0)
                        return -EINVAL;
                c = end;
                /* Memory sizes may carry a binary suffix: 512M, 1.5G. */
                const char *suffixes = "KMGT";
                const char *u = *c ? strchr(suffixes, *c) : NULL;
                if (u) {
                        v *= pow(1024.0, (double) (u - suffixes + 1));
                        c++;
                }
                double at = 0;
                if (*c == '@') {
                        c++;
                        at = strtod(c, &end);
                        if (end == c || !(at >= 0 && at < 1))
                                return -EINVAL;
                        c = end;
                }
                if ((p.n == 0 && at != 0) || (p.n > 0 && !(at > p.at[p.n - 1])))
                        return -EINVAL;
                p.at[p.n] = (float) at;
                p.value[p.n] = v * scale;
                p.n++;
                if (*c == '\0')
                        break;
                if (*c != ';')
                        return -EINVAL;
                c++;
        }
        *ret = p;
        return 0;
}
