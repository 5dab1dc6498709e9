/*
 * loadgen: options, the timeline of a run and the event loop. See lg.h.
 *
 * Timeline: a run is a list of steps, each a population target and a hold
 * time (--schedule; without it, one step: --connections, held --hold
 * seconds or until --duration). A step moves the population to its target:
 *  - up: it makes (target - open - pending) attempts, started at
 *    --ramp-per-sec (at most --max-pending in flight); attempts that fail are
 *    counted, not retried;
 *  - down: it closes (1000) a uniformly random subset of the open
 *    connections (selection sampling over the slots), which spreads the
 *    closes evenly over source addresses, over the server's IO threads and
 *    topics (both assigned by accept order) and over connection ages,
 *    without aliasing against any stride; each close waits up to
 *    --close-wait for the server's answer.
 * The step is "reached" (settled) once every attempt of its ramp has opened
 * or failed, or every close of its drop has been answered or timed out; its
 * hold starts then. After the first step settles the run is "steady". With
 * --churn F, a share F of the open connections per second is closed (1000)
 * and reopened, spread evenly over time, during ramps and holds (not
 * during drops).
 * The run ends after the last hold, at --duration after the start, or
 * (without --schedule) when no connection is left. Then every open
 * connection sends a close and the program waits up to --close-wait for the
 * server's answers, closes whatever is left and prints the summary.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "lg.h"

#define RBUF_SIZE (256u * 1024u)
#define MAX_EVENTS 1024
#define MAX_STARTS_PER_TURN 256u /* keep serving events while ramping */
#define FDS_RESERVED 8           /* stdio, epoll, /proc reads */
#define MAX_CLOSES_PER_TURN 4096u /* churn closes per loop turn, at most */
#define SWEEP_NS 100000000LL      /* deadlines are checked every 100 ms */

static volatile sig_atomic_t g_stop;
static volatile sig_atomic_t g_mark; /* SIGUSR1s not yet turned into mark events */

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void on_mark(int sig)
{
    (void)sig;
    g_mark = g_mark + 1;
}

int64_t lg_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* xorshift64*: masking keys and handshake nonces need no more than this. */
uint64_t lg_rand(lg_run_t *r)
{
    uint64_t x = r->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

void lg_codes_add(lg_codes_t *t, unsigned code)
{
    for (unsigned k = 0; k < t->used; k++) {
        if (t->code[k] == code) {
            t->count[k]++;
            return;
        }
    }
    if (t->used == LG_CODES_MAX) {
        t->other++;
        return;
    }
    t->code[t->used] = code;
    t->count[t->used++] = 1;
}

const char *lg_fail_name(lg_fail_t f)
{
    static const char *const names[LG_FAIL__COUNT] = {
        "fd_limit", "socket", "no_port", "refused", "connect", "timeout",
        "closed", "status", "handshake", "bad_response", "not_started", "cut_short", "tls",
    };
    return (unsigned)f < LG_FAIL__COUNT ? names[f] : "unknown";
}

const char *lg_end_name(lg_end_t e)
{
    static const char *const names[LG_END__COUNT] = {
        "server_close", "eof", "reset", "protocol_error", "output_overflow",
        "client_close", "client_close_no_reply",
    };
    return (unsigned)e < LG_END__COUNT ? names[e] : "unknown";
}

/* ---- options ------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: loadgen --url ws://127.0.0.1:PORT/path --connections N [options]\n"
            "       loadgen --url http://127.0.0.1:PORT/path --connections N [options]   (SSE)\n"
            "       loadgen --url ws://127.0.0.1:PORT/path --schedule P1:T1,... [options]\n"
            "  --sources K           source addresses 127.0.0.1..127.0.0.K (1..254, default 1)\n"
            "  --duration S          whole run, ramp included (default 10, at most 3600)\n"
            "  --ramp-per-sec R      connection attempts per second (default 0: no pacing)\n"
            "  --hold S              end S seconds after every attempt has settled\n"
            "  --max-pending P       attempts in flight at once (default 256)\n"
            "  --connect-timeout S   connect + handshake deadline (default 10)\n"
            "  --close-wait S        wait for the answer to each close we send (default 2)\n"
            "  --server-pid PID      also sample that process's CPU and RSS\n"
            "  --schedule P:T,...    population targets and hold times (s): move to P1 open\n"
            "                        connections, hold T1, move to P2, ...; ends after the\n"
            "                        last hold. --connections defaults to max(P), --duration\n"
            "                        to 3600 (still a cap)\n"
            "  --churn F             close (1000) and reopen a share F of the open\n"
            "                        connections per second (e.g. 0.05), during ramps and holds\n"
            "  --events              JSON lines on stdout as the run goes (start, step,\n"
            "                        reached, sample once a second with that second's latency\n"
            "                        percentiles, end); the summary stays last\n"
            "  --seq                 check the sequence number after each binary message's\n"
            "                        timestamp (bytes 8..15), or a text message's \"seq\"\n"
            "                        ({\"ts\":T,\"seq\":S,...): count duplicates, numbers out\n"
            "                        of order and gaps, per connection (see lg.h)\n"
            "  --check-size N        every text message (SSE event) must be N bytes of\n"
            "                        {\"ts\":T,\"seq\":S,\"p\":\"xx...x\"}: count those that are not\n"
            "  (--url http://127.0.0.1:PORT/path: Server-Sent Events instead of WebSocket: a\n"
            "   GET with Accept: text/event-stream; each event whose data starts with\n"
            "   {\"ts\":N, is a message; chunked or close-delimited bodies)\n"
            "  (SIGUSR1 with --events: a \"mark\" event closing an interval: its messages,\n"
            "   latency percentiles and sequence counts since the previous mark)\n"
            "  --deflate             offer permessage-deflate (client_no_context_takeover;\n"
            "                        server_no_context_takeover); inflate compressed messages\n"
            "                        to read their timestamps; refuse answers that keep context\n"
            "  --pusher KEY:SECRET   speak the Pusher protocol v7 (URL path /app/KEY?protocol=7...):\n"
            "                        subscribe each connection after connection_established,\n"
            "                        pong pings; channel events are the messages (their data\n"
            "                        string read as a text message); see lg.h\n"
            "  --pusher-channels N   channels (default 1): slot i subscribes to\n"
            "                        <prefix><(base + i) %% N>; private-/presence- are signed\n"
            "  --pusher-prefix P     channel name prefix (default bench-)\n"
            "  --pusher-base B       first index of this process's slots (default 0): channel\n"
            "                        and presence user_id\n"
            "  --json                summary as one JSON object on stdout\n"
            "  --quiet               no progress lines on stderr\n"
            "Loopback only: the server address must be in 127.0.0.0/8.\n");
}

static bool parse_num(const char *s, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= min && v <= max))
        return false;
    *out = v;
    return true;
}

/* ws://a.b.c.d[:port][/path] with a numeric IPv4 address in 127/8. */
static bool parse_url(const char *url, lg_opts_t *o)
{
    bool tls = strncmp(url, "wss://", 6) == 0;
    bool sse = strncmp(url, "http://", 7) == 0;
    if (!tls && !sse && strncmp(url, "ws://", 5) != 0) {
        fprintf(stderr, "loadgen: --url must start with ws://, wss:// or http:// (SSE)\n");
        return false;
    }
    o->tls = tls;
    o->sse = sse;
    const char *host = url + (tls ? 6 : sse ? 7 : 5);
    size_t hl = strcspn(host, ":/");
    char addr[16];
    if (hl == 0 || hl >= sizeof(addr)) {
        fprintf(stderr, "loadgen: --url needs a numeric IPv4 address\n");
        return false;
    }
    memcpy(addr, host, hl);
    addr[hl] = '\0';
    o->dst.sin_family = AF_INET;
    if (inet_pton(AF_INET, addr, &o->dst.sin_addr) != 1) {
        fprintf(stderr, "loadgen: --url host '%s' is not a numeric IPv4 address\n", addr);
        return false;
    }
    if ((ntohl(o->dst.sin_addr.s_addr) >> 24) != 127) {
        fprintf(stderr, "loadgen: --url host must be in 127.0.0.0/8 (loopback benchmarks only)\n");
        return false;
    }
    const char *rest = host + hl;
    double port = tls ? 443 : 80;
    if (*rest == ':') {
        char num[8];
        size_t pl = strcspn(rest + 1, "/");
        if (pl == 0 || pl >= sizeof(num)) {
            fprintf(stderr, "loadgen: --url has a bad port\n");
            return false;
        }
        memcpy(num, rest + 1, pl);
        num[pl] = '\0';
        if (!parse_num(num, 1, 65535, &port) || port != (double)(long)port) {
            fprintf(stderr, "loadgen: --url port must be 1..65535\n");
            return false;
        }
        rest += 1 + pl;
    }
    o->dst.sin_port = htons((uint16_t)port);
    snprintf(o->host_header, sizeof(o->host_header), "%s:%u", addr, (unsigned)port);
    const char *path = *rest ? rest : "/";
    if (strlen(path) >= sizeof(o->path) || strpbrk(path, " \t\r\n") != NULL) {
        fprintf(stderr, "loadgen: --url path too long or holds whitespace\n");
        return false;
    }
    strcpy(o->path, path);
    snprintf(o->url, sizeof(o->url), "%s://%s%s", tls ? "wss" : sse ? "http" : "ws", o->host_header, o->path);
    return true;
}

/* "P1:T1,P2:T2,...": targets 0..LG_MAX_CONNECTIONS, holds 0..3600 s. */
static bool parse_schedule(const char *arg, lg_opts_t *o)
{
    unsigned n = 1;
    for (const char *p = arg; *p; p++)
        n += *p == ',';
    if (n > LG_MAX_STEPS) {
        fprintf(stderr, "loadgen: --schedule has more than %u steps\n", LG_MAX_STEPS);
        return false;
    }
    lg_step_t *steps = calloc(n, sizeof(*steps));
    char *copy = strdup(arg);
    if (steps == NULL || copy == NULL) {
        free(steps);
        free(copy);
        return false;
    }
    unsigned k = 0;
    bool ok = true;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item != NULL && ok;
         item = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(item, ':');
        double p, t;
        if (colon == NULL) {
            ok = false;
            break;
        }
        *colon = '\0';
        ok = parse_num(item, 0, LG_MAX_CONNECTIONS, &p) && p == (double)(uint32_t)p &&
             parse_num(colon + 1, 0, LG_MAX_DURATION_S, &t);
        if (ok) {
            steps[k].target = (uint32_t)p;
            steps[k].hold_s = t;
            k++;
        }
    }
    free(copy);
    if (!ok || k == 0 || k != n) {
        fprintf(stderr, "loadgen: --schedule must be P1:T1,P2:T2,... with targets 0..%u and "
                        "holds 0..%.0f s (got '%s')\n",
                LG_MAX_CONNECTIONS, LG_MAX_DURATION_S, arg);
        free(steps);
        return false;
    }
    free(o->steps);
    o->steps = steps;
    o->nsteps = k;
    o->scheduled = true;
    return true;
}

static int parse_args(int argc, char **argv, lg_opts_t *o)
{
    enum { O_URL = 1, O_CONN, O_SRC, O_DUR, O_RAMP, O_HOLD, O_PEND, O_CTO, O_CW, O_PID, O_JSON,
           O_QUIET, O_HELP, O_SCHED, O_CHURN, O_EVENTS, O_DEFLATE, O_SEQ, O_CHECK, O_PUSHER,
           O_P_CHANNELS, O_P_PREFIX, O_P_BASE };
    static const struct option longs[] = {
        {"url", required_argument, NULL, O_URL},
        {"connections", required_argument, NULL, O_CONN},
        {"sources", required_argument, NULL, O_SRC},
        {"duration", required_argument, NULL, O_DUR},
        {"ramp-per-sec", required_argument, NULL, O_RAMP},
        {"hold", required_argument, NULL, O_HOLD},
        {"max-pending", required_argument, NULL, O_PEND},
        {"connect-timeout", required_argument, NULL, O_CTO},
        {"close-wait", required_argument, NULL, O_CW},
        {"server-pid", required_argument, NULL, O_PID},
        {"json", no_argument, NULL, O_JSON},
        {"quiet", no_argument, NULL, O_QUIET},
        {"schedule", required_argument, NULL, O_SCHED},
        {"churn", required_argument, NULL, O_CHURN},
        {"events", no_argument, NULL, O_EVENTS},
        {"deflate", no_argument, NULL, O_DEFLATE},
        {"seq", no_argument, NULL, O_SEQ},
        {"check-size", required_argument, NULL, O_CHECK},
        {"pusher", required_argument, NULL, O_PUSHER},
        {"pusher-channels", required_argument, NULL, O_P_CHANNELS},
        {"pusher-prefix", required_argument, NULL, O_P_PREFIX},
        {"pusher-base", required_argument, NULL, O_P_BASE},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    o->sources = 1;
    o->duration_s = 10;
    o->hold_s = -1;
    o->max_pending = 256;
    o->connect_timeout_s = 10;
    o->close_wait_s = 2;
    o->pusher_channels = 1;
    strcpy(o->pusher_prefix, "bench-");
    bool have_url = false, have_duration = false;
    int opt;
    double v;
    while ((opt = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        const char *bad = NULL;
        switch (opt) {
        case O_URL:
            if (!parse_url(optarg, o))
                return 2;
            have_url = true;
            break;
        case O_CONN:
            if (!parse_num(optarg, 1, LG_MAX_CONNECTIONS, &v) || v != (double)(uint32_t)v)
                bad = "--connections must be an integer 1..1000000";
            else
                o->connections = (uint32_t)v;
            break;
        case O_SRC:
            if (!parse_num(optarg, 1, LG_MAX_SOURCES, &v) || v != (double)(unsigned)v)
                bad = "--sources must be an integer 1..254";
            else
                o->sources = (unsigned)v;
            break;
        case O_DUR:
            if (!parse_num(optarg, 0.001, LG_MAX_DURATION_S, &o->duration_s))
                bad = "--duration must be > 0 and at most 3600 seconds";
            have_duration = true;
            break;
        case O_RAMP:
            if (!parse_num(optarg, 0, 1e7, &o->ramp_per_sec))
                bad = "--ramp-per-sec must be 0..10000000";
            break;
        case O_HOLD:
            if (!parse_num(optarg, 0, LG_MAX_DURATION_S, &o->hold_s))
                bad = "--hold must be 0..3600 seconds";
            break;
        case O_PEND:
            if (!parse_num(optarg, 1, 100000, &v) || v != (double)(unsigned)v)
                bad = "--max-pending must be an integer 1..100000";
            else
                o->max_pending = (unsigned)v;
            break;
        case O_CTO:
            if (!parse_num(optarg, 0.001, 600, &o->connect_timeout_s))
                bad = "--connect-timeout must be > 0 and at most 600 seconds";
            break;
        case O_CW:
            if (!parse_num(optarg, 0, 60, &o->close_wait_s))
                bad = "--close-wait must be 0..60 seconds";
            break;
        case O_PID:
            if (!parse_num(optarg, 1, 4194304, &v) || v != (double)(pid_t)v)
                bad = "--server-pid must be a process id";
            else
                o->server_pid = (pid_t)v;
            break;
        case O_JSON:
            o->json = true;
            break;
        case O_QUIET:
            o->quiet = true;
            break;
        case O_SCHED:
            if (!parse_schedule(optarg, o))
                return 2;
            break;
        case O_CHURN:
            if (!parse_num(optarg, 0, 10, &o->churn))
                bad = "--churn must be 0..10 (a share of the open connections per second)";
            break;
        case O_EVENTS:
            o->events = true;
            break;
        case O_DEFLATE:
            o->deflate = true;
            break;
        case O_SEQ:
            o->seq = true;
            break;
        case O_CHECK:
            if (!parse_num(optarg, 0, 1u << 24, &v) || v != (double)(uint32_t)v)
                bad = "--check-size must be an integer 0..16777216";
            else
                o->check_size = (uint32_t)v;
            break;
        case O_PUSHER: {
            const char *colon = strchr(optarg, ':');
            size_t kl = colon ? (size_t)(colon - optarg) : 0;
            if (colon == NULL || kl == 0 || kl >= sizeof(o->pusher_key) || colon[1] == '\0' ||
                strlen(colon + 1) >= sizeof(o->pusher_secret) || strpbrk(optarg, "\"\\") != NULL) {
                bad = "--pusher must be KEY:SECRET (no quotes or backslashes)";
            } else {
                memcpy(o->pusher_key, optarg, kl);
                o->pusher_key[kl] = '\0';
                strcpy(o->pusher_secret, colon + 1);
                o->pusher = true;
            }
            break;
        }
        case O_P_CHANNELS:
            if (!parse_num(optarg, 1, 1e7, &v) || v != (double)(uint32_t)v)
                bad = "--pusher-channels must be an integer 1..10000000";
            else
                o->pusher_channels = (uint32_t)v;
            break;
        case O_P_PREFIX:
            if (strlen(optarg) >= sizeof(o->pusher_prefix) - 12 || strpbrk(optarg, "\"\\ ") != NULL)
                bad = "--pusher-prefix must be under 84 bytes, no quotes, backslashes or spaces";
            else
                strcpy(o->pusher_prefix, optarg);
            break;
        case O_P_BASE:
            if (!parse_num(optarg, 0, 4e9, &v) || v != (double)(uint32_t)v)
                bad = "--pusher-base must be an integer 0..4000000000";
            else
                o->pusher_base = (uint32_t)v;
            break;
        case O_HELP:
            usage(stdout);
            return 1;
        default:
            usage(stderr);
            return 2;
        }
        if (bad != NULL) {
            fprintf(stderr, "loadgen: %s (got '%s')\n", bad, optarg);
            return 2;
        }
    }
    uint32_t peak = 0;
    for (unsigned k = 0; k < o->nsteps; k++)
        peak = o->steps[k].target > peak ? o->steps[k].target : peak;
    if (o->scheduled) {
        if (o->connections == 0)
            o->connections = peak > 0 ? peak : 1;
        if (!have_duration)
            o->duration_s = LG_MAX_DURATION_S;
    }
    if (optind < argc || !have_url || o->connections == 0) {
        if (optind < argc)
            fprintf(stderr, "loadgen: unexpected argument '%s'\n", argv[optind]);
        else
            fprintf(stderr, "loadgen: --url and --connections (or --schedule) are required\n");
        usage(stderr);
        return 2;
    }
    if (o->pusher && o->sse) {
        fprintf(stderr, "loadgen: --pusher is for WebSocket, not an http:// (SSE) URL\n");
        return 2;
    }
    if (o->sse && o->deflate) {
        fprintf(stderr, "loadgen: --deflate is for WebSocket, not an http:// (SSE) URL\n");
        return 2;
    }
    if (o->scheduled && o->connections < peak) {
        fprintf(stderr, "loadgen: --connections (%u) must be at least the largest --schedule "
                        "target (%u)\n", o->connections, peak);
        return 2;
    }
    if (o->scheduled && o->hold_s >= 0) {
        fprintf(stderr, "loadgen: --hold does not apply with --schedule (each step has its own)\n");
        return 2;
    }
    if (!o->scheduled) { /* the classic run: one step */
        o->steps = calloc(1, sizeof(*o->steps));
        if (o->steps == NULL)
            return 2;
        o->steps[0].target = o->connections;
        o->steps[0].hold_s = o->hold_s;
        o->nsteps = 1;
    }
    return 0;
}

/* ---- setup -------------------------------------------------------------- */

/* Raises the soft RLIMIT_NOFILE to the hard limit. Returns the soft limit. */
static int raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return -1;
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t want = rl.rlim_max;
        rl.rlim_cur = want;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            (void)getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur > 0x7fffffff ? 0x7fffffff : (int)rl.rlim_cur;
}

static bool run_init(lg_run_t *r, const lg_opts_t *o)
{
    memset(r, 0, sizeof(*r));
    r->opts = o;
    r->fd_limit = raise_fd_limit();
    if (!o->quiet && r->fd_limit > FDS_RESERVED &&
        o->connections > (uint32_t)(r->fd_limit - FDS_RESERVED))
        fprintf(stderr,
                "loadgen: RLIMIT_NOFILE is %d: at most ~%d of the %u connections can be held\n",
                r->fd_limit, r->fd_limit - FDS_RESERVED, o->connections);
    if (!o->quiet && o->connections > 28000u * o->sources)
        fprintf(stderr, "loadgen: %u connections over %u source address(es) may run out of "
                        "ephemeral ports (~28k per address); raise --sources\n",
                o->connections, o->sources);
    if (getrandom(&r->rng, sizeof(r->rng), 0) != (ssize_t)sizeof(r->rng) || r->rng == 0)
        r->rng = (uint64_t)lg_now_ns() | 1u;
    r->epfd = epoll_create1(EPOLL_CLOEXEC);
    r->rbuf_cap = RBUF_SIZE;
    r->rbuf = malloc(r->rbuf_cap);
    /* Headroom with --schedule or --churn: connections still closing keep
     * their slot while replacements open. Without a free slot an attempt
     * just waits for one. */
    r->cap = o->connections;
    if (o->scheduled || o->churn > 0) {
        uint32_t extra = o->connections / 8 > 256 ? o->connections / 8 : 256;
        r->cap = o->connections + extra < o->connections ? UINT32_MAX : o->connections + extra;
    }
    r->conns = calloc(r->cap, sizeof(lg_conn_t));
    r->free_slots = calloc(r->cap, sizeof(uint32_t));
    r->steps = calloc(o->nsteps, sizeof(*r->steps));
    /* one entry per second of the run, plus the end phase */
    r->seconds_cap = (uint32_t)o->duration_s + (uint32_t)o->close_wait_s + 4u;
    r->sec_messages = calloc(r->seconds_cap, sizeof(uint64_t));
    r->sec_bytes = calloc(r->seconds_cap, sizeof(uint64_t));
    r->sec_open = calloc(r->seconds_cap, sizeof(uint32_t));
    if (r->epfd < 0 || r->rbuf == NULL || r->conns == NULL || r->sec_messages == NULL ||
        r->sec_bytes == NULL || r->sec_open == NULL || r->free_slots == NULL || r->steps == NULL) {
        fprintf(stderr, "loadgen: setup failed: %s\n", strerror(errno));
        return false;
    }
    if (!lg_tls_init(r)) {
        fprintf(stderr, "loadgen: no TLS client context (OpenSSL)\n");
        return false;
    }
    if (!lg_inflate_init(r)) {
        fprintf(stderr, "loadgen: no decompressor (libdeflate): out of memory\n");
        return false;
    }
    for (uint32_t i = 0; i < r->cap; i++) {
        r->conns[i].fd = -1;
        r->free_slots[i] = i; /* slot 0 first */
    }
    r->nfree = r->cap;
    lg_hist_init(&r->lat);
    lg_hist_init(&r->lat_steady);
    lg_hist_init(&r->lat_tick);
    lg_hist_init(&r->lat_mark);
    r->measuring = true;
    return true;
}

static void run_free(lg_run_t *r)
{
    if (r->epfd >= 0)
        close(r->epfd);
    free(r->rbuf);
    lg_tls_free(r);
    lg_inflate_free(r);
    free(r->conns);
    free(r->free_slots);
    free(r->steps);
    free(r->sec_messages);
    free(r->sec_bytes);
    free(r->sec_open);
}

/* ---- the loop ----------------------------------------------------------- */

static uint32_t target_of(const lg_run_t *r)
{
    return r->opts->steps[r->step].target;
}

/* A uniform double in [0, 1). */
static double rand_unit(lg_run_t *r)
{
    return (double)(lg_rand(r) >> 11) * (1.0 / 9007199254740992.0);
}

static uint64_t failed_total(const lg_run_t *r)
{
    uint64_t n = 0;
    for (int k = 0; k < LG_FAIL__COUNT; k++)
        n += r->failed[k];
    return n;
}

/* Starts the attempts that are due: churn reopens first, then the ramp of
 * the current step paced by --ramp-per-sec; at most --max-pending in flight,
 * a bounded number per loop turn, and only into free slots. */
static void ramp(lg_run_t *r, int64_t now)
{
    const lg_opts_t *o = r->opts;
    uint32_t due = r->ramp_budget;
    if (o->ramp_per_sec > 0 && r->ramp_started < r->ramp_budget) {
        double d = (double)(now - r->steps[r->step].t_start) / 1e9 * o->ramp_per_sec + 1.0;
        due = d < (double)r->ramp_budget ? (uint32_t)d : r->ramp_budget;
    }
    unsigned started = 0;
    while (r->pending < o->max_pending && started < MAX_STARTS_PER_TURN && r->nfree > 0) {
        unsigned kind;
        if (r->churn_owed > 0) {
            r->churn_owed--;
            kind = LG_ATTEMPT_CHURN;
        } else if (r->ramp_started < due) {
            r->ramp_started++;
            kind = LG_ATTEMPT_RAMP;
        } else {
            break;
        }
        uint32_t i = r->free_slots[r->free_head];
        r->free_head = (r->free_head + 1) % r->cap;
        r->nfree--;
        lg_conn_start(r, i, kind);
        started++;
    }
}

/* Closes a uniformly random subset of `want` of the open connections:
 * selection sampling, each open slot in turn chosen with probability
 * (still wanted) / (still unseen). Exactly min(want, open) are closed. */
static void close_random(lg_run_t *r, uint32_t want, lg_close_t why)
{
    uint32_t left = r->open;
    for (uint32_t i = 0; i < r->hwm && want > 0 && left > 0; i++) {
        if (r->conns[i].state != LG_CS_OPEN)
            continue;
        if (rand_unit(r) * (double)left < (double)want) {
            lg_conn_close(r, i, why);
            want--;
        }
        left--;
    }
}

/* A random open connection (there must be one). */
static uint32_t pick_open(lg_run_t *r)
{
    for (int tries = 0; tries < 64; tries++) {
        uint32_t i = (uint32_t)(rand_unit(r) * (double)r->hwm);
        if (i < r->hwm && r->conns[i].state == LG_CS_OPEN)
            return i;
    }
    uint32_t start = (uint32_t)(rand_unit(r) * (double)r->hwm);
    for (uint32_t k = 0; k < r->hwm; k++) {
        uint32_t i = (start + k) % r->hwm;
        if (r->conns[i].state == LG_CS_OPEN)
            return i;
    }
    return 0; /* not reached while r->open > 0 */
}

/* --churn: closes what is due (a share of the open connections per second,
 * accrued continuously) and owes a reopen for each. Not during a drop (from
 * its start until its closes are answered), so a drop settles at exactly its
 * target. Returns when the next close is due, INT64_MAX if none is. */
static int64_t churn(lg_run_t *r, int64_t now)
{
    const lg_opts_t *o = r->opts;
    double dt = (double)(now - r->t_churn) / 1e9;
    r->t_churn = now;
    bool dropping = !r->step_settled && r->ramp_budget == 0 && r->drop_closing > 0;
    if (o->churn <= 0 || !r->measuring || r->open == 0 || r->open > target_of(r) || dropping) {
        r->churn_credit = 0;
        return INT64_MAX;
    }
    r->churn_credit += o->churn * (double)r->open * dt;
    unsigned n = 0;
    while (r->churn_credit >= 1.0 && r->open > 0 && n < MAX_CLOSES_PER_TURN) {
        lg_conn_close(r, pick_open(r), LG_CLOSE_CHURN);
        r->churn_closed++;
        r->churn_owed++;
        r->churn_credit -= 1.0;
        n++;
    }
    if (r->open == 0) {
        r->churn_credit = 0;
        return INT64_MAX;
    }
    if (r->churn_credit >= 1.0)
        return now;
    double wait_s = (1.0 - r->churn_credit) / (o->churn * (double)r->open);
    return now + (int64_t)(wait_s * 1e9) + 1;
}

static void sweep_timeouts(lg_run_t *r, int64_t now)
{
    if (r->pending == 0 && r->closing == 0)
        return;
    for (uint32_t i = 0; i < r->hwm; i++) {
        lg_conn_t *c = &r->conns[i];
        if ((c->state == LG_CS_CONNECTING || c->state == LG_CS_TLS || c->state == LG_CS_HANDSHAKE) &&
            now >= c->deadline_ns)
            lg_conn_timeout(r, i);
        else if (c->state == LG_CS_CLOSING && r->measuring && now >= c->deadline_ns)
            lg_conn_close_timeout(r, i);
    }
}

static void became_steady(lg_run_t *r, int64_t now)
{
    r->steady = true;
    r->t_settled = now;
    r->c_at_settled = r->c;
    lg_sample_self(&r->self_settled, now);
    if (r->opts->server_pid > 0)
        lg_sample_pid(&r->srv_settled, r->opts->server_pid, now);
}

static void step_begin(lg_run_t *r, unsigned k, int64_t now)
{
    uint32_t target = r->opts->steps[k].target;
    struct lg_step_rec *s = &r->steps[k];
    r->step = k;
    r->step_settled = false;
    r->t_hold_end = INT64_MAX;
    s->t_start = now;
    s->open_at_start = r->open;
    s->messages_at_start = r->c.messages;
    s->failed_at_start = failed_total(r);
    uint32_t have = r->open + r->pending + r->churn_owed;
    r->ramp_started = 0;
    r->ramp_budget = target > have ? target - have : 0;
    if (target < have) { /* a drop: its closes replace the owed reopens */
        r->churn_reopen_skipped += r->churn_owed;
        r->churn_owed = 0;
    }
    lg_event_step(r, now);
}

static void step_end(lg_run_t *r, int64_t now)
{
    (void)now;
    struct lg_step_rec *s = &r->steps[r->step];
    s->messages = r->c.messages - s->messages_at_start;
    s->failed = failed_total(r) - s->failed_at_start;
}

/* The step settles once its ramp's attempts have all opened or failed and
 * its drop's closes have all been answered or timed out; its hold starts. */
static void step_check(lg_run_t *r, int64_t now)
{
    if (r->step_settled || r->ramp_started < r->ramp_budget || r->ramp_inflight > 0 ||
        r->open > target_of(r) || r->drop_closing > 0)
        return;
    struct lg_step_rec *s = &r->steps[r->step];
    double hold = r->opts->steps[r->step].hold_s;
    r->step_settled = true;
    s->t_reached = now;
    s->open_at_reached = r->open;
    r->t_hold_end = hold < 0 ? INT64_MAX : now + (int64_t)(hold * 1e9);
    if (!r->steady)
        became_steady(r, now);
    lg_event_reached(r, now);
}

static void tick(lg_run_t *r, int64_t now)
{
    lg_sample_t self;
    lg_sample_self(&self, now);
    if (r->seconds < r->seconds_cap) {
        r->sec_messages[r->seconds] = r->c.messages - r->c_last_tick.messages;
        r->sec_bytes[r->seconds] = r->c.bytes - r->c_last_tick.bytes;
        r->sec_open[r->seconds] = r->open;
        r->seconds++;
    }
    lg_event_sample(r, &self, now);
    lg_hist_init(&r->lat_tick); /* each sample reports its own second */
    if (!r->opts->quiet)
        lg_report_progress(r, &self, now);
    r->self_last_tick = self;
    r->c_last_tick = r->c;
}

static void dispatch(lg_run_t *r, struct epoll_event *evs, int timeout_ms)
{
    int n = epoll_wait(r->epfd, evs, MAX_EVENTS, timeout_ms);
    for (int k = 0; k < n; k++)
        lg_conn_event(r, evs[k].data.u32, evs[k].events);
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/*
 * Level-triggered epoll, on purpose. Edge-triggered would oblige us to read
 * each socket until EAGAIN: when the server sends one message per TCP
 * segment (the common case at moderate rates) that is a second recv() per
 * wake-up that returns nothing, and a recv() costs ~5 us here, so the client
 * would halve its own ceiling. Level-triggered lets us do exactly one recv()
 * per ready socket per turn into a 256 KiB shared buffer; whatever is left is
 * reported again at the next epoll_wait, which also keeps the 10k+ sockets
 * served fairly (no socket can hold the loop). EPOLLOUT is in the interest
 * set only while a connect or some output is pending, so it never spins.
 *
 * Connections are started and closed by us only here, between batches of
 * events (see lg.h on slot reuse).
 */
static void run(lg_run_t *r)
{
    const lg_opts_t *o = r->opts;
    struct epoll_event *evs = calloc(MAX_EVENTS, sizeof(*evs));
    if (evs == NULL)
        return;
    r->t_start = lg_now_ns();
    lg_sample_self(&r->self_start, r->t_start);
    r->self_last_tick = r->self_start;
    if (o->server_pid > 0) {
        lg_sample_pid(&r->srv_start, o->server_pid, r->t_start);
        r->srv_last_tick = r->srv_start;
    }
    lg_event_start(r);
    r->t_last_mark = r->t_start;
    r->self_last_mark = r->self_start;
    r->t_churn = r->t_start;
    step_begin(r, 0, r->t_start);
    const int64_t t_stop = r->t_start + (int64_t)(o->duration_s * 1e9);
    int64_t next_tick = r->t_start + 1000000000LL;
    int64_t next_sweep = r->t_start + SWEEP_NS;

    for (;;) {
        int64_t now = lg_now_ns();
        while (g_mark > 0) { /* SIGUSR1: close the interval */
            g_mark = g_mark - 1;
            lg_event_mark(r, now);
        }
        for (;;) { /* settle the step; move on after its hold */
            step_check(r, now);
            if (!r->step_settled || now < r->t_hold_end || r->step + 1 >= o->nsteps)
                break;
            step_end(r, now);
            step_begin(r, r->step + 1, now);
        }
        bool schedule_done = r->step_settled && now >= r->t_hold_end;
        if (!schedule_done && r->ramp_started == r->ramp_budget && r->ramp_inflight == 0 &&
            r->open > target_of(r))
            close_random(r, r->open - target_of(r), LG_CLOSE_DROP);
        int64_t churn_due = churn(r, now);
        ramp(r, now);
        if (now >= next_tick) {
            tick(r, now);
            next_tick += 1000000000LL;
            if (next_tick <= now)
                next_tick = now + 1000000000LL;
        }
        if (now >= next_sweep) {
            sweep_timeouts(r, now);
            next_sweep = now + SWEEP_NS;
        }
        bool none_left = !o->scheduled && r->step_settled && r->pending == 0 && r->open == 0 &&
                         r->closing == 0 && r->churn_owed == 0;
        if (g_stop || now >= t_stop || schedule_done || none_left)
            break;
        int64_t wake = min64(min64(next_tick, t_stop), min64(r->t_hold_end, churn_due));
        if (r->pending > 0 || r->closing > 0)
            wake = min64(wake, next_sweep);
        if (!r->step_settled) /* check the step's progress at least every 100 ms */
            wake = min64(wake, now + SWEEP_NS);
        int timeout_ms = wake <= now ? 0 : (int)((wake - now + 999999) / 1000000);
        if ((r->ramp_started < r->ramp_budget || r->churn_owed > 0) &&
            r->pending < o->max_pending && r->nfree > 0)
            timeout_ms = timeout_ms > 1 ? 1 : timeout_ms; /* pacing granularity */
        dispatch(r, evs, timeout_ms);
    }

    /* The end: the window closes, every open connection says goodbye. */
    r->t_end = lg_now_ns();
    r->measuring = false;
    step_end(r, r->t_end);
    lg_sample_self(&r->self_end, r->t_end);
    if (o->server_pid > 0)
        lg_sample_pid(&r->srv_end, o->server_pid, r->t_end);
    if (!r->steady) /* the run ended while attempts were still in flight */
        r->c_at_settled = r->c;
    r->failed[LG_FAIL_NOT_STARTED] += r->ramp_budget - r->ramp_started;
    lg_event_end(r, r->t_end);
    for (uint32_t i = 0; i < r->hwm; i++) {
        if (r->conns[i].state == LG_CS_OPEN)
            lg_conn_close(r, i, LG_CLOSE_END);
        else if (r->conns[i].state != LG_CS_CLOSING)
            lg_conn_abandon(r, i); /* attempts in flight are not waited for */
    }
    const int64_t t_give_up = r->t_end + (int64_t)(o->close_wait_s * 1e9);
    for (int64_t now = lg_now_ns(); r->closing > 0 && now < t_give_up;
         now = lg_now_ns()) {
        int64_t wait = (t_give_up - now + 999999) / 1000000;
        dispatch(r, evs, wait > 100 ? 100 : (int)wait);
    }
    for (uint32_t i = 0; i < r->hwm; i++)
        lg_conn_abandon(r, i);
    r->t_exit = lg_now_ns();
    if (o->server_pid > 0)
        lg_sample_pid(&r->srv_after_close, o->server_pid, r->t_exit);
    free(evs);
}

int main(int argc, char **argv)
{
    lg_opts_t opts;
    int rc = parse_args(argc, argv, &opts);
    if (rc != 0) {
        free(opts.steps);
        return rc == 1 ? 0 : rc;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = on_mark;
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    lg_run_t *r = malloc(sizeof(*r));
    if (r == NULL || !run_init(r, &opts)) {
        if (r != NULL)
            run_free(r);
        free(r);
        free(opts.steps);
        return 1;
    }
    run(r);
    lg_report_summary(r);
    rc = r->opened > 0 ? 0 : 1;
    run_free(r);
    free(r);
    free(opts.steps);
    return rc;
}
