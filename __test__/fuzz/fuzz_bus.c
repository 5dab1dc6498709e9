/* libFuzzer target: what the bus reads from Redis.
 *   - first byte even: the rest is a channel message (src/bus/sy_bus_env.c):
 *     never reads past it (ASan); a delivered payload lies inside the
 *     message; an envelope from this node is never delivered; a message
 *     without the 0xF5 mark is delivered whole.
 *     The same bytes as a channel message with a position (0xF6, the
 *     epoch, the offset: src/bus/sy_bus_seq.c): read only when well formed,
 *     the body inside the message; a header written back reads the same.
 *   - first byte odd: the rest is RESP (2 or 3) from a "cluster node",
 *     parsed by hiredis' reader, each reply given to sy_bus_map_read (the
 *     CLUSTER SLOTS reply, src/bus/sy_bus_map.c): every slot names a node of
 *     the map or none; complete means none is missing; the nodes are
 *     distinct and at most one per range. Each reply is also read as the
 *     history sync's answer (sy_bus_seq_sync_reply, every entry walked)
 *     and as Redis Sentinel's answers (src/bus/sy_bus_sentinel_reply.c):
 *     an address has a host of printable bytes and a port 1..65535; the
 *     same for a +switch-master event, whose text (the even branch's
 *     bytes too) is read as the event of primary "mymaster".
 */
#define _GNU_SOURCE /* memmem */
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include "bus/sy_bus_env.h"
#include "bus/sy_bus_link.h"
#include "bus/sy_bus_map.h"
#include "bus/sy_bus_sentinel_reply.h"
#include "bus/sy_bus_seq.h"
#include "bus/sy_redis_alloc.h"

#define REQUIRE(c) do { if (!(c)) abort(); } while (0)

static const uint64_t NODE = 0x0102030405060708ull;

static void envelope(const uint8_t *p, size_t n) {
    sy_bus_env_msg_t m;
    sy_bus_env_kind_t k = sy_bus_env_read(p, n, NODE, &m);
    if (k == SY_BUS_ENV_DELIVER) {
        REQUIRE(m.len <= n);
        REQUIRE(m.len == 0 || (m.payload >= p && m.payload + m.len <= p + n));
        REQUIRE((m.flags & ~(SY_BUS_ENV_BINARY | SY_BUS_ENV_COMPRESS | SY_BUS_ENV_META)) == 0);
        if (n == 0 || p[0] != SY_BUS_ENV_MAGIC) {
            REQUIRE(m.payload == p && m.len == n && m.seq == 0);
        } else {
            REQUIRE(m.len + SY_BUS_ENV_LEN == n);
            REQUIRE(m.seq != 0 && m.from != NODE);
        }
    }
    if (k == SY_BUS_ENV_OWN) {
        REQUIRE(n >= SY_BUS_ENV_LEN && p[0] == SY_BUS_ENV_MAGIC);
    }
    /* Our own envelope round-trips. */
    uint8_t mine[SY_BUS_ENV_LEN];
    sy_bus_env_write(mine, NODE, 1 + (n ? p[0] : 0), n ? p[0] & 7u : 0);
    REQUIRE(sy_bus_env_read(mine, sizeof(mine), NODE, &m) == SY_BUS_ENV_OWN);
    REQUIRE(sy_bus_env_read(mine, sizeof(mine), NODE + 1, &m) == SY_BUS_ENV_DELIVER && m.from == NODE);
}

static void positioned(const uint8_t *p, size_t n) {
    uint64_t epoch, offset;
    const uint8_t *body;
    size_t len;
    if (!sy_bus_seq_read(p, n, &epoch, &offset, &body, &len))
        return;
    REQUIRE(n > 0 && p[0] == SY_BUS_SEQ_MAGIC && epoch != 0 && offset != 0);
    REQUIRE(body >= p + 19 && body + len == p + n);
    char again[64];
    int k = snprintf(again, sizeof(again), "%c%016llx%llu:", (char)SY_BUS_SEQ_MAGIC, (unsigned long long)epoch,
                     (unsigned long long)offset);
    uint64_t e2, o2;
    const uint8_t *b2;
    size_t l2;
    REQUIRE(sy_bus_seq_read((const uint8_t *)again, (size_t)k, &e2, &o2, &b2, &l2));
    REQUIRE(e2 == epoch && o2 == offset && l2 == 0);
}

static void sync_answer(const redisReply *reply) {
    uint64_t epoch, last;
    const redisReply *entries;
    if (!sy_bus_seq_sync_reply(reply, &epoch, &last, &entries))
        return;
    REQUIRE(entries->type == REDIS_REPLY_ARRAY);
    for (size_t i = 0; i < entries->elements; i++) {
        uint64_t offset;
        const uint8_t *body;
        size_t len;
        if (sy_bus_seq_entry(entries, i, &offset, &body, &len))
            REQUIRE(offset != 0 && (len == 0 || body != NULL));
    }
    uint64_t offset;
    const uint8_t *body;
    size_t len;
    REQUIRE(!sy_bus_seq_entry(entries, entries->elements, &offset, &body, &len));
}

static void addr_ok(const sy_bus_sentinel_addr_t *a) {
    size_t len = strnlen(a->host, sizeof(a->host));
    REQUIRE(len > 0 && len < sizeof(a->host) && a->port > 0);
    for (size_t i = 0; i < len; i++)
        REQUIRE((unsigned char)a->host[i] > ' ' && (unsigned char)a->host[i] != 0x7f);
}

static void sentinel_answers(const redisReply *reply) {
    sy_bus_sentinel_addr_t a;
    if (sy_bus_sentinel_read_addr(reply, &a) == SY_SENTINEL_ADDR)
        addr_ok(&a);
    sy_bus_sentinel_role_t role = sy_bus_sentinel_read_role(reply);
    REQUIRE(role == SY_ROLE_PRIMARY || role == SY_ROLE_OTHER || role == SY_ROLE_MALFORMED);
    if (sy_bus_sentinel_read_event(reply, "mymaster", 8, &a))
        addr_ok(&a);
}

static void switch_text(const uint8_t *p, size_t n) {
    sy_bus_sentinel_addr_t a;
    if (sy_bus_sentinel_read_switch((const char *)p, n, "mymaster", 8, &a)) {
        REQUIRE(n > 8 && memmem(p, n, "mymaster", 8) != NULL);
        addr_ok(&a);
    }
}

static void slot_map(const uint8_t *p, size_t n) {
    redisReader *r = redisReaderCreate();
    REQUIRE(r != NULL);
    r->maxelements = SY_BUS_READER_MAX_ELEMENTS; /* as the bus' connections have it */
    if (redisReaderFeed(r, (const char *)p, n) == REDIS_OK) {
        for (int i = 0; i < 64; i++) {
            void *reply = NULL;
            if (redisReaderGetReply(r, &reply) != REDIS_OK || reply == NULL)
                break;
            sync_answer(reply);
            sentinel_answers(reply);
            sy_bus_map_t m;
            if (sy_bus_map_read(&m, reply, "asked") == 0) {
                const redisReply *rr = reply;
                REQUIRE(m.nnodes <= rr->elements);
                bool none = false;
                for (unsigned k = 0; k < SY_SLOTS; k++) {
                    REQUIRE(m.slot[k] == SY_BUS_MAP_NONE || m.slot[k] < m.nnodes);
                    none = none || m.slot[k] == SY_BUS_MAP_NONE;
                }
                REQUIRE(m.complete == !none);
                for (unsigned a = 0; a < m.nnodes; a++) {
                    REQUIRE(m.nodes[a].port > 0 && m.nodes[a].host[0] != '\0');
                    for (unsigned b = a + 1; b < m.nnodes; b++)
                        REQUIRE(m.nodes[a].port != m.nodes[b].port || strcmp(m.nodes[a].host, m.nodes[b].host) != 0);
                }
            }
            sy_bus_map_free(&m);
            freeReplyObject(reply);
        }
    }
    redisReaderFree(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int init;
    if (!init) {
        REQUIRE(sy_redis_alloc_init() == 0);
        init = 1;
    }
    if (size == 0)
        return 0;
    if ((data[0] & 1) == 0) {
        envelope(data + 1, size - 1);
        positioned(data + 1, size - 1);
        switch_text(data + 1, size - 1);
    }
    else
        slot_map(data + 1, size - 1);
    return 0;
}
