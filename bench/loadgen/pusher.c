/*
 * The Pusher Channels protocol v7, client side (--pusher; see lg.h): the
 * subscribe after pusher:connection_established (signed for private- and
 * presence- channels), pong for ping, the protocol's events counted, and a
 * channel event's data handed back as the message. The envelopes are
 * searched, not parsed: "event":" and "data":" with unescaped quotes can
 * only be the envelope's own keys (inside the data string every quote is
 * escaped), whatever order the server writes the keys in.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "lg.h"

/* The string value after key (e.g. "\"event\":\"") in m, up to its closing
 * quote (escapes skipped over, not decoded); NULL when absent. */
static const uint8_t *string_value(const uint8_t *m, size_t n, const char *key, size_t *len) {
    size_t kl = strlen(key);
    const uint8_t *p = memmem(m, n, key, kl);
    if (p == NULL)
        return NULL;
    p += kl;
    const uint8_t *end = m + n;
    for (const uint8_t *q = p; q < end; q++) {
        if (*q == '\\') {
            q++;
            continue;
        }
        if (*q == '"') {
            *len = (size_t)(q - p);
            return p;
        }
    }
    return NULL;
}

static bool is(const uint8_t *v, size_t len, const char *name) {
    return len == strlen(name) && memcmp(v, name, len) == 0;
}

static void note(lg_run_t *r, const uint8_t *m, size_t n) {
    if (r->first_error[0] != '\0')
        return;
    snprintf(r->first_error, sizeof(r->first_error), "pusher: %.*s", (int)(n < 120 ? n : 120), (const char *)m);
}

/* hex(HMAC-SHA256(secret, msg)) into out (65 bytes). */
static bool sign(const char *secret, const char *msg, size_t len, char out[65]) {
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    if (HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)msg, len, mac, &mac_len) == NULL ||
        mac_len != 32)
        return false;
    static const char hex[] = "0123456789abcdef";
    for (unsigned k = 0; k < 32; k++) {
        out[2 * k] = hex[mac[k] >> 4];
        out[2 * k + 1] = hex[mac[k] & 15];
    }
    out[64] = '\0';
    return true;
}

/* pusher:connection_established: its socket_id ("data" is a string of
 * JSON: the id comes after socket_id\":\"), then the subscribe. */
static int subscribe(lg_run_t *r, uint32_t i, lg_conn_t *c, const uint8_t *m, size_t n) {
    const lg_opts_t *o = r->opts;
    const uint8_t *p = memmem(m, n, "socket_id", 9);
    char sid[64];
    size_t sl = 0;
    if (p != NULL) {
        const uint8_t *end = m + n;
        p += 9;
        while (p < end && !(*p >= '0' && *p <= '9'))
            p++;
        while (p < end && sl < sizeof(sid) - 1 && ((*p >= '0' && *p <= '9') || *p == '.'))
            sid[sl++] = (char)*p++;
    }
    sid[sl] = '\0';
    if (sl == 0) {
        r->c.p_errors++;
        note(r, m, n);
        return 0;
    }
    uint32_t index = o->pusher_base + i;
    char channel[128];
    snprintf(channel, sizeof(channel), "%s%u", o->pusher_prefix, index % o->pusher_channels);
    bool presence = strncmp(channel, "presence-", 9) == 0;
    bool private = strncmp(channel, "private-", 8) == 0;
    char msg[768];
    int len;
    if (!presence && !private) {
        len = snprintf(msg, sizeof(msg), "{\"event\":\"pusher:subscribe\",\"data\":{\"channel\":\"%s\"}}", channel);
    } else {
        char signed_str[384], data[64], sig[65];
        int dl = snprintf(data, sizeof(data), "{\"user_id\":\"%u\"}", index);
        int sl2 = presence ? snprintf(signed_str, sizeof(signed_str), "%s:%s:%s", sid, channel, data)
                           : snprintf(signed_str, sizeof(signed_str), "%s:%s", sid, channel);
        if (dl < 0 || sl2 < 0 || (size_t)sl2 >= sizeof(signed_str) ||
            !sign(o->pusher_secret, signed_str, (size_t)sl2, sig)) {
            r->c.p_errors++;
            return 0;
        }
        if (presence)
            len = snprintf(msg, sizeof(msg),
                           "{\"event\":\"pusher:subscribe\",\"data\":{\"channel\":\"%s\",\"auth\":\"%s:%s\","
                           "\"channel_data\":\"{\\\"user_id\\\":\\\"%u\\\"}\"}}",
                           channel, o->pusher_key, sig, index);
        else
            len = snprintf(msg, sizeof(msg),
                           "{\"event\":\"pusher:subscribe\",\"data\":{\"channel\":\"%s\",\"auth\":\"%s:%s\"}}", channel,
                           o->pusher_key, sig);
    }
    if (len < 0 || (size_t)len >= sizeof(msg))
        return 0;
    return lg_conn_send_text(r, i, c, msg, (size_t)len) ? 0 : -1;
}

/* A channel event's "data" string, unescaped, as the message: its head,
 * length, 'x' count and last two bytes (what --check-size reads). */
static void data_as_message(lg_conn_t *c, const uint8_t *v, size_t len, bool quoted) {
    c->head_have = 0;
    c->msg_len = 0;
    c->pay_x = 0;
    c->pay_tail[0] = c->pay_tail[1] = 0;
    for (size_t k = 0; k < len; k++) {
        uint8_t b = v[k];
        if (quoted && b == '\\' && k + 1 < len) {
            b = v[++k];
            if (b == 'n')
                b = '\n';
            else if (b == 't')
                b = '\t';
            else if (b == 'r')
                b = '\r';
            /* \" \\ \/ stand for themselves; \uXXXX does not occur in ours */
        }
        if (c->head_have < LG_HEAD_LEN)
            c->msg_head[c->head_have++] = b;
        c->msg_len++;
        c->pay_x += b == 'x';
        c->pay_tail[0] = c->pay_tail[1];
        c->pay_tail[1] = b;
    }
}

int lg_pusher_message(lg_run_t *r, uint32_t i, lg_conn_t *c, const uint8_t *m, size_t n, int64_t now) {
    size_t el = 0;
    const uint8_t *ev = string_value(m, n, "\"event\":\"", &el);
    if (ev == NULL) {
        r->c.p_other++;
        return 0;
    }
    if (is(ev, el, "pusher:connection_established")) {
        r->c.p_established++;
        return subscribe(r, i, c, m, n);
    }
    if (is(ev, el, "pusher_internal:subscription_succeeded")) {
        r->c.p_subscribed++;
        r->t_last_subscribed = now;
        return 0;
    }
    if (is(ev, el, "pusher:ping")) {
        static const char pong[] = "{\"event\":\"pusher:pong\",\"data\":{}}";
        r->c.p_pings++;
        return lg_conn_send_text(r, i, c, pong, sizeof(pong) - 1) ? 0 : -1;
    }
    if (is(ev, el, "pusher_internal:member_added")) {
        r->c.p_member_added++;
        r->t_last_member = now;
        return 0;
    }
    if (is(ev, el, "pusher_internal:member_removed")) {
        r->c.p_member_removed++;
        return 0;
    }
    if (is(ev, el, "pusher:error") || is(ev, el, "pusher:subscription_error")) {
        r->c.p_errors++;
        note(r, m, n);
        return 0;
    }
    if ((el > 7 && memcmp(ev, "pusher:", 7) == 0) || (el > 16 && memcmp(ev, "pusher_internal:", 16) == 0)) {
        r->c.p_other++;
        return 0;
    }
    /* a channel event: its data, a string (as the server SDKs send it) or
     * raw JSON */
    size_t dl = 0;
    const uint8_t *d = string_value(m, n, "\"data\":\"", &dl);
    if (d != NULL) {
        data_as_message(c, d, dl, true);
    } else {
        const uint8_t *p = memmem(m, n, "\"data\":", 7);
        if (p == NULL)
            data_as_message(c, m, 0, false);
        else
            data_as_message(c, p + 7, (size_t)(m + n - (p + 7)), false);
    }
    return 1;
}

static void json_time(const lg_run_t *r, FILE *f, int64_t at) {
    if (at == 0)
        fputs("null", f);
    else
        fprintf(f, "%.6f", (double)(at - r->t_start) / 1e9);
}

void lg_pusher_json(const lg_run_t *r, FILE *f) {
    if (!r->opts->pusher) {
        fputs("null", f);
        return;
    }
    const lg_counts_t *k = &r->c;
    fprintf(f,
            "{\"established\":%llu,\"subscribed\":%llu,\"errors\":%llu,\"pings\":%llu,"
            "\"member_added\":%llu,\"member_removed\":%llu,\"other\":%llu,\"last_subscribed_t\":",
            (unsigned long long)k->p_established, (unsigned long long)k->p_subscribed, (unsigned long long)k->p_errors,
            (unsigned long long)k->p_pings, (unsigned long long)k->p_member_added,
            (unsigned long long)k->p_member_removed, (unsigned long long)k->p_other);
    json_time(r, f, r->t_last_subscribed);
    fputs(",\"last_member_t\":", f);
    json_time(r, f, r->t_last_member);
    fputc('}', f);
}
