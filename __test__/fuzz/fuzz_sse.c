/* libFuzzer target: sy_sse's parser and builders, and sy_v1_frame_read.
 *
 * Aborts when a contract does not hold:
 *  - sy_sse_last_event_id, given the whole input as the Last-Event-ID
 *    value: a reason for an empty or over-long value and for one with '#'
 *    or '?'; when it accepts, the query is '?', the value and a NUL,
 *    sy_since_check agrees, sy_since_next yields at least one entry, each
 *    with a topic of 1 to SY_SINCE_TOPIC_MAX bytes of valid UTF-8, and each
 *    entry written again by sy_sse_id_entry (at the length
 *    sy_sse_id_entry_len said) reads back the same;
 *  - sy_sse_event over a name, an id and a payload cut from the input, as
 *    text and as binary: the event ends with "\n\n", and a WHATWG
 *    EventSource reader (below) dispatches exactly one event, with nothing
 *    left over and no other fields: its data is the text payload with each
 *    CRLF and lone CR made LF (NUL bytes kept), or the base64 of the binary
 *    one with "enc: base64"; its type is the name unless the name holds CR,
 *    LF or NUL ("message" then, as for no name); its id is the id;
 *  - sy_v1_frame_read over a frame made of the input (a header of 0, 2, 4
 *    or 10 bytes, then the payload, on the heap at its exact size): it
 *    never reads past it, and its body is inside the payload; a publish
 *    frame built from input values reads back as built. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../c/sse_reader.h"
#include "proto/sy_base64.h"
#include "proto/sy_since.h"
#include "proto/sy_sse.h"
#include "proto/sy_utf8.h"
#include "proto/sy_v1.h"
#include "proto/sy_ws_frame.h"

#define REQUIRE(c)   \
    do {             \
        if (!(c))    \
            abort(); \
    } while (0)

static size_t normalize(const uint8_t *p, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\r') {
            out[o++] = '\n';
            if (i + 1 < n && p[i + 1] == '\n')
                i++;
        } else {
            out[o++] = (char)p[i];
        }
    }
    return o;
}

/* ---- Last-Event-ID */

static void last_event_id(const uint8_t *data, size_t size) {
    char *v = malloc(size ? size : 1);
    char *q = malloc(size + 2);
    REQUIRE(v != NULL && q != NULL);
    if (size > 0)
        memcpy(v, data, size);
    const char *why = sy_sse_last_event_id(v, size, q);
    if (size == 0 || size > SY_SSE_LAST_ID_MAX || memchr(v, '#', size) != NULL || memchr(v, '?', size) != NULL)
        REQUIRE(why != NULL);
    if (why != NULL) {
        REQUIRE(why[0] != '\0');
        free(v);
        free(q);
        return;
    }
    REQUIRE(q[0] == '?' && memcmp(q + 1, v, size) == 0 && q[size + 1] == '\0');
    REQUIRE(sy_since_check(q, size + 1) == NULL);
    char *topic = malloc(SY_SINCE_TOPIC_MAX); /* exact: ASan sees a write past it */
    char *entry = malloc(SY_SSE_ENTRY_MAX);
    char *q2 = malloc(SY_SSE_ENTRY_MAX + 1);
    REQUIRE(topic != NULL && entry != NULL && q2 != NULL);
    sy_since_iter_t it = {0};
    sy_since_t e;
    size_t n = 0;
    while (sy_since_next(q, size + 1, &it, &e, topic)) {
        REQUIRE(e.topic == topic && e.topic_len >= 1 && e.topic_len <= SY_SINCE_TOPIC_MAX);
        REQUIRE(sy_utf8_is_valid((const uint8_t *)e.topic, e.topic_len));
        n++;
        /* Written again as we write ids: the same position back. */
        size_t el = sy_sse_id_entry(entry, e.epoch, e.offset, e.topic, e.topic_len);
        REQUIRE(el > 0 && el < SY_SSE_ENTRY_MAX);
        REQUIRE(sy_sse_id_entry_len(e.offset, e.topic, e.topic_len) == el); /* sized before written */
        REQUIRE(sy_sse_last_event_id(entry, el, q2) == NULL);
        sy_since_iter_t it2 = {0};
        sy_since_t f;
        char topic2[SY_SINCE_TOPIC_MAX];
        REQUIRE(sy_since_next(q2, el + 1, &it2, &f, topic2));
        REQUIRE(f.epoch == e.epoch && f.offset == e.offset && f.topic_len == e.topic_len &&
                memcmp(f.topic, e.topic, e.topic_len) == 0);
        REQUIRE(!sy_since_next(q2, el + 1, &it2, &f, topic2));
    }
    REQUIRE(n >= 1 && n <= SY_SINCE_MAX);
    free(q2);
    free(entry);
    free(topic);
    free(v);
    free(q);
}

/* ---- events */

static void one_event(const char *id, size_t idn, const uint8_t *name, size_t nlen, const uint8_t *p, size_t len,
                      bool binary) {
    sy_refbuf_t *m = sy_sse_event(id, idn, (const char *)name, nlen, p, len, binary);
    REQUIRE(m != NULL);
    REQUIRE(m->hlen == 0 && m->len >= 2 && memcmp(m->data + m->len - 2, "\n\n", 2) == 0);
    decoded_t d;
    decode_stream((const char *)m->data, m->len, &d);
    REQUIRE(d.events == 1 && !d.trailing && d.others == 0);
    REQUIRE(d.last_id_len == idn && (idn == 0 || memcmp(d.last_id, id, idn) == 0));
    bool name_ok = nlen > 0 && memchr(name, '\n', nlen) == NULL && memchr(name, '\r', nlen) == NULL &&
                   memchr(name, '\0', nlen) == NULL;
    if (name_ok)
        REQUIRE(d.type_len == nlen && memcmp(d.type, name, nlen) == 0);
    else
        REQUIRE(d.type_len == 7 && memcmp(d.type, "message", 7) == 0);
    if (binary) {
        REQUIRE(d.enc_base64);
        uint8_t *back = malloc(len ? len : 1);
        size_t got = 0;
        REQUIRE(back != NULL);
        REQUIRE(sy_base64_decode(d.data, d.data_len, back, len, &got) == 0);
        REQUIRE(got == len && (len == 0 || memcmp(back, p, len) == 0));
        free(back);
    } else {
        REQUIRE(!d.enc_base64);
        char *want = malloc(len ? len : 1);
        REQUIRE(want != NULL);
        size_t wl = normalize(p, len, want);
        REQUIRE(d.data_len == wl && (wl == 0 || memcmp(d.data, want, wl) == 0));
        free(want);
    }
    free(d.data);
    sy_refbuf_release(m);
}

static void events(const uint8_t *data, size_t size) {
    if (size < 1)
        return;
    /* The first byte: the name's length (0..63) and whether there is an id. */
    size_t nlen = data[0] & 63u;
    bool with_id = (data[0] & 64u) != 0;
    data++;
    size_t rest = size - 1;
    if (nlen > rest)
        nlen = rest;
    const uint8_t *name = data;
    const uint8_t *p = data + nlen;
    size_t len = rest - nlen;
    /* An id as the server writes them: one entry, the name as its topic. */
    char *id = malloc(SY_SSE_ENTRY_MAX);
    REQUIRE(id != NULL);
    size_t idn = 0;
    if (with_id) {
        uint64_t x = 0;
        for (size_t i = 0; i < len && i < 8; i++)
            x = x << 8 | p[i];
        idn = sy_sse_id_entry(id, x, ~x, (const char *)name, nlen);
        REQUIRE(idn > 0 && idn < SY_SSE_ENTRY_MAX && sy_sse_id_entry_len(~x, (const char *)name, nlen) == idn);
        REQUIRE(memchr(id, '\n', idn) == NULL && memchr(id, '\r', idn) == NULL && memchr(id, '\0', idn) == NULL);
    }
    /* On the heap at their exact sizes. */
    uint8_t *nm = malloc(nlen ? nlen : 1);
    uint8_t *pl = malloc(len ? len : 1);
    REQUIRE(nm != NULL && pl != NULL);
    if (nlen > 0)
        memcpy(nm, name, nlen);
    if (len > 0)
        memcpy(pl, p, len);
    one_event(id, idn, nm, nlen, pl, len, false);
    one_event(id, idn, nm, nlen, pl, len, true);
    free(pl);
    free(nm);
    free(id);
}

/* ---- sy_v1_frame_read */

static void frames(const uint8_t *data, size_t size) {
    if (size < 1)
        return;
    static const size_t hlens[4] = {0, 2, 4, 10};
    size_t hlen = hlens[data[0] & 3u];
    data++;
    size--;
    if (hlen > size)
        hlen = size;
    sy_refbuf_t *m = sy_refbuf_make(data, hlen, data + hlen, size - hlen, SY_REFBUF_Z_NONE);
    REQUIRE(m != NULL);
    sy_v1_frame_info_t info;
    if (sy_v1_frame_read(m, &info)) {
        REQUIRE(m->hlen > 0);
        REQUIRE(info.kind == 'p' || info.kind == 'd' || info.kind == 'c');
        REQUIRE(info.body <= sy_refbuf_payload_len(m));
        REQUIRE(info.body >= 1);
        REQUIRE(info.binary == ((m->data[0] & 0x0fu) == SY_WS_OP_BINARY));
    }
    sy_refbuf_release(m);

    /* A real frame from input values reads back as built. */
    uint64_t x = 0;
    for (size_t i = 0; i < size && i < 12; i++)
        x = x << 8 | data[i];
    uint32_t id = (uint32_t)(x >> 32);
    bool has_offset = (x & 1u) != 0;
    unsigned op = (x & 2u) != 0 ? SY_WS_OP_BINARY : SY_WS_OP_TEXT;
    m = sy_v1_publish_frame(op, id, has_offset, x, data, size, false);
    REQUIRE(m != NULL && sy_v1_frame_read(m, &info));
    REQUIRE(info.kind == 'p' && info.id == id && info.has_offset == has_offset && (!has_offset || info.offset == x));
    REQUIRE(info.binary == (op == SY_WS_OP_BINARY));
    REQUIRE(sy_refbuf_payload_len(m) - info.body == size &&
            (size == 0 || memcmp(sy_refbuf_payload(m) + info.body, data, size) == 0));
    sy_refbuf_release(m);
    m = sy_v1_direct_frame(op, data, size, false);
    REQUIRE(m != NULL && sy_v1_frame_read(m, &info) && info.kind == 'd' && info.body == 2);
    sy_refbuf_release(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    last_event_id(data, size);
    events(data, size);
    frames(data, size);
    return 0;
}
