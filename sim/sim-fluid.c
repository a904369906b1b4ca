/* sim-fluid.c: the fluid bounds (ps, fluid-srpt, fluid-fifo), simulated by the engine alone: a
 * phase of n unfinished tasks takes at most n × its CPU request, spread evenly over them, so
 * its tasks finish in order of work as its level (the work each has done) rises. ps shares the
 * cluster by weighted max-min among active phases; fluid-srpt and fluid-fifo fill it in job
 * order (smallest remaining work, or oldest first).
 *
 * fluid-fifo keeps its active phases in job order (arrival order) and fills the cluster from
 * the head, so an event costs what the few phases it serves cost, not the whole queue; when two
 * of them arrived within rounding of each other it sorts as the others do, whose tie-breaking
 * (the larger demand first) it must keep. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "macro.h"
#include "sim-engine-internal.h"

static double capacity(const Engine *e) {
        double c = 0;
        for (size_t k = 0; k < e->n_nodes; k++)
                c += e->nodes[k].spec.cpus * e->nodes[k].spec.speed;
        return c;
}

static unsigned unfinished(const Engine *e, size_t pi) {
        return sim_phase_spec(e, pi)->n_tasks - e->phases[pi].n_done;
}

static bool fifo_fast(const Engine *e) {
        return e->p.policy == SIM_POLICY_FLUID_FIFO;
}

static bool srpt(const Engine *e) {
        return e->p.policy == SIM_POLICY_FLUID_SRPT;
}

/* fluid-fifo and fluid-srpt keep the phases with a rate in `served`: an event costs what they
 * cost, not the whole queue. */
static bool served_fast(const Engine *e) {
        return fifo_fast(e) || srpt(e);
}

static void srpt_heap_push(Engine *e, uint32_t pi);
static int cmp_active_slot(const void *a, const void *b, void *userdata);

/* ---- fluid-fifo's job order ---- */

static double arrival(const Engine *e, uint32_t pi) {
        return e->w->jobs[e->phases[pi].job].arrival_s;
}

/* Two neighbours (a before b) the sort would order by demand rather than arrival. A margin at
 * the later arrival bounds every pair's, so with no such neighbours no pair is one. */
static bool near_tie(const Engine *e, uint32_t a, uint32_t b) {
        return arrival(e, b) - arrival(e, a) <= 1e-9 * MAX(fabs(arrival(e, b)), 1.0);
}

static void fifo_append(Engine *e, uint32_t pi) {
        Phase *ph = &e->phases[pi];
        ph->fifo_prev = e->fifo_tail;
        ph->fifo_next = SIM_NO_PHASE;
        if (e->fifo_tail != SIM_NO_PHASE) {
                e->phases[e->fifo_tail].fifo_next = pi;
                e->fifo_near_ties += near_tie(e, e->fifo_tail, pi);
        } else
                e->fifo_head = pi;
        e->fifo_tail = pi;
}

/* The job's next phase takes its previous phase's place (same arrival: no tie changes). */
static void fifo_replace(Engine *e, uint32_t old, uint32_t pi) {
        Phase *o = &e->phases[old], *ph = &e->phases[pi];
        ph->fifo_prev = o->fifo_prev;
        ph->fifo_next = o->fifo_next;
        if (o->fifo_prev != SIM_NO_PHASE)
                e->phases[o->fifo_prev].fifo_next = pi;
        else
                e->fifo_head = pi;
        if (o->fifo_next != SIM_NO_PHASE)
                e->phases[o->fifo_next].fifo_prev = pi;
        else
                e->fifo_tail = pi;
}

static void fifo_unlink(Engine *e, uint32_t pi) {
        Phase *ph = &e->phases[pi];
        uint32_t p = ph->fifo_prev, n = ph->fifo_next;
        if (p != SIM_NO_PHASE)
                e->fifo_near_ties -= near_tie(e, p, pi);
        if (n != SIM_NO_PHASE)
                e->fifo_near_ties -= near_tie(e, pi, n);
        if (p != SIM_NO_PHASE && n != SIM_NO_PHASE)
                e->fifo_near_ties += near_tie(e, p, n);
        if (p != SIM_NO_PHASE)
                e->phases[p].fifo_next = n;
        else
                e->fifo_head = n;
        if (n != SIM_NO_PHASE)
                e->phases[n].fifo_prev = p;
        else
                e->fifo_tail = p;
}

/* ---- Phases ---- */

static int cmp_by_work(const void *a, const void *b, void *userdata) {
        const double *work_s = userdata;
        double x = work_s[*(const uint32_t *) a], y = work_s[*(const uint32_t *) b];
        if (x != y)
                return x < y ? -1 : 1;
        return *(const uint32_t *) a < *(const uint32_t *) b ? -1 : 1;
}

int sim_fluid_phase_activate(Engine *e, size_t pi) {
        Phase *ph = &e->phases[pi];
        const SimPhaseSpec *spec = sim_phase_spec(e, pi);
        ph->ps_order = malloc(spec->n_tasks * sizeof(uint32_t));
        if (!ph->ps_order)
                return -ENOMEM;
        for (unsigned k = 0; k < spec->n_tasks; k++)
                ph->ps_order[k] = (uint32_t) (spec->first_task + k);
        qsort_r(ph->ps_order, spec->n_tasks, sizeof(uint32_t), cmp_by_work, e->w->work_s);
        ph->ps_work_left = sim_phase_size_s(e->w, spec);
        if (isnan(e->res->jobs[ph->job].start_s))
                e->res->jobs[ph->job].start_s = e->now;
        if (fifo_fast(e)) {
                if (ph->number == 0)
                        fifo_append(e, (uint32_t) pi);
                else
                        fifo_replace(e, (uint32_t) pi - 1, (uint32_t) pi);
        }
        if (srpt(e))
                srpt_heap_push(e, (uint32_t) pi);
        /* Its first tasks may be done already (work within rounding of 0): the next completion
         * pass looks at it whatever its rate. */
        if (served_fast(e))
                e->fresh[e->n_fresh++] = (uint32_t) pi;
        return 0;
}

void sim_fluid_phase_done(Engine *e, size_t pi, bool last) {
        if (fifo_fast(e) && last)
                fifo_unlink(e, (uint32_t) pi);
}

/* ---- Sharing ---- */

/* What is left of the job of an active phase in the fluid: its unfinished tasks' work beyond
 * the phase's level, and its later phases. */
static double job_remaining(const Engine *e, size_t pi) {
        const Phase *ph = &e->phases[pi];
        return MAX(ph->ps_work_left - unfinished(e, pi) * ph->ps_level, 0.0) + ph->later_s;
}

typedef struct FluidOrder {
        uint32_t phase;
        double key;                     /* srpt: remaining; fifo: arrival */
        double demand;
        uint32_t job;
} FluidOrder;

static int cmp_fluid_order(const void *a, const void *b) {
        const FluidOrder *x = a, *y = b;
        /* Equal up to rounding (two jobs meet at a crossing event): the one that can take more
         * first, so that it keeps at least the other's rate and the two do not swap back. */
        if (fabs(x->key - y->key) > 1e-9 * MAX(fabs(x->key), 1.0))
                return x->key < y->key ? -1 : 1;
        if (x->demand != y->demand)
                return x->demand > y->demand ? -1 : 1;
        return x->job < y->job ? -1 : x->job > y->job;
}

static int share_ps(Engine *e) {
        int r = sim_engine_ensure_share(e, e->n_active);
        if (r < 0)
                return r;
        for (size_t a = 0; a < e->n_active; a++) {
                const Phase *ph = &e->phases[e->active[a]];
                e->share_req[a] = (SimShareReq) {
                        .demand_cpus = unfinished(e, e->active[a]) * sim_phase_spec(e, e->active[a])->cpu_request,
                        .weight = e->w->jobs[ph->job].weight,
                };
        }
        r = sim_cfs_share(e->share_req, e->n_active, capacity(e), e->share_got, e->scratch);
        if (r < 0)
                return r;
        for (size_t a = 0; a < e->n_active; a++)
                e->phases[e->active[a]].ps_rate = e->share_got[a] / unfinished(e, e->active[a]);
        return 0;
}

/* The capacity filled in the order sorted, each phase taking up to its cap. */
static int share_sorted(Engine *e) {
        _cleanup_free_ FluidOrder *o = malloc(MAX(e->n_active, (size_t) 1) * sizeof(FluidOrder));
        if (!o)
                return -ENOMEM;
        bool srpt = e->p.policy == SIM_POLICY_FLUID_SRPT;
        for (size_t a = 0; a < e->n_active; a++) {
                uint32_t pi = e->active[a];
                o[a] = (FluidOrder) {
                        .phase = pi,
                        .key = srpt ? job_remaining(e, pi) : arrival(e, pi),
                        .demand = unfinished(e, pi) * sim_phase_spec(e, pi)->cpu_request,
                        .job = e->phases[pi].job,
                };
        }
        qsort(o, e->n_active, sizeof(FluidOrder), cmp_fluid_order);
        double left = capacity(e);
        for (size_t a = 0; a < e->n_active; a++) {
                double got = MIN(o[a].demand, MAX(left, 0.0));
                left -= got;
                e->phases[o[a].phase].ps_rate = got / unfinished(e, o[a].phase);
                o[a].demand = got; /* its rate now */
        }
        /* SRPT's order holds until a job behind one that is served catches up with it: the
         * next such crossing is an event (only neighbours can cross first). */
        e->fluid_cross_s = INFINITY;
        for (size_t a = 0; srpt && a + 1 < e->n_active; a++) {
                double gap = o[a + 1].key - o[a].key, dr = o[a + 1].demand - o[a].demand;
                if (dr > 1e-12 && gap > 1e-9 * MAX(o[a].key, 1.0))
                        e->fluid_cross_s = MIN(e->fluid_cross_s, e->now + gap / dr);
        }
        return 0;
}

/* ---- fluid-srpt's unserved phases ---- */

static FluidOrder srpt_order(const Engine *e, uint32_t pi) {
        return (FluidOrder) {
                .phase = pi,
                .key = job_remaining(e, pi),
                .demand = unfinished(e, pi) * sim_phase_spec(e, pi)->cpu_request,
                .job = e->phases[pi].job,
        };
}

static bool srpt_before(const Engine *e, uint32_t a, uint32_t b) {
        FluidOrder x = srpt_order(e, a), y = srpt_order(e, b);
        return cmp_fluid_order(&x, &y) < 0;
}

static void srpt_heap_push(Engine *e, uint32_t pi) {
        size_t i = e->n_srpt_heap++;
        e->phases[pi].in_heap = true;
        while (i > 0) {
                size_t parent = (i - 1) / 2;
                if (!srpt_before(e, pi, e->srpt_heap[parent]))
                        break;
                e->srpt_heap[i] = e->srpt_heap[parent];
                i = parent;
        }
        e->srpt_heap[i] = pi;
}

static void srpt_heap_pop(Engine *e) {
        e->phases[e->srpt_heap[0]].in_heap = false;
        uint32_t last = e->srpt_heap[--e->n_srpt_heap];
        size_t n = e->n_srpt_heap, i = 0;
        if (n == 0)
                return;
        for (;;) {
                size_t c = 2 * i + 1;
                if (c >= n)
                        break;
                if (c + 1 < n && srpt_before(e, e->srpt_heap[c + 1], e->srpt_heap[c]))
                        c++;
                if (!srpt_before(e, e->srpt_heap[c], last))
                        break;
                e->srpt_heap[i] = e->srpt_heap[c];
                i = c;
        }
        e->srpt_heap[i] = last;
}

/* The heap's first phase still active (done ones leave lazily), or SIM_NO_PHASE. */
static uint32_t srpt_heap_top(Engine *e) {
        while (e->n_srpt_heap > 0 && e->phases[e->srpt_heap[0]].state != PHASE_ACTIVE)
                srpt_heap_pop(e);
        return e->n_srpt_heap > 0 ? e->srpt_heap[0] : SIM_NO_PHASE;
}

/* share_sorted() without sorting the whole queue: a phase without a rate keeps its remaining
 * work, so the unserved ones stay in a heap and only the served ones (a few: the cluster's
 * CPUs' worth) are sorted again. The fill takes, in order, the smaller of the next served phase
 * and the heap's top, as the sort of all of them would. */
static int share_srpt(Engine *e) {
        _cleanup_free_ FluidOrder *o = malloc(MAX(e->n_served, (size_t) 1) * sizeof(FluidOrder));
        _cleanup_free_ FluidOrder *fill = NULL;
        if (!o)
                return -ENOMEM;
        size_t n = 0;
        for (size_t k = 0; k < e->n_served; k++) {
                uint32_t pi = e->served[k];
                e->phases[pi].ps_rate = 0;
                if (e->phases[pi].state == PHASE_ACTIVE && !e->phases[pi].in_heap)
                        o[n++] = srpt_order(e, pi);
        }
        qsort(o, n, sizeof(FluidOrder), cmp_fluid_order);
        e->n_served = 0;

        double left = capacity(e);
        size_t i = 0, n_fill = 0, fill_size = 0;
        for (;;) {
                uint32_t top = left > 0 ? srpt_heap_top(e) : SIM_NO_PHASE;
                FluidOrder c;
                if (top != SIM_NO_PHASE) {
                        FluidOrder h = srpt_order(e, top);
                        if (i < n && cmp_fluid_order(&o[i], &h) < 0)
                                c = o[i++];
                        else {
                                c = h;
                                srpt_heap_pop(e);
                        }
                } else if (i < n && left > 0)
                        c = o[i++];
                else
                        break;
                double got = MIN(c.demand, MAX(left, 0.0));
                left -= got;
                if (!(got > 0)) {
                        srpt_heap_push(e, c.phase);
                        break;
                }
                e->phases[c.phase].ps_rate = got / unfinished(e, c.phase);
                e->served[e->n_served++] = c.phase;
                if (n_fill == fill_size) {
                        fill_size = MAX(2 * fill_size, (size_t) 16);
                        FluidOrder *f = realloc(fill, fill_size * sizeof(FluidOrder));
                        if (!f)
                                return -ENOMEM;
                        fill = f;
                }
                c.demand = got; /* its rate now */
                fill[n_fill++] = c;
        }
        /* Served phases the capacity did not reach wait in the heap. */
        for (; i < n; i++)
                srpt_heap_push(e, o[i].phase);
        /* The order holds until a served phase catches up with the one before it (a phase
         * without a rate never does). */
        e->fluid_cross_s = INFINITY;
        for (size_t a = 0; a + 1 < n_fill; a++) {
                double gap = fill[a + 1].key - fill[a].key, dr = fill[a + 1].demand - fill[a].demand;
                if (dr > 1e-12 && gap > 1e-9 * MAX(fill[a].key, 1.0))
                        e->fluid_cross_s = MIN(e->fluid_cross_s, e->now + gap / dr);
        }
        qsort_r(e->served, e->n_served, sizeof(uint32_t), cmp_active_slot, e);
        return 0;
}

/* fluid-fifo with no near ties: the sort is job order, and once the capacity is used up every
 * later phase gets 0 (left never goes below 0: each takes at most what is left). */
static void share_fifo_in_order(Engine *e) {
        double left = capacity(e);
        for (uint32_t pi = e->fifo_head; pi != SIM_NO_PHASE && left > 0; pi = e->phases[pi].fifo_next) {
                double got = MIN(unfinished(e, pi) * sim_phase_spec(e, pi)->cpu_request, MAX(left, 0.0));
                left -= got;
                e->phases[pi].ps_rate = got / unfinished(e, pi);
                if (e->phases[pi].ps_rate > 0)
                        e->served[e->n_served++] = pi;
        }
        e->fluid_cross_s = INFINITY;
}

static int cmp_active_slot(const void *a, const void *b, void *userdata) {
        const Engine *e = userdata;
        size_t x = e->phases[*(const uint32_t *) a].active_slot, y = e->phases[*(const uint32_t *) b].active_slot;
        return x < y ? -1 : x > y;
}

/* fluid-fifo keeps the phases with a rate (`served`) in the order of the active list: the sums
 * over phases then add the same terms in the same order as over the whole list, less zeros. */
int sim_fluid_share(Engine *e) {
        if (e->p.policy == SIM_POLICY_PS)
                return share_ps(e);
        if (srpt(e))
                return share_srpt(e);
        if (!fifo_fast(e))
                return share_sorted(e);
        /* Only the phases served so far can hold a rate: they are cleared, then filled. */
        for (size_t k = 0; k < e->n_served; k++)
                e->phases[e->served[k]].ps_rate = 0;
        e->n_served = 0;
        if (e->fifo_near_ties == 0)
                share_fifo_in_order(e);
        else {
                int r = share_sorted(e);
                if (r < 0)
                        return r;
                for (size_t a = 0; a < e->n_active; a++)
                        if (e->phases[e->active[a]].ps_rate > 0)
                                e->served[e->n_served++] = e->active[a];
        }
        qsort_r(e->served, e->n_served, sizeof(uint32_t), cmp_active_slot, e);
        return 0;
}

/* ---- Time ---- */

static double phase_next_s(const Engine *e, uint32_t pi) {
        const Phase *ph = &e->phases[pi];
        return e->now + MAX(e->w->work_s[ph->ps_order[ph->ps_next]] - ph->ps_level, 0.0) / ph->ps_rate;
}

double sim_fluid_next(const Engine *e) {
        double next = e->p.policy == SIM_POLICY_FLUID_SRPT ? e->fluid_cross_s : INFINITY;
        if (served_fast(e)) {
                for (size_t k = 0; k < e->n_served; k++)
                        next = MIN(next, phase_next_s(e, e->served[k]));
                return next;
        }
        for (size_t a = 0; a < e->n_active; a++)
                if (e->phases[e->active[a]].ps_rate > 0)
                        next = MIN(next, phase_next_s(e, e->active[a]));
        return next;
}

static void advance_phase(Engine *e, uint32_t pi, double dt, double *cpus) {
        Phase *ph = &e->phases[pi];
        ph->ps_level += ph->ps_rate * dt;
        *cpus += ph->ps_rate * unfinished(e, pi);
}

void sim_fluid_advance(Engine *e, double now) {
        double dt = now - e->now;
        if (!(dt > 0))
                return;
        double cpus = 0;
        if (served_fast(e))
                for (size_t k = 0; k < e->n_served; k++)
                        advance_phase(e, e->served[k], dt, &cpus);
        else
                for (size_t a = 0; a < e->n_active; a++)
                        advance_phase(e, e->active[a], dt, &cpus);
        e->res->cpu_used_s += cpus * dt;
}

/* Whether the task's work is done: reached by the level, or so nearly that the time left is
 * below what the clock can still tell apart from now (late in a long run, now + dt == now: the
 * next event would come at now again, and time would stand still). */
static bool fluid_task_done(const Engine *e, const Phase *ph, uint32_t ti) {
        double left = e->w->work_s[ti] - ph->ps_level;
        return sim_work_done(ph->ps_level, e->w->work_s[ti]) || (ph->ps_rate > 0 && e->now + left / ph->ps_rate <= e->now);
}

/* Finishes the phase's tasks whose work its level has reached. */
static int complete_phase(Engine *e, uint32_t pi) {
        Phase *ph = &e->phases[pi];
        unsigned n = sim_phase_spec(e, pi)->n_tasks;
        while (ph->state == PHASE_ACTIVE && ph->ps_next < n && fluid_task_done(e, ph, ph->ps_order[ph->ps_next])) {
                uint32_t ti = ph->ps_order[ph->ps_next++];
                ph->ps_work_left -= e->w->work_s[ti];
                int r = sim_engine_phase_task_done(e, pi, (unsigned) (ti - sim_phase_spec(e, pi)->first_task));
                if (r < 0)
                        return r;
        }
        return 0;
}

static int cmp_active_slot_desc(const void *a, const void *b, void *userdata) {
        return -cmp_active_slot(a, b, userdata);
}

/* fluid-fifo: a phase with no rate has the level it had at the last pass, which left none of
 * its tasks done, unless it came since: the pass looks at the served and the new phases only,
 * in the order the whole list would be walked (from its end; those that come during the pass
 * wait for the next). */
static int complete_fifo(Engine *e) {
        size_t n = 0;
        e->completion_pass++;
        for (size_t k = 0; k < e->n_served + e->n_fresh; k++) {
                uint32_t pi = k < e->n_served ? e->served[k] : e->fresh[k - e->n_served];
                if (e->phases[pi].checked_pass != e->completion_pass && e->phases[pi].state == PHASE_ACTIVE) {
                        e->phases[pi].checked_pass = e->completion_pass;
                        e->check[n++] = pi;
                }
        }
        e->n_fresh = 0;
        qsort_r(e->check, n, sizeof(uint32_t), cmp_active_slot_desc, e);
        for (size_t k = 0; k < n; k++) {
                int r = complete_phase(e, e->check[k]);
                if (r < 0)
                        return r;
        }
        return 0;
}

int sim_fluid_complete(Engine *e) {
        if (served_fast(e))
                return complete_fifo(e);
        /* Phases may leave the list as they finish: walk it from the end. */
        for (size_t a = e->n_active; a-- > 0;) {
                if (a >= e->n_active)
                        continue;
                int r = complete_phase(e, e->active[a]);
                if (r < 0)
                        return r;
        }
        return 0;
}
