/* sched-order.c: the jobs in the policy's priority order, kept as changes come instead of
 * sorted per decision — so a decision reads only the jobs at the head. Tier by tier: tiny jobs
 * in a heap by their size estimate; shared
 * jobs (fair; the late jobs of hfsp and psbs) in a heap by CPU per weight; then the ordered
 * tier, merged from
 *   - a heap by a key that does not move with time (fifo: 0, so submission; srpt: remaining),
 *   - for hfsp and psbs, the jobs uncapped in the virtual cluster, one heap per weight by their
 *     tag: within a weight, remaining size (weight × (tag − g)) and virtual finish time (the
 *     tag) keep their order as the ghost time g grows, so only the heads are compared,
 *   - the jobs capped in the virtual cluster (their order does move with time), scanned: their
 *     caps add up to at most the capacity, so they are few.
 * Two such orders are kept: every job with work waiting, and the jobs in training with a
 * training task waiting (HFSP Algorithm 1's pass). */
#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "sched-internal.h"

static size_t pos_offset(int o) {
        return offsetof(SchedJob, cpos) + (size_t) o * sizeof(uint32_t);
}

static int key_which(int o) {
        return o == SCHED_ORDER_MAIN ? SCHED_HEAP_KEY_C0 : SCHED_HEAP_KEY_C1;
}

void sched_order_init(Sched *s) {
        for (int o = 0; o < _SCHED_ORDER_MAX; o++) {
                SchedOrder *ord = &s->orders[o];
                *ord = (SchedOrder) {};
                sched_heap_init(&ord->tiny, pos_offset(o), key_which(o), false);
                sched_heap_init(&ord->shared, pos_offset(o), key_which(o), false);
                sched_heap_init(&ord->fixed, pos_offset(o), key_which(o), false);
        }
}

void sched_order_done(Sched *s) {
        for (int o = 0; o < _SCHED_ORDER_MAX; o++) {
                SchedOrder *ord = &s->orders[o];
                sched_heap_done(&ord->tiny);
                sched_heap_done(&ord->shared);
                sched_heap_done(&ord->fixed);
                for (size_t c = 0; c < ord->n_classes; c++)
                        sched_heap_done(&ord->classes[c].heap);
                free(ord->classes);
                free(ord->capped);
                *ord = (SchedOrder) {};
        }
}

static SchedHeap *class_heap(Sched *s, int o, double weight, bool create) {
        SchedOrder *ord = &s->orders[o];
        for (size_t c = 0; c < ord->n_classes; c++)
                if (ord->classes[c].weight == weight)
                        return &ord->classes[c].heap;
        if (!create)
                return NULL;
        SchedClass *p = realloc(ord->classes, (ord->n_classes + 1) * sizeof(SchedClass));
        if (!p)
                return NULL;
        ord->classes = p;
        SchedClass *cl = &ord->classes[ord->n_classes++];
        cl->weight = weight;
        sched_heap_init(&cl->heap, pos_offset(o), key_which(o), false);
        return &cl->heap;
}

/* A weight class that emptied goes: the ordered tier compares the head of every class. */
static void class_drop_if_empty(Sched *s, int o, double weight) {
        SchedOrder *ord = &s->orders[o];
        for (size_t c = 0; c < ord->n_classes; c++)
                if (ord->classes[c].weight == weight) {
                        if (ord->classes[c].heap.n > 0)
                                return;
                        sched_heap_done(&ord->classes[c].heap);
                        ord->classes[c] = ord->classes[--ord->n_classes];
                        return;
                }
}

static void take_out(Sched *s, SchedJob *j, int o) {
        SchedOrder *ord = &s->orders[o];
        uint32_t slot = sched_job_slot(s, j);
        switch (j->place[o]) {
        case SCHED_PLACE_TINY:
                sched_heap_remove(s, &ord->tiny, slot);
                break;
        case SCHED_PLACE_SHARED:
                sched_heap_remove(s, &ord->shared, slot);
                break;
        case SCHED_PLACE_STATIC:
                sched_heap_remove(s, &ord->fixed, slot);
                break;
        case SCHED_PLACE_CLASS:
                sched_heap_remove(s, class_heap(s, o, j->weight, false), slot);
                class_drop_if_empty(s, o, j->weight);
                break;
        case SCHED_PLACE_CAPPED: {
                size_t i = j->cpos[o];
                uint32_t last = ord->capped[--ord->n_capped];
                ord->capped[i] = last;
                s->jobs[last].cpos[o] = (uint32_t) i;
                break;
        }
        default:
                break;
        }
        j->place[o] = SCHED_PLACE_NONE;
}

static bool belongs(const Sched *s, const SchedJob *j, int o) {
        if (o == SCHED_ORDER_MAIN)
                return !j->real_done && j->n_pending + j->n_suspended > 0;
        (void) s;
        return j->training_now && j->n_pending_training > 0;
}

/* Where the policy puts the job, and its key there. */
static SchedPlace place_of(const Sched *s, SchedJob *j, double *ret_key) {
        s->ops->order(s, j);
        *ret_key = j->prio;
        if (j->tier == SCHED_TIER_TINY)
                return SCHED_PLACE_TINY;
        if (j->tier == SCHED_TIER_SHARED) {
                *ret_key = j->alloc_cpus / j->weight;
                return SCHED_PLACE_SHARED;
        }
        if (s->ops->virtual_order && j->in_virtual) {
                if (j->capped)
                        return SCHED_PLACE_CAPPED;
                *ret_key = j->vtag;
                return SCHED_PLACE_CLASS;
        }
        return SCHED_PLACE_STATIC;
}

static bool out_now(const Sched *s, const SchedJob *j, int o) {
        return s->deciding && j->epoch == s->epoch && (o == SCHED_ORDER_MAIN ? j->out_main : j->out_training);
}

/* Puts the job at place with key (place_of()'s). */
static int put_in_at(Sched *s, SchedJob *j, int o, SchedPlace place, double key, bool bulk) {
        SchedOrder *ord = &s->orders[o];
        uint32_t slot = sched_job_slot(s, j);
        SchedHeap *h = NULL;
        j->ckey[o] = key;
        switch (place) {
        case SCHED_PLACE_TINY:
                h = &ord->tiny;
                break;
        case SCHED_PLACE_SHARED:
                h = &ord->shared;
                break;
        case SCHED_PLACE_STATIC:
                h = &ord->fixed;
                break;
        case SCHED_PLACE_CLASS:
                h = class_heap(s, o, j->weight, true);
                if (!h)
                        return -ENOMEM;
                break;
        case SCHED_PLACE_CAPPED:
                if (ord->n_capped == ord->n_capped_allocated) {
                        size_t n = MAX(ord->n_capped_allocated * 2, (size_t) 16);
                        uint32_t *p = realloc(ord->capped, n * sizeof(uint32_t));
                        if (!p)
                                return -ENOMEM;
                        ord->capped = p;
                        ord->n_capped_allocated = n;
                }
                j->cpos[o] = (uint32_t) ord->n_capped;
                ord->capped[ord->n_capped++] = slot;
                j->place[o] = place;
                return 0;
        default:
                return 0;
        }
        int r = bulk ? sched_heap_append(s, h, slot) : sched_heap_push(s, h, slot);
        if (r < 0)
                return r;
        j->place[o] = place;
        return 0;
}

static int put_in_as(Sched *s, SchedJob *j, int o, bool bulk) {
        double key;
        SchedPlace place = place_of(s, j, &key);
        return put_in_at(s, j, o, place, key, bulk);
}

int sched_order_bulk(Sched *s) {
        for (int o = 0; o < _SCHED_ORDER_MAX; o++) {
                SchedOrder *ord = &s->orders[o];
                ord->tiny.n = ord->shared.n = ord->fixed.n = 0;
                for (size_t c = 0; c < ord->n_classes; c++)
                        ord->classes[c].heap.n = 0;
                ord->n_capped = 0;
        }
        for (size_t i = 0; i < s->n_slots; i++) {
                SchedJob *j = &s->jobs[i];
                if (!j->used)
                        continue;
                for (int o = 0; o < _SCHED_ORDER_MAX; o++) {
                        j->place[o] = SCHED_PLACE_NONE;
                        if (!belongs(s, j, o))
                                continue;
                        int r = put_in_as(s, j, o, true);
                        if (r < 0)
                                return r;
                }
        }
        for (int o = 0; o < _SCHED_ORDER_MAX; o++) {
                SchedOrder *ord = &s->orders[o];
                sched_heap_heapify(s, &ord->tiny);
                sched_heap_heapify(s, &ord->shared);
                sched_heap_heapify(s, &ord->fixed);
                for (size_t c = 0; c < ord->n_classes;) {
                        if (ord->classes[c].heap.n == 0) {
                                sched_heap_done(&ord->classes[c].heap);
                                ord->classes[c] = ord->classes[--ord->n_classes];
                                continue;
                        }
                        sched_heap_heapify(s, &ord->classes[c].heap);
                        c++;
                }
        }
        return 0;
}

int sched_order_update(Sched *s, SchedJob *j) {
        assert(s);
        for (int o = 0; o < _SCHED_ORDER_MAX; o++) {
                if (out_now(s, j, o))
                        continue; /* taken out by this decision: sched_order_restore() puts it back */
                if (!belongs(s, j, o)) {
                        take_out(s, j, o);
                        continue;
                }
                double key;
                SchedPlace place = place_of(s, j, &key);
                /* Where it is with the key it has: the heaps hold as they are (most task
                 * changes move no job). */
                if (place == j->place[o] && key == j->ckey[o])
                        continue;
                take_out(s, j, o);
                int r = put_in_at(s, j, o, place, key, false);
                if (r < 0)
                        return r;
        }
        return 0;
}

void sched_order_remove(Sched *s, SchedJob *j) {
        assert(s);
        for (int o = 0; o < _SCHED_ORDER_MAX; o++)
                take_out(s, j, o);
        j->out_main = j->out_training = false;
}

int sched_order_rebuild(Sched *s) {
        for (size_t i = 0; i < s->n_slots; i++)
                if (s->jobs[i].used)
                        sched_order_remove(s, &s->jobs[i]);
        for (size_t i = 0; i < s->n_slots; i++) {
                SchedJob *j = &s->jobs[i];
                if (!j->used)
                        continue;
                sched_job_training_refresh(s, j);
                int r = sched_order_update(s, j);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* (tier, prio, key): a before b in the ordered tier. */
static bool ordered_before(const SchedJob *a, const SchedJob *b) {
        if (a->prio != b->prio)
                return a->prio < b->prio;
        return a->key < b->key;
}

uint32_t sched_order_next(Sched *s, int o, bool skip_shared) {
        assert(s);
        SchedOrder *ord = &s->orders[o];
        uint32_t best = sched_heap_top(&ord->tiny);
        if (best == SCHED_NIL && !skip_shared)
                best = sched_heap_top(&ord->shared);
        if (best == SCHED_NIL) {
                /* The ordered tier: the heads of the static heap and of each weight class, and
                 * every capped job, at their priority now. */
                uint32_t c = sched_heap_top(&ord->fixed);
                if (c != SCHED_NIL) {
                        s->ops->order(s, &s->jobs[c]);
                        best = c;
                }
                for (size_t k = 0; k < ord->n_classes; k++) {
                        c = sched_heap_top(&ord->classes[k].heap);
                        if (c == SCHED_NIL)
                                continue;
                        s->ops->order(s, &s->jobs[c]);
                        if (best == SCHED_NIL || ordered_before(&s->jobs[c], &s->jobs[best]))
                                best = c;
                }
                for (size_t k = 0; k < ord->n_capped; k++) {
                        c = ord->capped[k];
                        s->ops->order(s, &s->jobs[c]);
                        if (best == SCHED_NIL || ordered_before(&s->jobs[c], &s->jobs[best]))
                                best = c;
                }
        }
        if (best == SCHED_NIL)
                return SCHED_NIL;

        return sched_order_take(s, &s->jobs[best], o) < 0 ? SCHED_NIL : best;
}

uint32_t sched_order_next_tiny(Sched *s, int o) {
        assert(s);
        uint32_t best = sched_heap_top(&s->orders[o].tiny);
        if (best == SCHED_NIL)
                return SCHED_NIL;
        return sched_order_take(s, &s->jobs[best], o) < 0 ? SCHED_NIL : best;
}

uint32_t sched_order_peek_shared(const Sched *s, int o) {
        assert(s);
        return sched_heap_top(&s->orders[o].shared);
}

int sched_order_take(Sched *s, SchedJob *j, int o) {
        assert(s);
        if (s->n_popped == s->n_popped_allocated) {
                size_t n = MAX(s->n_popped_allocated * 2, (size_t) 64);
                uint32_t *p = realloc(s->popped, n * sizeof(uint32_t));
                if (!p)
                        return -ENOMEM;
                s->popped = p;
                s->n_popped_allocated = n;
        }
        s->ops->order(s, j);
        take_out(s, j, o);
        s->popped[s->n_popped++] = sched_job_slot(s, j) * 2 + (uint32_t) o;
        if (j->epoch != s->epoch) {
                j->epoch = s->epoch;
                j->out_main = j->out_training = false;
        }
        if (o == SCHED_ORDER_MAIN)
                j->out_main = true;
        else
                j->out_training = true;
        return 0;
}

int sched_order_restore(Sched *s) {
        int ret = 0;
        s->deciding = false;
        for (size_t k = 0; k < s->n_popped; k++) {
                SchedJob *j = &s->jobs[s->popped[k] / 2];
                j->out_main = j->out_training = false;
                if (!j->used)
                        continue;
                int r = sched_order_update(s, j);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        s->n_popped = 0;
        return ret;
}
