/* libFuzzer target: permessage-deflate's inflation and compression
 * (src/io/model/sy_deflate.c over libdeflate).
 *
 * Input: byte 0 picks the mode, bytes 1-2 the output bound (max); the rest
 * is the data.
 *  - odd mode: the data is a compressed message from a peer. sy_inflate
 *    must return 0 (with at most max bytes), EMSGSIZE or EBADMSG; the
 *    message and the bytes after it come back unchanged.
 *  - even mode: the data is a message we publish. Its compressed twin, if
 *    any, is smaller, is a valid RSV1 frame, and inflates back to the data
 *    exactly; asking again gives the same twin. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/sy_refbuf.h"
#include "io/model/sy_deflate.h"
#include "proto/sy_ws_frame.h"
#include "proto/sy_ws_msg.h"

#define REQUIRE(c)   \
    do {             \
        if (!(c))    \
            abort(); \
    } while (0)

static sy_deflate_t z;
static sy_deflate_once_t once;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    sy_deflate_init(&z, 6, NULL);
    REQUIRE(sy_deflate_once_init(&once) == 0);
    return 0;
}

static int inflate_checked(const uint8_t *in, size_t n, size_t max, uint8_t **out, size_t *out_len) {
    uint8_t *buf = malloc(n + SY_INFLATE_TAIL);
    REQUIRE(buf != NULL);
    if (n > 0)
        memcpy(buf, in, n);
    memset(buf + n, 0xA5, SY_INFLATE_TAIL);
    const uint8_t *msg = NULL;
    size_t len = 0;
    int rc = sy_inflate(&z, buf, n, max, 0, &msg, &len);
    REQUIRE(rc == 0 || rc == EMSGSIZE || rc == EBADMSG);
    REQUIRE(n == 0 || memcmp(buf, in, n) == 0);
    for (size_t i = 0; i < SY_INFLATE_TAIL; i++)
        REQUIRE(buf[n + i] == 0xA5);
    if (rc == 0) {
        REQUIRE(len <= max);
        if (out != NULL) {
            *out = malloc(len ? len : 1);
            REQUIRE(*out != NULL);
            if (len > 0)
                memcpy(*out, msg, len);
            *out_len = len;
        }
    }
    sy_deflate_done(&z);
    free(buf);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3)
        return 0;
    unsigned mode = data[0];
    size_t max = (size_t)data[1] << 8 | data[2];
    data += 3;
    size -= 3;
    if (mode & 1) {
        (void)inflate_checked(data, size, max + 1, NULL, NULL);
        return 0;
    }
    sy_refbuf_t *m = sy_ws_msg_z(SY_WS_OP_BINARY, data, size, true);
    REQUIRE(m != NULL);
    sy_refbuf_t *twin = sy_deflate_twin(&z, &once, m, 0);
    REQUIRE(sy_deflate_twin(&z, &once, m, 0) == twin);
    if (twin != NULL) {
        sy_ws_frame_t f;
        long h = sy_ws_frame_parse(twin->data, twin->len, SY_WS_ROLE_CLIENT | SY_WS_ALLOW_RSV1, &f);
        REQUIRE(h == (long)twin->hlen && f.rsv == 4 && f.fin && f.opcode == SY_WS_OP_BINARY);
        REQUIRE(sy_refbuf_payload_len(twin) < size);
        uint8_t *back = NULL;
        size_t len = 0;
        REQUIRE(inflate_checked(sy_refbuf_payload(twin), sy_refbuf_payload_len(twin), size, &back, &len) == 0);
        REQUIRE(len == size && (size == 0 || memcmp(back, data, size) == 0));
        free(back);
    }
    sy_refbuf_release(m);
    return 0;
}
