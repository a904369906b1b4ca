/* sched-coshh.c: COSHH placement in the scheduler (SchedParams.placement = coshh). The policy
 * still orders the jobs; COSHH only says which node types a job's class may go to. Nodes of one
 * type have the same speed, CPUs and memory. A class's rate on a type is how many of its jobs
 * per second the type's nodes complete: as many tasks side by side as the node's CPUs and
 * memory hold, each running at the node's speed. Memory-heavy classes therefore go where
 * memory is plentiful and CPU-heavy ones where CPUs are fast, where the cluster has both. */
#include <math.h>
#include <stdlib.h>

#include "sched-internal.h"

/* Few classes: the thesis's point is a search over classes, not jobs. */
#define SCHED_COSHH_MAX_CLASSES 8

static bool same_type(const PlacementNode *a, const PlacementNode *b) {
        return placement_node_speed(a) == placement_node_speed(b) && a->capacity_cpus == b->capacity_cpus &&
                a->capacity_memory_bytes == b->capacity_memory_bytes;
}

void sched_coshh_done(Sched *s) {
        coshh_plan_done(&s->coshh_plan);
        s->coshh_valid = false;
        free(s->coshh_node_type);
        free(s->coshh_types);
        s->coshh_node_type = NULL;
        s->coshh_types = NULL;
        s->n_coshh_node_type = s->n_coshh_types = 0;
}

/* Groups the ready nodes into types. Returns 1 if the types changed, 0 if not, -ENOMEM. */
static int node_types(Sched *s) {
        _cleanup_free_ size_t *type = malloc(MAX(s->n_nodes, (size_t) 1) * sizeof(size_t));
        _cleanup_free_ PlacementNode *types = malloc(MAX(s->n_nodes, (size_t) 1) * sizeof(PlacementNode));
        if (!type || !types)
                return -ENOMEM;
        size_t n_types = 0;
        for (size_t i = 0; i < s->n_nodes; i++) {
                type[i] = COSHH_NONE;
                if (s->nodes[i].lost)
                        continue;
                size_t t = 0;
                while (t < n_types && !same_type(&types[t], &s->nodes[i]))
                        t++;
                if (t == n_types)
                        types[n_types++] = s->nodes[i];
                type[i] = t;
        }
        bool same = n_types == s->n_coshh_types && s->n_nodes == s->n_coshh_node_type;
        for (size_t i = 0; same && i < s->n_nodes; i++)
                same = type[i] == s->coshh_node_type[i];
        for (size_t t = 0; same && t < n_types; t++)
                same = same_type(&types[t], &s->coshh_types[t]);
        if (same)
                return 0;
        free(s->coshh_node_type);
        free(s->coshh_types);
        s->coshh_node_type = TAKE_PTR(type);
        s->coshh_types = TAKE_PTR(types);
        s->n_coshh_node_type = s->n_nodes;
        s->n_coshh_types = n_types;
        return 1;
}

/* A job's task request (tasks of a phase ask alike): its pending tasks kept as a count, or the
 * first task the scheduler holds a record of. Returns false when it holds none. */
static bool job_request(const Sched *s, const SchedJob *j, double *ret_cpus, uint64_t *ret_memory) {
        if (j->run_n > 0) {
                *ret_cpus = j->run_cpu_cores;
                *ret_memory = j->run_memory_bytes;
                return true;
        }
        uint32_t ti = j->pending_head != SCHED_NIL ? j->pending_head :
                j->suspended_head != SCHED_NIL ? j->suspended_head : j->active_head;
        if (ti == SCHED_NIL)
                return false;
        const SchedTask *t = sched_task_at(s, ti);
        *ret_cpus = t->cpu_cores;
        *ret_memory = t->memory_bytes;
        return true;
}

typedef struct ClassSum {
        double n, size_s, cpus, memory_bytes;
} ClassSum;

static int plan(Sched *s) {
        coshh_plan_done(&s->coshh_plan);
        s->coshh_valid = false;
        for (size_t slot = 0; slot < s->n_slots; slot++)
                s->jobs[slot].coshh_class = COSHH_NONE;
        if (s->n_coshh_types == 0)
                return 0;

        double cluster_cpus = 0, cluster_memory = 0;
        for (size_t t = 0; t < s->n_coshh_types; t++) {
                cluster_cpus += s->coshh_types[t].capacity_cpus;
                cluster_memory += (double) s->coshh_types[t].capacity_memory_bytes;
        }
        /* The memory a CPU has on the cluster as a whole: the mix axis is 0.5 there. */
        double memory_per_cpu = cluster_cpus > 0 ? cluster_memory / cluster_cpus : 0;

        _cleanup_free_ uint32_t *slots = malloc(MAX(s->n_slots, (size_t) 1) * sizeof(uint32_t));
        _cleanup_free_ CoshhJob *features = malloc(MAX(s->n_slots, (size_t) 1) * sizeof(CoshhJob));
        _cleanup_free_ size_t *cls = malloc(MAX(s->n_slots, (size_t) 1) * sizeof(size_t));
        if (!slots || !features || !cls)
                return -ENOMEM;
        size_t n = 0;
        for (size_t slot = 0; slot < s->n_slots; slot++) {
                const SchedJob *j = &s->jobs[slot];
                double cpus;
                uint64_t memory;
                /* A job with no size estimate yet has no class: its rate would be infinite, and
                 * the program would pin it to one type for a sliver of it. It goes anywhere. */
                if (!j->used || j->real_done || !job_request(s, j, &cpus, &memory) || !(sched_job_size(j) > 0))
                        continue;
                double x = cpus > 0 && memory_per_cpu > 0 ? (double) memory / cpus / memory_per_cpu : 1;
                slots[n] = (uint32_t) slot;
                features[n++] = (CoshhJob) { .size_s = sched_job_size(j), .mix = x / (1 + x) };
        }
        if (n == 0)
                return 0;
        int k = coshh_classify(features, n, SCHED_COSHH_MAX_CLASSES, cls);
        if (k <= 0)
                return k;

        ClassSum sum[SCHED_COSHH_MAX_CLASSES] = {};
        for (size_t i = 0; i < n; i++) {
                double cpus = 0;
                uint64_t memory = 0;
                (void) job_request(s, &s->jobs[slots[i]], &cpus, &memory);
                ClassSum *c = &sum[cls[i]];
                c->n++;
                c->size_s += features[i].size_s;
                c->cpus += cpus;
                c->memory_bytes += (double) memory;
        }
        /* σ: the jobs of each class in the system, as the thesis re-plans when they change. */
        double sigma[SCHED_COSHH_MAX_CLASSES];
        _cleanup_free_ double *psi = calloc((size_t) k * s->n_coshh_types, sizeof(double));
        if (!psi)
                return -ENOMEM;
        for (size_t i = 0; i < (size_t) k; i++) {
                sigma[i] = sum[i].n;
                double size_s = sum[i].size_s / sum[i].n;
                double cpus = MAX(sum[i].cpus / sum[i].n, 1e-3), memory = sum[i].memory_bytes / sum[i].n;
                for (size_t t = 0; t < s->n_coshh_types; t++) {
                        const PlacementNode *ty = &s->coshh_types[t];
                        if (cpus > ty->capacity_cpus + PLACEMENT_CPU_EPSILON || memory > (double) ty->capacity_memory_bytes)
                                continue;
                        size_t count = 0;
                        for (size_t m = 0; m < s->n_coshh_node_type; m++)
                                count += s->coshh_node_type[m] == t;
                        /* CPUs its tasks can use side by side on one node of the type. */
                        double usable = memory > 0 ? MIN(ty->capacity_cpus, (double) ty->capacity_memory_bytes / memory * cpus) :
                                ty->capacity_cpus;
                        psi[i * s->n_coshh_types + t] = (double) count * usable * placement_node_speed(ty) / size_s;
                }
        }
        int r = coshh_plan_solve(sigma, psi, (size_t) k, s->n_coshh_types, &s->coshh_plan);
        if (r == -EDOM || r == -EIO)
                return 0; /* no plan: first fit, until the jobs or nodes change */
        if (r < 0)
                return r;
        s->coshh_valid = true;
        for (size_t i = 0; i < n; i++)
                s->jobs[slots[i]].coshh_class = cls[i];
        return 0;
}

int sched_coshh_prepare(Sched *s) {
        if (s->params.placement != SCHED_PLACEMENT_COSHH) {
                if (s->coshh_valid)
                        sched_coshh_done(s);
                return 0;
        }
        int changed = node_types(s);
        if (changed < 0)
                return changed;
        if (!changed && s->coshh_plan_generation == s->coshh_generation)
                return 0;
        s->coshh_plan_generation = s->coshh_generation;
        return plan(s);
}

bool sched_coshh_allows(const Sched *s, const SchedJob *j, size_t node) {
        if (!s->coshh_valid || j->coshh_class == COSHH_NONE || node >= s->n_coshh_node_type ||
            s->coshh_node_type[node] == COSHH_NONE)
                return true;
        return coshh_suggests(&s->coshh_plan, j->coshh_class, s->coshh_node_type[node]);
}
