#include "sy_bus_env.h"

#include "sy_utf8.h"

void sy_bus_env_write(uint8_t out[SY_BUS_ENV_LEN], uint64_t node, unsigned flags) {
    out[0] = (uint8_t)SY_BUS_ENV_MAGIC;
    out[1] = (uint8_t)flags;
    for (unsigned i = 0; i < 8; i++)
        out[2 + i] = (uint8_t)(node >> (8 * i));
}

sy_bus_env_kind_t sy_bus_env_read(const uint8_t *p, size_t len, uint64_t node, const uint8_t **payload,
                                  size_t *plen, unsigned *flags) {
    if (len == 0 || p[0] != SY_BUS_ENV_MAGIC) {
        *payload = p;
        *plen = len;
        *flags = SY_BUS_ENV_COMPRESS | (sy_utf8_is_valid(p, len) ? 0u : SY_BUS_ENV_BINARY);
        return SY_BUS_ENV_DELIVER;
    }
    if (len < SY_BUS_ENV_LEN || (p[1] & ~(SY_BUS_ENV_BINARY | SY_BUS_ENV_COMPRESS)) != 0)
        return SY_BUS_ENV_BAD;
    uint64_t from = 0;
    for (unsigned i = 0; i < 8; i++)
        from |= (uint64_t)p[2 + i] << (8 * i);
    if (from == node)
        return SY_BUS_ENV_OWN;
    *payload = p + SY_BUS_ENV_LEN;
    *plen = len - SY_BUS_ENV_LEN;
    *flags = p[1];
    return SY_BUS_ENV_DELIVER;
}
