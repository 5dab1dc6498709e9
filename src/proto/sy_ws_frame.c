/* RFC 6455 frame layer. See sy_ws_frame.h. */
#include "proto/sy_ws_frame.h"

#include <string.h>

#include "proto/sy_utf8.h"

static int opcode_defined(unsigned op) {
    return op <= SY_WS_OP_BINARY || (op >= SY_WS_OP_CLOSE && op <= SY_WS_OP_PONG);
}

long sy_ws_frame_parse(const uint8_t *buf, size_t len, unsigned role, sy_ws_frame_t *out) {
    unsigned fin, rsv, op, masked, len7;
    size_t hlen, pos;
    uint64_t plen;

    if (len < 1)
        return SY_WS_PARTIAL;
    fin = buf[0] >> 7;
    rsv = (buf[0] >> 4) & 0x7u;
    op = buf[0] & 0x0Fu;
    if ((rsv & 0x3u) != 0 || (rsv != 0 && !(role & SY_WS_ALLOW_RSV1)))
        return SY_WS_E_RSV;
    if (!opcode_defined(op))
        return SY_WS_E_OPCODE;
    if (rsv != 0 && SY_WS_OP_IS_CONTROL(op))
        return SY_WS_E_RSV1_CONTROL;
    if (rsv != 0 && op == SY_WS_OP_CONTINUATION)
        return SY_WS_E_RSV1_CONTINUATION;
    if (SY_WS_OP_IS_CONTROL(op) && !fin)
        return SY_WS_E_CONTROL_FRAGMENTED;

    if (len < 2)
        return SY_WS_PARTIAL;
    masked = buf[1] >> 7;
    len7 = buf[1] & 0x7Fu;
    if (role & SY_WS_ROLE_CLIENT) {
        if (masked)
            return SY_WS_E_MASKED;
    } else if (!masked) {
        return SY_WS_E_UNMASKED;
    }
    if (SY_WS_OP_IS_CONTROL(op) && len7 > SY_WS_MAX_CONTROL_PAYLOAD)
        return SY_WS_E_CONTROL_TOO_LONG;

    hlen = 2;
    if (len7 == 126)
        hlen += 2;
    else if (len7 == 127)
        hlen += 8;
    if (len7 == 127 && len >= 3 && (buf[2] & 0x80u) != 0)
        return SY_WS_E_LENGTH_MSB;
    if (masked)
        hlen += 4;
    if (len < hlen)
        return SY_WS_PARTIAL;

    pos = 2;
    if (len7 == 126) {
        plen = ((uint64_t)buf[2] << 8) | buf[3];
        pos = 4;
    } else if (len7 == 127) {
        plen = 0;
        for (pos = 2; pos < 10; pos++)
            plen = (plen << 8) | buf[pos];
    } else {
        plen = len7;
    }

    out->fin = (uint8_t)fin;
    out->rsv = (uint8_t)rsv;
    out->opcode = (uint8_t)op;
    out->masked = (uint8_t)masked;
    if (masked)
        memcpy(out->mask, buf + pos, 4);
    else
        memset(out->mask, 0, 4);
    out->payload_len = plen;
    out->header_len = hlen;
    return (long)hlen;
}

void sy_ws_unmask(uint8_t *data, size_t len, const uint8_t key[4], size_t offset) {
    uint8_t k[8];
    uint64_t m, w0, w1;
    size_t i = 0;

    /* k[j] is the key byte for payload position offset + j; with period 4
     * it also serves every position congruent to j mod 8. */
    for (unsigned j = 0; j < 8; j++)
        k[j] = key[(offset + j) & 3u];
    memcpy(&m, k, 8);

    for (; len - i >= 16; i += 16) {
        memcpy(&w0, data + i, 8);
        memcpy(&w1, data + i + 8, 8);
        w0 ^= m;
        w1 ^= m;
        memcpy(data + i, &w0, 8);
        memcpy(data + i + 8, &w1, 8);
    }
    if (len - i >= 8) {
        memcpy(&w0, data + i, 8);
        w0 ^= m;
        memcpy(data + i, &w0, 8);
        i += 8;
    }
    for (; i < len; i++)
        data[i] ^= k[i & 7u];
}

/* Writes byte 0, byte 1's length part and the extended length; returns the
 * bytes written or 0 if the frame may not be built. */
static size_t build_header(uint8_t *out, int fin, unsigned opcode, uint64_t payload_len, unsigned mask_bit) {
    if (!opcode_defined(opcode))
        return 0;
    if ((payload_len >> 63) != 0)
        return 0;
    if (SY_WS_OP_IS_CONTROL(opcode) && (!fin || payload_len > SY_WS_MAX_CONTROL_PAYLOAD))
        return 0;
    out[0] = (uint8_t)((fin ? 0x80u : 0u) | opcode);
    if (payload_len <= 125) {
        out[1] = (uint8_t)(mask_bit | (unsigned)payload_len);
        return 2;
    }
    if (payload_len <= 0xFFFFu) {
        out[1] = (uint8_t)(mask_bit | 126u);
        out[2] = (uint8_t)(payload_len >> 8);
        out[3] = (uint8_t)payload_len;
        return 4;
    }
    out[1] = (uint8_t)(mask_bit | 127u);
    for (unsigned i = 0; i < 8; i++)
        out[2 + i] = (uint8_t)(payload_len >> (56 - 8 * i));
    return 10;
}

size_t sy_ws_frame_header(uint8_t out[10], int fin, unsigned opcode, uint64_t payload_len) {
    return build_header(out, fin, opcode, payload_len, 0);
}

size_t sy_ws_frame_header_masked(uint8_t out[14], int fin, unsigned opcode, uint64_t payload_len,
                                 const uint8_t key[4]) {
    size_t n = build_header(out, fin, opcode, payload_len, 0x80u);

    if (n == 0)
        return 0;
    memcpy(out + n, key, 4);
    return n + 4;
}

long sy_ws_frag_step(int in_message, unsigned opcode, int fin) {
    if (!opcode_defined(opcode))
        return SY_WS_E_OPCODE;
    if (SY_WS_OP_IS_CONTROL(opcode))
        return in_message ? 1 : 0;
    if (opcode == SY_WS_OP_CONTINUATION) {
        if (!in_message)
            return SY_WS_E_UNEXPECTED_CONTINUATION;
    } else if (in_message) {
        return SY_WS_E_EXPECTED_CONTINUATION;
    }
    return fin ? 0 : 1;
}

bool sy_ws_close_code_valid(unsigned code) {
    if (code >= 1000 && code <= 1003)
        return 1;
    if (code >= 1007 && code <= 1014)
        return 1;
    return code >= 3000 && code <= 4999;
}

int sy_ws_close_parse(const uint8_t *payload, size_t len, uint16_t *code, const uint8_t **reason, size_t *reason_len) {
    uint16_t c;

    if (len > SY_WS_MAX_CONTROL_PAYLOAD)
        return SY_WS_E_CONTROL_TOO_LONG;
    if (len == 0) {
        *code = 1005;
        *reason = payload;
        *reason_len = 0;
        return 0;
    }
    if (len == 1)
        return SY_WS_E_CLOSE_PAYLOAD;
    c = (uint16_t)(((unsigned)payload[0] << 8) | payload[1]);
    if (!sy_ws_close_code_valid(c))
        return SY_WS_E_CLOSE_CODE;
    if (!sy_utf8_is_valid(payload + 2, len - 2))
        return SY_WS_E_CLOSE_UTF8;
    *code = c;
    *reason = payload + 2;
    *reason_len = len - 2;
    return 0;
}

/* Length of the longest prefix of s[0..len) that ends on a UTF-8 boundary
 * (s[len] is readable: the cut is inside a longer string). */
static size_t utf8_cut(const char *s, size_t len) {
    while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
        len--;
    return len;
}

size_t sy_ws_close_payload(uint8_t out[SY_WS_MAX_CONTROL_PAYLOAD], unsigned code, const char *reason,
                           size_t reason_len) {
    if (code == 0 || !sy_ws_close_code_valid(code))
        return 0;
    if (reason_len > SY_WS_MAX_CONTROL_PAYLOAD - 2)
        reason_len = utf8_cut(reason, SY_WS_MAX_CONTROL_PAYLOAD - 2);
    out[0] = (uint8_t)(code >> 8);
    out[1] = (uint8_t)code;
    if (reason_len > 0)
        memcpy(out + 2, reason, reason_len);
    return 2 + reason_len;
}

unsigned sy_ws_error_close_code(long err) {
    if (err >= 0)
        return 0;
    if (err == SY_WS_E_CLOSE_UTF8)
        return 1007;
    return 1002;
}

static const char *const ERROR_TEXT[] = {
#define SY_WS_E_TEXT_(e, v, text) [-(v)] = text,
    SY_WS_ERRORS_LIST(SY_WS_E_TEXT_)
#undef SY_WS_E_TEXT_
};

const char *sy_ws_error_str(long err) {
    long n = (long)(sizeof(ERROR_TEXT) / sizeof(ERROR_TEXT[0]));
    return err < 0 && err > -n && ERROR_TEXT[-err] != NULL ? ERROR_TEXT[-err] : "unknown error";
}
