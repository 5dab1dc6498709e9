/*
 * upgrade_reparse — what keeping one meaning for a connection's rbuf costs
 * an upgrade that waits for the owner (onUpgrade).
 *
 * While the owner decides, the request head stays in the connection's
 * receive buffer, and the accept parses it again for its key
 * (sy_http_parse_request + sy_handshake_check, src/io/wire/sy_upgrade.c); before,
 * the accept key was parked in the buffer's first 28 bytes. This times that
 * second parse of a browser's upgrade request (Chromium's headers, 13 of
 * them, 550 bytes) and, for scale, the accept key's SHA-1 that every
 * upgrade makes anyway, and prints ns per upgrade.
 *
 *   cc -std=c11 -O2 -Wall -Wextra -Isrc bench/micro/upgrade_reparse.c src/proto/sy_http.c \
 *      src/proto/sy_handshake.c src/proto/sy_sha1.c src/proto/sy_base64.c -o bench/out/upgrade_reparse
 *   bench/out/upgrade_reparse
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "proto/sy_handshake.h"
#include "proto/sy_http.h"

static const char head[] = "GET /?topic=ticker HTTP/1.1\r\n"
                           "Host: 127.0.0.1:9001\r\n"
                           "Connection: Upgrade\r\n"
                           "Pragma: no-cache\r\n"
                           "Cache-Control: no-cache\r\n"
                           "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                           "Chrome/156.0.0.0 Safari/537.36\r\n"
                           "Upgrade: websocket\r\n"
                           "Origin: http://127.0.0.1:9001\r\n"
                           "Sec-WebSocket-Version: 13\r\n"
                           "Accept-Encoding: gzip, deflate, br, zstd\r\n"
                           "Accept-Language: en-US,en;q=0.9\r\n"
                           "Cookie: session=0123456789abcdef0123456789abcdef\r\n"
                           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                           "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"
                           "\r\n";

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
    enum { ROUNDS = 2000000 };
    sy_http_header_t headers[64];
    sy_http_limits_t lim = {.max_head_bytes = 8192, .max_line_bytes = 8192, .max_headers = 64};
    volatile size_t sink = 0;
    double t0 = now();
    for (int i = 0; i < ROUNDS; i++) {
        sy_http_request_t req = {.headers = headers, .num_headers = 64};
        sy_handshake_t hs;
        long n = sy_http_parse_request(head, sizeof(head) - 1, &lim, &req);
        if (n <= 0 || sy_handshake_check(&req, &hs) != 0) {
            fprintf(stderr, "the request did not parse\n");
            return 1;
        }
        sink += hs.key_len;
    }
    double parse = (now() - t0) / ROUNDS * 1e9;
    char accept[SY_WS_ACCEPT_LEN];
    t0 = now();
    for (int i = 0; i < ROUNDS; i++) {
        sy_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", 24, accept);
        sink += (size_t)accept[i % SY_WS_ACCEPT_LEN];
    }
    double key = (now() - t0) / ROUNDS * 1e9;
    printf("head of %zu bytes: parse + check %.0f ns per upgrade; the accept key's SHA-1 %.0f ns (sink %zu)\n",
           sizeof(head) - 1, parse, key, (size_t)sink);
    return 0;
}
