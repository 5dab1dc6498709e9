/*
 * sse_reader.h — a WHATWG EventSource reader (HTML, "Interpreting an event
 * stream") for the tests of event streams: __test__/c/test_sse.c and
 * __test__/fuzz/fuzz_sse.c read what sy_sse makes with it. Lines end at
 * CR, LF or CRLF; "data" lines are joined with LF; one space after the
 * colon is dropped; an empty line dispatches; the last id is kept across
 * events. Static functions: each test includes it once.
 *
 * Ownership: the decoded type and last id point into the stream read (it
 * must outlive them); data is the reader's (decoded_free).
 */
#ifndef SSE_READER_H
#define SSE_READER_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct decoded {
    unsigned events; /* events dispatched */
    char *data;      /* the last dispatched event's data (malloc'd) */
    size_t data_len;
    const char *type; /* its type: into the stream, or "message" */
    size_t type_len;
    const char *last_id; /* the last event ID (as the source keeps it): into the stream */
    size_t last_id_len;
    bool enc_base64; /* the last event had "enc: base64" (our client's field) */
    unsigned others; /* lines with fields other than id/event/data/enc/retry */
    bool trailing;   /* bytes after the last dispatch (an incomplete event) */
} decoded_t;

static inline void decoded_free(decoded_t *d) {
    free(d->data);
    d->data = NULL;
}

/* Reads s[0..n) as an event stream into *d (zeroed here). */
static inline void decode_stream(const char *s, size_t n, decoded_t *d) {
    memset(d, 0, sizeof(*d));
    char *data = malloc(n + 1);
    if (data == NULL)
        abort();
    size_t dlen = 0;
    const char *type = NULL;
    size_t tlen = 0;
    bool enc = false;
    size_t i = 0;
    while (i < n) {
        size_t start = i;
        while (i < n && s[i] != '\r' && s[i] != '\n')
            i++;
        if (i == n) {
            d->trailing = true;
            break;
        }
        size_t end = i;
        if (s[i] == '\r' && i + 1 < n && s[i + 1] == '\n')
            i++;
        i++;
        const char *line = s + start;
        size_t len = end - start;
        if (len == 0) {
            if (dlen == 0) {
                tlen = 0;
                enc = false;
                continue;
            }
            if (data[dlen - 1] == '\n')
                dlen--;
            free(d->data);
            d->data = malloc(dlen + 1);
            if (d->data == NULL)
                abort();
            memcpy(d->data, data, dlen);
            d->data_len = dlen;
            d->type = tlen > 0 ? type : "message";
            d->type_len = tlen > 0 ? tlen : 7;
            d->enc_base64 = enc;
            d->events++;
            dlen = 0;
            tlen = 0;
            enc = false;
            continue;
        }
        if (line[0] == ':')
            continue;
        const char *colon = memchr(line, ':', len);
        size_t flen = colon != NULL ? (size_t)(colon - line) : len;
        const char *v = colon != NULL ? colon + 1 : line + len;
        size_t vlen = colon != NULL ? len - flen - 1 : 0;
        if (vlen > 0 && v[0] == ' ') {
            v++;
            vlen--;
        }
        if (flen == 5 && memcmp(line, "event", 5) == 0) {
            type = v;
            tlen = vlen;
        } else if (flen == 4 && memcmp(line, "data", 4) == 0) {
            memcpy(data + dlen, v, vlen);
            dlen += vlen;
            data[dlen++] = '\n';
        } else if (flen == 2 && memcmp(line, "id", 2) == 0) {
            if (memchr(v, '\0', vlen) == NULL) {
                d->last_id = v;
                d->last_id_len = vlen;
            }
        } else if (flen == 3 && memcmp(line, "enc", 3) == 0) {
            enc = vlen == 6 && memcmp(v, "base64", 6) == 0;
        } else if (!(flen == 5 && memcmp(line, "retry", 5) == 0)) {
            d->others++;
        }
    }
    if (dlen > 0 || tlen > 0)
        d->trailing = true;
    free(data);
}

#endif
