/* test_bus_call — src/bus/sy_bus_call: a call's copy of its arguments, and
 * replies encoded for the owner's thread (RESP bytes through hiredis' own
 * reader, as the bus thread gets them). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include "base/sy_alloc.h"
#include "bus/sy_bus_call.h"
#include "bus/sy_redis_alloc.h"
#include "bus_test.h"
#include "check.h"

/* RESP in, the encoding out (compared with want[0..want_len)). */
static bool encodes(const char *resp, size_t resp_len, const void *want, size_t want_len) {
    redisReply *r = resp_reply(resp, resp_len);
    if (r == NULL)
        return false;
    uint8_t *data = NULL;
    size_t len = 0, cap = 0;
    bool ok = sy_bus_reply_encode(r, &data, &len, &cap) == 0 && len == want_len && memcmp(data, want, len) == 0;
    sy_free(data);
    freeReplyObject(r);
    return ok;
}
#define ENC(resp, want) encodes(resp, sizeof(resp) - 1, want, sizeof(want) - 1)

static void test_encode(void) {
    CHECK(ENC("$3\r\nabc\r\n", "s\x03\0\0\0abc"));
    CHECK(ENC("$0\r\n\r\n", "s\0\0\0\0"));
    CHECK(ENC("+OK\r\n", "s\x02\0\0\0OK"));
    CHECK(ENC("-NOSCRIPT x\r\n", "e\x0a\0\0\0NOSCRIPT x"));
    CHECK(ENC(":5\r\n", "i\x05\0\0\0\0\0\0\0"));
    CHECK(ENC(":-1\r\n", "i\xff\xff\xff\xff\xff\xff\xff\xff"));
    CHECK(ENC("$-1\r\n", "n"));
    CHECK(ENC("*0\r\n", "a\0\0\0\0"));
    CHECK(ENC("*-1\r\n", "n"));
    /* nested, binary-safe */
    CHECK(ENC("*2\r\n*1\r\n$2\r\na\0\r\n:1\r\n", "a\x02\0\0\0a\x01\0\0\0s\x02\0\0\0a\0i\x01\0\0\0\0\0\0\0"));
    /* RESP3: a map's elements in order, a double as text, a boolean as 0/1 */
    CHECK(ENC("%1\r\n+k\r\n:2\r\n", "a\x02\0\0\0s\x01\0\0\0ki\x02\0\0\0\0\0\0\0"));
    CHECK(ENC(",1.5\r\n", "s\x03\0\0\0"
                          "1.5"));
    CHECK(ENC("#t\r\n", "i\x01\0\0\0\0\0\0\0"));
    CHECK(ENC("_\r\n", "n"));
}

static uint8_t *got;
static size_t got_len;
static int calls;

static void done(void *ctx, uint8_t *reply, size_t len) {
    CHECK(ctx == &calls);
    calls++;
    sy_free(got);
    got = reply;
    got_len = len;
}

static void test_call(void) {
    const char *argv[] = {"EVALSHA", "abc", "1", "k"};
    size_t lens[] = {7, 3, 1, 1};
    sy_bus_call_t *c = sy_bus_call_new("route", 5, 4, argv, lens, done, &calls);
    CHECK(c != NULL);
    if (c == NULL)
        return;
    CHECK(strcmp(sy_bus_call_route(c), "route") == 0 && c->route_len == 5 && c->argc == 4);
    for (int i = 0; i < 4; i++)
        CHECK(c->argv[i] != argv[i] && c->lens[i] == lens[i] && memcmp(c->argv[i], argv[i], lens[i]) == 0);
    /* Ended without a reply: an x value saying why. */
    sy_bus_call_end(c, NULL, "gone");
    CHECK(calls == 1 && got_len == 9 && memcmp(got, "x\x04\0\0\0gone", 9) == 0);
    /* Ended with Redis' reply. */
    c = sy_bus_call_new("r", 1, 1, argv, lens, done, &calls);
    redisReply *r = resp_reply(":7\r\n", 4);
    CHECK(c != NULL && r != NULL);
    if (c != NULL && r != NULL)
        sy_bus_call_end(c, r, NULL);
    freeReplyObject(r);
    CHECK(calls == 2 && got_len == 9 && got[0] == 'i' && got[1] == 7);
    sy_free(got);
    got = NULL;
    /* Bad argument counts are refused. */
    CHECK(sy_bus_call_new("r", 1, 0, argv, lens, done, &calls) == NULL);
    CHECK(sy_bus_call_new("r", 1, SY_BUS_CALL_ARGS_MAX + 1, argv, lens, done, &calls) == NULL);
}

int main(void) {
    if (sy_redis_alloc_init() != 0)
        return 1;
    test_encode();
    test_call();
    return check_report("test_bus_call");
}
