/* libFuzzer target: the RFC 6455 frame layer.
 *
 * Input: byte 0 picks the role and split points; the rest is a byte stream
 * from a peer. Two passes:
 *  1. sy_ws_frame_parse on the stream's start, with invariants: a
 *     successful header is rebuilt byte-for-byte by the header builders when
 *     its length encoding is minimal; every shorter prefix is PARTIAL; an
 *     error is reported by every prefix as either PARTIAL or the same error.
 *  2. A stream walk: parse a header, unmask its payload in pieces (compared
 *     with a byte-wise reference), apply the fragmentation rule, validate
 *     text with sy_utf8 across frames, parse close payloads; skip the
 *     payload; repeat until an error or the end. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sy_utf8.h"
#include "proto/sy_ws_frame.h"

#define REQUIRE(c) do { if (!(c)) abort(); } while (0)

static void check_single(const uint8_t *b, size_t len, unsigned role)
{
    sy_ws_frame_t f, f2;
    long rc = sy_ws_frame_parse(b, len, role, &f);

    if (rc > 0) {
        uint8_t h[14];
        size_t hn;
        REQUIRE((size_t)rc == f.header_len && (size_t)rc <= len);
        REQUIRE(rc == 2 || rc == 4 || rc == 6 || rc == 8 || rc == 10 ||
                rc == 14);
        REQUIRE(f.rsv == 0 && (f.payload_len >> 63) == 0);
        REQUIRE(f.masked == (role == SY_WS_ROLE_SERVER));
        if (SY_WS_OP_IS_CONTROL(f.opcode))
            REQUIRE(f.fin && f.payload_len <= 125);
        if (f.masked)
            hn = sy_ws_frame_header_masked(h, f.fin, f.opcode, f.payload_len, f.mask);
        else
            hn = sy_ws_frame_header(h, f.fin, f.opcode, f.payload_len);
        REQUIRE(hn > 0 && hn <= (size_t)rc);
        if (hn == (size_t)rc)
            REQUIRE(memcmp(h, b, hn) == 0);
        for (size_t k = 0; k < (size_t)rc; k++)
            REQUIRE(sy_ws_frame_parse(b, k, role, &f2) == SY_WS_PARTIAL);
    } else if (rc < 0) {
        REQUIRE(sy_ws_error_close_code(rc) == 1002);
        REQUIRE(strcmp(sy_ws_error_str(rc), "unknown error") != 0);
        for (size_t k = 0; k < len && k < 16; k++) {
            long r2 = sy_ws_frame_parse(b, k, role, &f2);
            REQUIRE(r2 == SY_WS_PARTIAL || r2 == rc);
        }
    } else {
        REQUIRE(len < SY_WS_MAX_HEADER_LEN);
    }
}

static void check_stream(uint8_t *buf, size_t len, unsigned role, uint8_t sel)
{
    size_t pos = 0;
    int in_msg = 0, text = 0;
    uint32_t utf8 = SY_UTF8_ACCEPT;

    while (pos < len) {
        sy_ws_frame_t f;
        long rc = sy_ws_frame_parse(buf + pos, len - pos, role, &f);
        long step;
        uint8_t *pl;
        size_t plen, cut;

        if (rc <= 0)
            return;
        pos += (size_t)rc;
        if (f.payload_len > len - pos)
            return;
        plen = (size_t)f.payload_len;
        pl = buf + pos;

        /* Unmask in up to three pieces; compare with the reference. */
        if (f.masked) {
            uint8_t *ref = malloc(plen ? plen : 1);
            REQUIRE(ref != NULL);
            for (size_t i = 0; i < plen; i++)
                ref[i] = (uint8_t)(pl[i] ^ f.mask[i & 3]);
            cut = plen ? (sel * 7u) % (plen + 1) : 0;
            sy_ws_unmask(pl, cut, f.mask, 0);
            sy_ws_unmask(pl + cut, (plen - cut) / 2, f.mask, cut);
            sy_ws_unmask(pl + cut + (plen - cut) / 2, plen - cut - (plen - cut) / 2,
                         f.mask, cut + (plen - cut) / 2);
            REQUIRE(plen == 0 || memcmp(ref, pl, plen) == 0);
            free(ref);
        }

        step = sy_ws_frag_step(in_msg, f.opcode, f.fin);
        if (step < 0) {
            REQUIRE(sy_ws_error_close_code(step) == 1002);
            return;
        }
        if (f.opcode == SY_WS_OP_CLOSE) {
            uint16_t code = 0;
            const uint8_t *reason = NULL;
            size_t rlen = 0;
            int cr = sy_ws_close_parse(pl, plen, &code, &reason, &rlen);
            if (cr == 0) {
                REQUIRE(code == 1005 || sy_ws_close_code_valid(code));
                REQUIRE(rlen == (plen ? plen - 2 : 0));
                REQUIRE(sy_utf8_is_valid(reason, rlen));
                if (plen > 0) {
                    uint8_t again[125];
                    size_t n = sy_ws_close_payload(again, code, (const char *)reason, rlen);
                    REQUIRE(n == plen && memcmp(again, pl, n) == 0);
                }
            } else {
                unsigned cc = sy_ws_error_close_code(cr);
                REQUIRE(cc == 1002 || (cc == 1007 && cr == SY_WS_E_CLOSE_UTF8));
            }
            return; /* nothing is read after a close */
        }
        if (!SY_WS_OP_IS_CONTROL(f.opcode)) {
            if (f.opcode == SY_WS_OP_TEXT)
                text = 1;
            else if (f.opcode == SY_WS_OP_BINARY)
                text = 0;
            if (text) {
                utf8 = sy_utf8_validate(utf8, pl, plen);
                if (utf8 == SY_UTF8_REJECT)
                    return; /* 1007 */
                if (step == 0 && utf8 != SY_UTF8_ACCEPT)
                    return; /* message ended inside a character: 1007 */
            }
            if (step == 0)
                utf8 = SY_UTF8_ACCEPT;
        }
        in_msg = (int)step;
        pos += plen;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned role;
    uint8_t sel, *copy;

    if (size < 1)
        return 0;
    sel = data[0];
    role = (sel & 1) ? SY_WS_ROLE_CLIENT : SY_WS_ROLE_SERVER;
    data++;
    size--;

    check_single(data, size, role);

    copy = malloc(size ? size : 1);
    REQUIRE(copy != NULL);
    if (size > 0)
        memcpy(copy, data, size);
    check_stream(copy, size, role, sel);
    free(copy);
    return 0;
}
