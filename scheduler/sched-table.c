/* sched-table.c: the scheduler's job table — slots that never move (the heaps and tasks hold
 * them) with a free list, and an open-addressing hash index from key to slot. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "sched-internal.h"

static size_t hash_key(uint64_t key) {
        /* splitmix64 finaliser: keys are sequential, the index wants them spread. */
        key ^= key >> 30;
        key *= UINT64_C(0xbf58476d1ce4e5b9);
        key ^= key >> 27;
        key *= UINT64_C(0x94d049bb133111eb);
        key ^= key >> 31;
        return (size_t) key;
}

static size_t index_probe(const Sched *s, uint64_t key) {
        size_t mask = s->index_size - 1;
        size_t i = hash_key(key) & mask;
        /* Keys are compared in a dense array of their own: the job records are large. */
        while (s->index[i] != 0 && s->slot_keys[s->index[i] - 1] != key)
                i = (i + 1) & mask;
        return i;
}

SchedJob *sched_table_find(const Sched *s, uint64_t key) {
        assert(s);
        if (s->index_size == 0)
                return NULL;
        size_t i = index_probe(s, key);
        return s->index[i] ? &s->jobs[s->index[i] - 1] : NULL;
}

static int index_rebuild(Sched *s, size_t size) {
        uint32_t *index = calloc(size, sizeof(uint32_t));
        if (!index)
                return -ENOMEM;
        free(s->index);
        s->index = index;
        s->index_size = size;
        for (size_t slot = 0; slot < s->n_slots; slot++)
                if (s->jobs[slot].used)
                        s->index[index_probe(s, s->jobs[slot].key)] = (uint32_t) (slot + 1);
        return 0;
}

int sched_table_insert(Sched *s, const SchedJob *job, SchedJob **ret) {
        assert(s);
        if (s->n_jobs >= UINT32_MAX - 1)
                return -ENOSPC;
        if (s->n_free == 0 && s->n_slots == s->n_jobs_allocated) {
                size_t n = MAX(s->n_jobs_allocated * 2, (size_t) 64);
                SchedJob *p = realloc(s->jobs, n * sizeof(SchedJob));
                if (!p)
                        return -ENOMEM;
                s->jobs = p;
                uint64_t *k = realloc(s->slot_keys, n * sizeof(uint64_t));
                if (!k)
                        return -ENOMEM;
                s->slot_keys = k;
                uint32_t *f = realloc(s->free_slots, n * sizeof(uint32_t));
                if (!f)
                        return -ENOMEM;
                s->free_slots = f;
                s->n_jobs_allocated = n;
        }
        /* Load factor at most one half keeps probes short. */
        if ((s->n_jobs + 1) * 2 > s->index_size) {
                int r = index_rebuild(s, MAX(s->index_size * 2, (size_t) 128));
                if (r < 0)
                        return r;
        }
        size_t slot = s->n_free > 0 ? s->free_slots[--s->n_free] : s->n_slots++;
        s->jobs[slot] = *job;
        s->jobs[slot].used = true;
        s->slot_keys[slot] = job->key;
        s->n_jobs++;
        s->index[index_probe(s, job->key)] = (uint32_t) (slot + 1);
        *ret = &s->jobs[slot];
        return 0;
}

/* Deletion with backward shift, so no tombstones accumulate. */
static void index_delete(Sched *s, size_t i) {
        size_t mask = s->index_size - 1;
        size_t j = i;
        for (;;) {
                s->index[i] = 0;
                for (;;) {
                        j = (j + 1) & mask;
                        if (s->index[j] == 0)
                                return;
                        size_t home = hash_key(s->slot_keys[s->index[j] - 1]) & mask;
                        /* Move j back to i unless its home lies cyclically in (i, j]. */
                        if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
                                continue;
                        break;
                }
                s->index[i] = s->index[j];
                i = j;
        }
}

void sched_table_delete(Sched *s, SchedJob *job) {
        assert(s);
        size_t slot = (size_t) (job - s->jobs);
        index_delete(s, index_probe(s, job->key));
        job->used = false;
        s->free_slots[s->n_free++] = (uint32_t) slot;
        s->n_jobs--;
}

void sched_table_clear(Sched *s) {
        free(s->jobs);
        free(s->index);
        free(s->free_slots);
        free(s->slot_keys);
        s->slot_keys = NULL;
        s->jobs = NULL;
        s->index = NULL;
        s->free_slots = NULL;
        s->n_jobs = s->n_slots = s->n_free = s->n_jobs_allocated = s->index_size = 0;
}
