/* sched-heap.c: the scheduler's indexed binary heaps of job slots — each job records where it
 * sits, so a job whose key changed moves in O(log n) and any job can leave in O(log n). */
#include <assert.h>
#include <stdlib.h>

#include "sched-internal.h"

void sched_heap_init(SchedHeap *h, size_t pos_offset, int which, bool max) {
        assert(h);
        *h = (SchedHeap) { .pos_offset = pos_offset, .which = which, .max = max };
}

void sched_heap_done(SchedHeap *h) {
        free(h->slot);
        h->slot = NULL;
        h->n = h->allocated = 0;
}

static uint32_t *pos_of(const Sched *s, const SchedHeap *h, uint32_t slot) {
        return (uint32_t *) ((char *) sched_job_at(s, slot) + h->pos_offset);
}

static double heap_key(const SchedHeap *h, const SchedJob *j) {
        switch (h->which) {
        case SCHED_HEAP_KEY_TAG:
                return j->vtag;
        case SCHED_HEAP_KEY_FINISH:
                return j->vfinish_s;
        case SCHED_HEAP_KEY_RATIO:
                return j->parallel_cpus / j->weight;
        case SCHED_HEAP_KEY_C0:
                return j->ckey[0];
        default:
                return j->ckey[1];
        }
}

/* a before b: by key, then by job key (the scheduler's tie-break everywhere). */
static bool before(const Sched *s, const SchedHeap *h, uint32_t a, uint32_t b) {
        const SchedJob *x = sched_job_at(s, a), *y = sched_job_at(s, b);
        double kx = heap_key(h, x), ky = heap_key(h, y);
        if (kx != ky)
                return h->max ? kx > ky : kx < ky;
        return x->key < y->key;
}

static void put(Sched *s, SchedHeap *h, size_t i, uint32_t slot) {
        h->slot[i] = slot;
        *pos_of(s, h, slot) = (uint32_t) i;
}

static void sift_up(Sched *s, SchedHeap *h, size_t i) {
        uint32_t slot = h->slot[i];
        while (i > 0) {
                size_t p = (i - 1) / 2;
                if (!before(s, h, slot, h->slot[p]))
                        break;
                put(s, h, i, h->slot[p]);
                i = p;
        }
        put(s, h, i, slot);
}

static void sift_down(Sched *s, SchedHeap *h, size_t i) {
        uint32_t slot = h->slot[i];
        for (;;) {
                size_t l = 2 * i + 1, m = i;
                uint32_t best = slot;
                if (l < h->n && before(s, h, h->slot[l], best))
                        m = l, best = h->slot[l];
                if (l + 1 < h->n && before(s, h, h->slot[l + 1], best))
                        m = l + 1, best = h->slot[l + 1];
                if (m == i)
                        break;
                put(s, h, i, best);
                i = m;
        }
        put(s, h, i, slot);
}

int sched_heap_push(Sched *s, SchedHeap *h, uint32_t slot) {
        assert(s);
        if (h->n == h->allocated) {
                size_t n = MAX(h->allocated * 2, (size_t) 16);
                uint32_t *p = realloc(h->slot, n * sizeof(uint32_t));
                if (!p)
                        return -ENOMEM;
                h->slot = p;
                h->allocated = n;
        }
        h->slot[h->n] = slot;
        sift_up(s, h, h->n++);
        return 0;
}

void sched_heap_remove(Sched *s, SchedHeap *h, uint32_t slot) {
        assert(s);
        size_t i = *pos_of(s, h, slot);
        uint32_t last = h->slot[--h->n];
        if (i == h->n)
                return;
        put(s, h, i, last);
        sched_heap_update(s, h, last);
}

void sched_heap_update(Sched *s, SchedHeap *h, uint32_t slot) {
        assert(s);
        size_t i = *pos_of(s, h, slot);
        if (i > 0 && before(s, h, slot, h->slot[(i - 1) / 2]))
                sift_up(s, h, i);
        else
                sift_down(s, h, i);
}

int sched_heap_append(Sched *s, SchedHeap *h, uint32_t slot) {
        assert(s);
        if (h->n == h->allocated) {
                size_t n = MAX(h->allocated * 2, (size_t) 16);
                uint32_t *p = realloc(h->slot, n * sizeof(uint32_t));
                if (!p)
                        return -ENOMEM;
                h->slot = p;
                h->allocated = n;
        }
        put(s, h, h->n++, slot);
        return 0;
}

void sched_heap_heapify(Sched *s, SchedHeap *h) {
        assert(s);
        for (size_t i = h->n / 2; i-- > 0;)
                sift_down(s, h, i);
}
