/* sy_pmd: permessage-deflate negotiation (RFC 7692 7.1) over raw header
 * values and over a parsed request with several header lines: accepted
 * offers and their window, declined offers (the next one is tried), and
 * the answer's exact text. */
#define _GNU_SOURCE
#include <string.h>

#include "check.h"
#include "proto/sy_pmd.h"

static bool nego(const char *v, sy_pmd_t *p, unsigned *scanned) {
    memset(p, 0x5a, sizeof(*p));
    return sy_pmd_negotiate_value(v, strlen(v), p, scanned);
}

static void test_accepted(void) {
    static const struct { const char *v; bool window_set; unsigned window; } ok[] = {
        {"permessage-deflate", false, 15},
        {"permessage-deflate; client_max_window_bits", false, 15}, /* what browsers send */
        {"PerMessage-Deflate", false, 15},
        {"permessage-deflate;server_no_context_takeover;client_no_context_takeover", false, 15},
        {"permessage-deflate; server_max_window_bits=10", true, 10},
        {"permessage-deflate; server_max_window_bits=\"8\"", true, 8},
        {"permessage-deflate; server_max_window_bits = 15", true, 15},
        {"permessage-deflate; client_max_window_bits=9", false, 15},
        {"permessage-deflate; client_max_window_bits=\"15\"", false, 15},
        {"  permessage-deflate ;\tclient_max_window_bits  ", false, 15},
        {", , permessage-deflate", false, 15},
        {"x-webkit-deflate-frame, permessage-deflate", false, 15},
        {"foo; a=\"b, c\", permessage-deflate; server_max_window_bits=12", true, 12},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        sy_pmd_t p;
        bool r = nego(ok[i].v, &p, NULL);
        CHECK(r);
        if (!r) {
            fprintf(stderr, "  not accepted: %s\n", ok[i].v);
            continue;
        }
        CHECK_EQ(p.server_window_set, ok[i].window_set);
        CHECK_EQU(p.server_window, ok[i].window);
    }
}

static void test_declined(void) {
    static const char *bad[] = {
        "",
        "deflate-frame",
        "permessage-deflate-x",
        "permessage-deflate; unknown_param",
        "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
        "permessage-deflate; server_no_context_takeover=1",
        "permessage-deflate; client_no_context_takeover=\"\"",
        "permessage-deflate; server_max_window_bits",
        "permessage-deflate; server_max_window_bits=7",
        "permessage-deflate; server_max_window_bits=16",
        "permessage-deflate; server_max_window_bits=010",
        "permessage-deflate; server_max_window_bits=+9",
        "permessage-deflate; server_max_window_bits=1x",
        "permessage-deflate; server_max_window_bits=\"9",
        "permessage-deflate; server_max_window_bits=10; server_max_window_bits=10",
        "permessage-deflate; client_max_window_bits=0",
        "permessage-deflate; client_max_window_bits; client_max_window_bits",
        "permessage-deflate; ",
        "permessage-deflate;;",
        "permessage-deflate x",
        "permessage-deflate; =9",
        "\"permessage-deflate\"",
        ";permessage-deflate",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sy_pmd_t p;
        bool r = nego(bad[i], &p, NULL);
        CHECK(!r);
        if (r)
            fprintf(stderr, "  accepted: %s\n", bad[i]);
    }
}

/* The first acceptable offer wins; declined ones before it are skipped. */
static void test_order(void) {
    sy_pmd_t p;
    unsigned n = 0;
    CHECK(nego("permessage-deflate; server_max_window_bits=7, permessage-deflate; server_max_window_bits=11, "
               "permessage-deflate",
               &p, &n));
    CHECK_EQU(n, 2);
    CHECK(p.server_window_set);
    CHECK_EQU(p.server_window, 11);
    CHECK(nego("permessage-deflate; bogus, permessage-deflate; client_max_window_bits", &p, &n));
    CHECK_EQU(n, 2);
    CHECK(!p.server_window_set);
    CHECK(!nego("a, b, c", &p, &n));
    CHECK_EQU(n, 3);
    /* Broken quoting in a declined offer does not hide a later one. */
    CHECK(nego("foo; x=\"unterminated\\\", bar", &p, &n) == false);
    CHECK(nego("foo; x=\"a\\\"b,c\", permessage-deflate", &p, &n));
    CHECK_EQU(n, 2);
}

/* Over a request: every Sec-WebSocket-Extensions line, in order. */
static void test_request(void) {
    sy_http_header_t h[] = {
        {SY_HTTP_LIT("Host"), SY_HTTP_LIT("x")},
        {SY_HTTP_LIT("Sec-WebSocket-Extensions"), SY_HTTP_LIT("permessage-deflate; nope")},
        {SY_HTTP_LIT("sec-websocket-extensions"), SY_HTTP_LIT("permessage-deflate; server_max_window_bits=9")},
    };
    sy_http_request_t req = {.headers = h, .num_headers = 3};
    sy_pmd_t p;
    CHECK(sy_pmd_negotiate(&req, &p));
    CHECK(p.server_window_set && p.server_window == 9);
    req.num_headers = 2;
    CHECK(!sy_pmd_negotiate(&req, &p));
    req.num_headers = 1;
    CHECK(!sy_pmd_negotiate(&req, &p));
}

static void test_response(void) {
    char buf[SY_PMD_RESPONSE_MAX];
    sy_pmd_t p = {.server_window_set = false, .server_window = 15};
    size_t n = sy_pmd_response(&p, buf, sizeof(buf));
    const char *want = "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; "
                       "client_no_context_takeover\r\n";
    CHECK(n == strlen(want) && memcmp(buf, want, n) == 0);
    p.server_window_set = true;
    p.server_window = 10;
    n = sy_pmd_response(&p, buf, sizeof(buf));
    want = "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; "
           "client_no_context_takeover; server_max_window_bits=10\r\n";
    CHECK(n == strlen(want) && memcmp(buf, want, n) == 0);
    CHECK_EQU(sy_pmd_response(&p, buf, 20), 0);
}

int main(void) {
    test_accepted();
    test_declined();
    test_order();
    test_request();
    test_response();
    return check_report("test_pmd");
}
