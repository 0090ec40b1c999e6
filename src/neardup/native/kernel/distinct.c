/*
 * Pass 3: distinct ids and sorting. Part of neardup._kernel; the overview is in kernel.h.
 */

#include "kernel.h"

/* ------------------------------------------------------------------------------------------ */
/* Pass 3: distinct ids, sorting                                                               */
/* ------------------------------------------------------------------------------------------ */

/*
 * Big documents first split their ids by the top 8 bits into 256 parts (two sequential passes,
 * 256 output streams), so that the per-part hash set or sort stays in the L1/L2 cache.
 */
#define SPLIT_ABOVE 8192

/* Distributes v[0:n] into out by the top 8 bits; part b is out[start[b]:start[b+1]]. */
static void split_top8(const uint64_t *v, size_t n, uint64_t *out, size_t start[257]) {
    size_t cnt[257] = {0};
    for (size_t i = 0; i < n; i++) cnt[(v[i] >> 56) + 1]++;
    for (int b = 1; b <= 256; b++) cnt[b] += cnt[b - 1];
    memcpy(start, cnt, sizeof(cnt));
    for (size_t i = 0; i < n; i++) out[cnt[v[i] >> 56]++] = v[i];
}

/* Writes the distinct values of in[0:n] to out (which may be in); returns their count, or
 * (size_t)-1 when memory runs out. */
static size_t dedup_set(scratch_t *s, const uint64_t *in, size_t n, uint64_t *out) {
    if (n <= 16) {
        size_t u = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t x = in[i];
            size_t j = 0;
            while (j < u && out[j] != x) j++;
            if (j == u) out[u++] = x;
        }
        return u;
    }
    int bits = 5;
    while (((size_t)1 << bits) < 2 * n) bits++;
    size_t cap = (size_t)1 << bits, mask = cap - 1;
    if (!GROW(s->set, s->set_cap, cap)) return (size_t)-1;
    uint64_t *set = s->set;
    memset(set, 0, cap * sizeof(uint64_t));
    int have_zero = 0;
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = in[i];
        if (x == 0) {
            if (!have_zero) {
                have_zero = 1;
                out[u++] = 0;
            }
            continue;
        }
        size_t h = (size_t)((x * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
        for (;;) {
            uint64_t y = set[h];
            if (y == x) break;
            if (y == 0) {
                set[h] = x;
                out[u++] = x;
                break;
            }
            h = (h + 1) & mask;
        }
    }
    return u;
}

/* Keeps the distinct values of ids[0:n] (in no particular order); returns their count, or
 * (size_t)-1 when memory runs out. */
ND_HIDDEN size_t dedup(scratch_t *s, uint64_t *ids, size_t n) {
    if (n < 2) return n;
    if (n <= SPLIT_ABOVE) return dedup_set(s, ids, n, ids);
    if (!GROW(s->tmp, s->tmp_cap, n)) return (size_t)-1;
    size_t start[257], u = 0;
    split_top8(ids, n, s->tmp, start);
    for (int b = 0; b < 256; b++) {
        size_t k = dedup_set(s, s->tmp + start[b], start[b + 1] - start[b], ids + u);
        if (k == (size_t)-1) return k;
        u += k;
    }
    return u;
}

static void insertion_sort(uint64_t *v, size_t n) {
    for (size_t i = 1; i < n; i++) {
        uint64_t x = v[i];
        size_t j = i;
        while (j > 0 && v[j - 1] > x) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts src[0:n] into dst, both sharing their top `skip` bits. Shingle ids are uniform hashes,
 * so one distribution pass on the next bits into about 2n buckets leaves dst nearly sorted
 * (only elements of one bucket, a few on average, out of order), which one insertion sort pass
 * finishes in linear time. When some bucket is unexpectedly large (repeats, skew), each bucket
 * is finished on its own (qsort for large ones). Returns 0 when memory runs out. */
static int bucket_sort(scratch_t *s, const uint64_t *src, uint64_t *dst, size_t n, int skip) {
    if (n <= 48) {
        /* n == 0 comes with src NULL (an empty scratch buffer): memmove must not see it */
        if (n) memmove(dst, src, n * sizeof(uint64_t));
        insertion_sort(dst, n);
        return 1;
    }
    int bits = 1;
    while (((size_t)1 << bits) < 2 * n && bits < 16) bits++;
    const size_t nb = (size_t)1 << bits, mask = nb - 1;
    const int shift = 64 - skip - bits;
    if (!GROW(s->cnt, s->cnt_cap, nb + 1)) return 0;
    uint32_t *cnt = s->cnt;
    memset(cnt, 0, (nb + 1) * sizeof(uint32_t));
    for (size_t i = 0; i < n; i++) cnt[((src[i] >> shift) & mask) + 1]++;
    uint32_t biggest = 0;
    for (size_t b = 1; b <= nb; b++) {
        biggest = cnt[b] > biggest ? cnt[b] : biggest;
        cnt[b] += cnt[b - 1];
    }
    /* cnt[b] = start of bucket b; the scatter moves it to the end of bucket b */
    for (size_t i = 0; i < n; i++) dst[cnt[(src[i] >> shift) & mask]++] = src[i];
    if (biggest > 64) {
        size_t start = 0;
        for (size_t b = 0; b < nb; b++) {
            size_t stop = cnt[b], m = stop - start;
            if (m > 64)
                qsort(dst + start, m, sizeof(uint64_t), cmp_u64);
            else if (m > 1)
                insertion_sort(dst + start, m);
            start = stop;
        }
    } else {
        insertion_sort(dst, n);
    }
    return 1;
}

/* Writes src[0:n] sorted ascending to dst (which must not overlap src). Returns 0 when memory
 * runs out. */
ND_HIDDEN int sort_into(scratch_t *s, const uint64_t *src, size_t n, uint64_t *dst) {
    if (n <= SPLIT_ABOVE) return bucket_sort(s, src, dst, n, 0);
    if (!GROW(s->tmp, s->tmp_cap, n)) return 0;
    size_t start[257];
    split_top8(src, n, s->tmp, start);
    for (int b = 0; b < 256; b++)
        if (!bucket_sort(s, s->tmp + start[b], dst + start[b], start[b + 1] - start[b], 8)) return 0;
    return 1;
}

/* Sorts v[0:n] ascending. Returns 0 when memory runs out. */
ND_HIDDEN int sort_u64(scratch_t *s, uint64_t *v, size_t n) {
    if (n <= 48) {
        insertion_sort(v, n);
        return 1;
    }
    if (!GROW(s->sorted, s->sorted_cap, n) || !sort_into(s, v, n, s->sorted)) return 0;
    memcpy(v, s->sorted, n * sizeof(uint64_t));
    return 1;
}

/* Drops repeats from sorted v[0:n]; returns the new length. */
ND_HIDDEN size_t unique_sorted(uint64_t *v, size_t n) {
    if (n < 2) return n;
    size_t u = 1;
    for (size_t i = 1; i < n; i++) {
        v[u] = v[i];
        u += v[i] != v[u - 1];
    }
    return u;
}

