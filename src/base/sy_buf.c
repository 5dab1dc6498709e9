/* sy_buf — see sy_buf.h. */
#include "base/sy_buf.h"

#include <string.h>

#include "base/sy_alloc.h"

sy_err_t sy_buf_reserve(uint8_t **data, size_t len, size_t *cap, size_t need, size_t min_cap) {
    if (*cap - len >= need)
        return 0;
    if (need > SIZE_MAX / 2 - len)
        return ENOMEM;
    size_t n = *cap ? *cap : (min_cap ? min_cap : 64);
    while (n - len < need)
        n *= 2;
    uint8_t *b = sy_realloc(*data, n);
    if (b == NULL)
        return ENOMEM;
    *data = b;
    *cap = n;
    return 0;
}

sy_err_t sy_buf_reserve_exact(uint8_t **data, size_t len, size_t *cap, size_t need) {
    if (*cap - len >= need)
        return 0;
    if (need > SIZE_MAX - len)
        return ENOMEM;
    uint8_t *b = sy_realloc(*data, len + need);
    if (b == NULL)
        return ENOMEM;
    *data = b;
    *cap = len + need;
    return 0;
}

sy_err_t sy_buf_append(uint8_t **data, size_t *len, size_t *cap, const void *p, size_t n, size_t min_cap) {
    if (n == 0)
        return 0;
    int rc = sy_buf_reserve(data, *len, cap, n, min_cap);
    if (rc != 0)
        return rc;
    memcpy(*data + *len, p, n);
    *len += n;
    return 0;
}
