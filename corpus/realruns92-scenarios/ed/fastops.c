/* tiny "fast ops" helper used by the data pipeline (bucketing of token ids) */
#include <assert.h>
#include <stdint.h>
#include <stddef.h>

long bucketize(const int64_t *ids, size_t n, int64_t *out, int num_buckets) {
    long total = 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = ids[i] % num_buckets;          /* integer modulo: SIGFPE if num_buckets == 0 */
        total += out[i];
    }
    return total;
}

long bucketize_checked(const int64_t *ids, size_t n, int64_t *out, int num_buckets) {
    assert(num_buckets > 0 && "num_buckets must be positive");
    return bucketize(ids, n, out, num_buckets);
}
