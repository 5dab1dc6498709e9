/*
 * bus_test.h — a reply read from RESP bytes by hiredis' own reader (as the
 * bus thread gets them), for the bus' C tests of what reads replies.
 */
#ifndef SY_TEST_BUS_TEST_H
#define SY_TEST_BUS_TEST_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <hiredis/read.h>

/* The one reply in resp[0..len) (freeReplyObject), or NULL. */
static inline redisReply *resp_reply(const char *resp, size_t len) {
    redisReader *r = redisReaderCreate();
    if (r == NULL)
        abort();
    void *reply = NULL;
    if (redisReaderFeed(r, resp, len) != REDIS_OK || redisReaderGetReply(r, &reply) != REDIS_OK)
        reply = NULL;
    redisReaderFree(r);
    return reply;
}

/* The same for a NUL-terminated resp. */
static inline redisReply *resp_reply_str(const char *resp) { return resp_reply(resp, strlen(resp)); }

#endif
