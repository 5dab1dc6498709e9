/* sy_answer — see sy_answer.h. */
#include "io/app/sy_answer.h"

#include <string.h>

#include "base/sy_alloc.h"
#include "io/app/sy_resume.h"
#include "io/app/sy_subs.h"
#include "io/loop/sy_queue.h"
#include "io/wire/sy_upgrade.h"
#include "proto/sy_handshake.h"
#include "proto/sy_since.h"
#include "proto/sy_v2.h"
#include "proto/sy_ws_frame.h"

void sy_answer_accept(sy_io_t *io, sy_conn_t *c, sy_accept_t *a, sy_refbuf_t *extra) {
    if (c->state != SY_CONN_UPGRADING) {
        sy_refbuf_release(extra);
        sy_accept_free(&sy_io_ctx(io)->shared->topics, sy_io_ctx(io)->index, a);
        return;
    }
    /* The head is where sy_upgrade_request left it and parsed then: parse
     * it again for its key (a microsecond, once per upgrade, instead of
     * parking the key in the connection or in rbuf). */
    sy_http_header_t headers[SY_MAX_HEADERS_CAP];
    sy_http_request_t req;
    sy_handshake_t hs;
    long n = sy_upgrade_parse_head(io, c, &req, headers);
    const char *target = req.target;
    size_t target_len = req.target_len;
    char *heap = NULL;
    if (n > 0 && sy_conn_sse(c) && sy_upgrade_stream_positions(&req, &target, &target_len, &heap) != NULL)
        n = 0; /* cannot happen: checked before (but out of memory) */
    if (n <= 0 || (!sy_conn_sse(c) && sy_handshake_check(&req, &hs) != 0)) {
        sy_refbuf_release(extra);
        sy_accept_free(&sy_io_ctx(io)->shared->topics, sy_io_ctx(io)->index, a);
        sy_conn_destroy(io, c, 1006); /* cannot happen: the same bytes passed before */
        return;
    }
    char accept[SY_WS_ACCEPT_LEN];
    if (!sy_conn_sse(c))
        sy_ws_accept_key(hs.key, hs.key_len, accept);
    if (a->no_compress)
        c->deflate = false;
    if (!sy_conn_sse(c))
        sy_upgrade_set_protocol(io, c, a->protocol, a->protocol_len);
    else /* before its subscriptions: a symphony.v2 stream's replays cost one position an event */
        c->proto = a->protocol_len == SY_V2_PROTOCOL_LEN && memcmp(a->protocol, SY_V2_PROTOCOL, SY_V2_PROTOCOL_LEN) == 0
                       ? SY_PROTO_V2
                       : SY_PROTO_V1;
    /* Subscribed before the 101 goes (nothing is missed in between); what
     * each subscription tells the client is decided now, while the target
     * (with the client's positions) is still in rbuf, so that the owner
     * hears of the resumes before the open, and is queued after the 101. */
    sy_resume_item_t *items = a->ntopics ? sy_calloc(a->ntopics, sizeof(*items)) : NULL;
    size_t nitems = 0;
    size_t budget = sy_resume_budget(io, c);
    budget = budget > SY_UPGRADE_RESPONSE_ROOM + (extra ? extra->len : 0)
                 ? budget - SY_UPGRADE_RESPONSE_ROOM - (extra ? extra->len : 0)
                 : 0;
    for (size_t i = 0; i < a->ntopics; i++) {
        sy_topic_t *t = a->topics[i];
        if (!sy_conn_subscribe(io, c, t)) /* takes the reference and the count either way */
            continue;
        sy_sub_pos_t pos = {.head = a->heads != NULL ? a->heads[i] : 0};
        char topic_buf[SY_SINCE_TOPIC_MAX];
        sy_since_t since;
        if (sy_since_find(target, target_len, t->name, t->name_len, &since, topic_buf)) {
            pos.resume = true;
            pos.epoch = since.epoch;
            pos.since = since.offset;
        }
        sy_resume_item_t dummy;
        sy_resume_item_t *it = items != NULL ? &items[nitems++] : &dummy;
        sy_resume_prepare(io, c, t, a->heads != NULL || pos.resume ? &pos : NULL, &budget, it);
        if (items == NULL)
            sy_resume_deliver(io, c, it); /* out of memory for the list: the notice and replay cannot wait */
    }
    a->ntopics = 0;
    sy_free(heap);
    sy_upgrade_consume_head(c, (size_t)n);
    if (sy_conn_sse(c))
        sy_upgrade_open_stream(io, c, extra ? (const char *)extra->data : NULL, extra ? extra->len : 0,
                               a->protocol_len == SY_V2_PROTOCOL_LEN &&
                                   memcmp(a->protocol, SY_V2_PROTOCOL, SY_V2_PROTOCOL_LEN) == 0);
    else
        sy_upgrade_open_ws(io, c, accept, a->protocol, a->protocol_len, extra ? (const char *)extra->data : NULL,
                           extra ? extra->len : 0);
    for (size_t i = 0; i < nitems; i++) {
        items[i].quiet = i + 1 < nitems; /* a stream's positions once, on its last notice */
        sy_resume_deliver(io, c, &items[i]);
    }
    sy_free(items);
    sy_refbuf_release(extra);
    sy_accept_free(&sy_io_ctx(io)->shared->topics, sy_io_ctx(io)->index, a);
}

void sy_answer_refuse(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *response) {
    if (c->state != SY_CONN_UPGRADING) {
        sy_refbuf_release(response);
        return;
    }
    sy_conn_unsubscribe_all(io, c);
    sy_reply(io, c, response, true);
}
