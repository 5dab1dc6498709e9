/* libFuzzer target: sy_pusher_http over Pusher HTTP API requests. The
 * input's first byte picks the method (GET or POST) and the body's route
 * (events or batch_events); the rest up to the first '\n' is the request
 * target, what follows the body.
 *
 * Aborts when a contract does not hold:
 *  - every result is an error of the list with a status and words (never
 *    NOMEM here); on an error nothing is held;
 *  - on OK: the string to sign is METHOD "\n" PATH "\n" ..., the app id
 *    1 byte or more, the timestamp within 600 s of now, a signature
 *    given, body_md5 given when there is a body, and the message
 *    builder's text fits its buffer, and info's attributes
 *    (sy_pusher_http_info) are only the bits defined;
 *  - an events body read: 1 to max_batch events, each with a name within
 *    the limit, data within max_payload, 1 to max_channels channels that
 *    pass sy_pusher_channel_check, a socket id that is valid; and the
 *    envelope of each is JSON that yyjson reads back. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <yyjson.h>

#include "base/sy_refbuf.h"
#include "proto/sy_pusher.h"
#include "proto/sy_pusher_http.h"

#define REQUIRE(c)   \
    do {             \
        if (!(c))    \
            abort(); \
    } while (0)

#define NOW 1700000000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    const char *method = (data[0] & 1) ? "POST" : "GET";
    sy_pusher_route_t route = (data[0] & 2) ? SY_PUSHER_API_BATCH_EVENTS : SY_PUSHER_API_EVENTS;
    const uint8_t *nl = memchr(data + 1, '\n', size - 1);
    size_t tlen = nl != NULL ? (size_t)(nl - data - 1) : size - 1;
    size_t blen = nl != NULL ? size - 1 - tlen - 1 : 0;
    /* Each on the heap at its exact size: ASan sees a read past it. */
    char *target = malloc(tlen ? tlen : 1);
    uint8_t *body = malloc(blen ? blen : 1);
    REQUIRE(target != NULL && body != NULL);
    memcpy(target, data + 1, tlen);
    if (blen > 0)
        memcpy(body, nl + 1, blen);

    sy_pusher_req_t r;
    sy_pusher_http_err_t e = sy_pusher_http_request(method, strlen(method), target, tlen, blen, NOW, 200, &r);
    REQUIRE((unsigned)e < SY_PUSHER_HTTP_ERR_COUNT && e != SY_PUSHER_HTTP_NOMEM);
    char msg[256];
    size_t mlen = sy_pusher_http_message(msg, sizeof(msg), e == SY_PUSHER_HTTP_OK ? SY_PUSHER_HTTP_SIGNATURE : e,
                                         e == SY_PUSHER_HTTP_OK ? &r : NULL, NOW);
    REQUIRE(mlen < sizeof(msg) && msg[mlen] == '\0' && mlen > 0);
    if (e != SY_PUSHER_HTTP_OK) {
        REQUIRE(r.block == NULL && r.to_sign == NULL);
        REQUIRE(sy_pusher_http_status(e) >= 400);
    } else {
        size_t ml = strlen(method);
        REQUIRE(r.to_sign_len > ml + 1 && memcmp(r.to_sign, method, ml) == 0 && r.to_sign[ml] == '\n');
        REQUIRE(r.app_id_len >= 1 && r.auth_key_len >= 1 && r.auth_signature_len >= 1);
        REQUIRE(r.auth_timestamp >= NOW - 600 && r.auth_timestamp <= NOW + 600);
        REQUIRE(blen == 0 || r.body_md5 != NULL);
        /* info: only the bits there are; a list read again reads the same. */
        unsigned info = sy_pusher_http_info(r.info, r.info_len);
        REQUIRE((info & ~(SY_PUSHER_INFO_SUBSCRIPTION_COUNT | SY_PUSHER_INFO_USER_COUNT)) == 0);
        REQUIRE(info == sy_pusher_http_info(r.info, r.info_len));
        REQUIRE(r.info != NULL || info == 0);
        REQUIRE(r.filter_by_prefix == NULL || r.route == SY_PUSHER_API_CHANNELS || r.filter_by_prefix_len <= tlen);
        if (r.route == SY_PUSHER_API_CHANNEL || r.route == SY_PUSHER_API_CHANNEL_USERS) {
            sy_pusher_chan_t c;
            REQUIRE(sy_pusher_channel_check(r.name, r.name_len, 200, &c) == SY_PUSHER_OK);
            REQUIRE(r.route != SY_PUSHER_API_CHANNEL_USERS || c.type == SY_PUSHER_PRESENCE);
        }
        sy_pusher_req_free(&r);
    }

    sy_pusher_http_limits_t lim = {.max_body = 4096,
                                   .max_event_len = 200,
                                   .max_channel_len = 200,
                                   .max_payload = 1024,
                                   .max_channels = 100,
                                   .max_batch = 10};
    sy_pusher_events_t ev;
    e = sy_pusher_http_events(route, body, blen, &lim, &ev);
    REQUIRE((unsigned)e < SY_PUSHER_HTTP_ERR_COUNT && e != SY_PUSHER_HTTP_NOMEM);
    if (e != SY_PUSHER_HTTP_OK) {
        REQUIRE(ev.doc == NULL && ev.events == NULL);
    } else {
        REQUIRE(ev.nevents >= 1 && ev.nevents <= lim.max_batch);
        for (size_t i = 0; i < ev.nevents; i++) {
            const sy_pusher_api_event_t *x = &ev.events[i];
            REQUIRE(x->name.len >= 1 && x->name.len <= lim.max_event_len && x->data.len <= lim.max_payload);
            REQUIRE(x->nchannels >= 1 && x->nchannels <= lim.max_channels);
            REQUIRE(x->socket_id.s == NULL || sy_pusher_socket_id_valid(x->socket_id.s, x->socket_id.len));
            for (size_t j = 0; j < x->nchannels; j++) {
                sy_pusher_chan_t c;
                REQUIRE(sy_pusher_channel_check(x->channels[j].s, x->channels[j].len, 200, &c) == SY_PUSHER_OK);
            }
            sy_refbuf_t *f = sy_pusher_event_frame(x->name.s, x->name.len, x->channels[0].s, x->channels[0].len,
                                                   x->data.s, x->data.len, SY_PUSHER_DATA_BYTES, NULL, 0, false);
            REQUIRE(f != NULL);
            yyjson_doc *d = yyjson_read((const char *)sy_refbuf_payload(f), sy_refbuf_payload_len(f), 0);
            REQUIRE(d != NULL);
            yyjson_val *got = yyjson_obj_get(yyjson_doc_get_root(d), "data");
            REQUIRE(yyjson_get_len(got) == x->data.len && memcmp(yyjson_get_str(got), x->data.s, x->data.len) == 0);
            yyjson_doc_free(d);
            sy_refbuf_release(f);
        }
        sy_pusher_events_free(&ev);
    }
    free(target);
    free(body);
    return 0;
}
