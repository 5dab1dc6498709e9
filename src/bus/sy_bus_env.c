#include "bus/sy_bus_env.h"

#include "proto/sy_utf8.h"

static void put64(uint8_t *p, uint64_t v) {
    for (unsigned i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p) {
    uint64_t v = 0;
    for (unsigned i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void sy_bus_env_write(uint8_t out[SY_BUS_ENV_LEN], uint64_t node, uint64_t seq, unsigned flags) {
    out[0] = (uint8_t)SY_BUS_ENV_MAGIC;
    out[1] = (uint8_t)flags;
    put64(out + 2, node);
    put64(out + 10, seq);
}

sy_bus_env_kind_t sy_bus_env_read(const uint8_t *p, size_t len, uint64_t node, sy_bus_env_msg_t *m) {
    if (len == 0 || p[0] != SY_BUS_ENV_MAGIC) {
        *m = (sy_bus_env_msg_t){.payload = p,
                                .len = len,
                                .flags = SY_BUS_ENV_COMPRESS | (sy_utf8_is_valid(p, len) ? 0u : SY_BUS_ENV_BINARY)};
        return SY_BUS_ENV_DELIVER;
    }
    if (len < SY_BUS_ENV_LEN || (p[1] & ~(SY_BUS_ENV_BINARY | SY_BUS_ENV_COMPRESS | SY_BUS_ENV_META)) != 0)
        return SY_BUS_ENV_BAD;
    uint64_t from = get64(p + 2), seq = get64(p + 10);
    if (seq == 0)
        return SY_BUS_ENV_BAD;
    if (from == node)
        return SY_BUS_ENV_OWN;
    *m = (sy_bus_env_msg_t){
        .payload = p + SY_BUS_ENV_LEN, .len = len - SY_BUS_ENV_LEN, .flags = p[1], .from = from, .seq = seq};
    return SY_BUS_ENV_DELIVER;
}
