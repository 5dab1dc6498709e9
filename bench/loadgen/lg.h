/*
 * loadgen — a single-process WebSocket load client for symphony's
 * benchmarks. One thread, one epoll set, N client connections: it opens them
 * (spreading source addresses over 127.0.0.1..K), does the client side of
 * the RFC 6455 handshake, reads every frame the server sends, answers pings
 * and closes, and measures delivery: messages and bytes per second, and the
 * latency of every message that carries a send timestamp: a binary message
 * whose payload starts with a little-endian uint64 CLOCK_MONOTONIC
 * nanosecond count, or a text (JSON) message that starts with {"ts":N, where
 * N is that count in decimal.
 *
 * --deflate offers permessage-deflate (RFC 7692) with no context takeover
 * either way, accepts compressed (RSV1) messages where the server agreed,
 * and inflates each one whole (libdeflate, one decompressor per process) to
 * read its timestamp; it counts the payload bytes as they came on the wire
 * and as inflated (see deflate.c).
 *
 * --seq checks delivery exactly-once and in order: each binary message
 * carries, after its timestamp, a uint64 little-endian sequence number
 * (bytes 8..15), counting the messages of its topic from 1 (one publisher
 * per topic). A connection is subscribed to one topic, so per connection
 * the numbers must rise by one: the first message sets the start (a
 * connection joins mid-stream); then a number equal to the last one is a
 * duplicate ("dups"), a lower one is a duplicate of an older message or one
 * out of order ("back"), and a jump of k > 1 counts k - 1 messages missed
 * ("gaps"; a message lost after the last one received is not seen).
 *
 * SIGUSR1 (with --events) closes a measurement interval: a "mark" event
 * with what arrived since the previous mark (or the start), its own latency
 * percentiles and sequence counts, then a new interval begins. The runner
 * sends it to every loadgen at the edges of its windows, so a window's
 * latency is over exactly its messages (not each second's, not the run's).
 *
 * SSE mode (--url http://...): each connection sends a GET with Accept:
 * text/event-stream and reads the event stream (close-delimited or
 * Transfer-Encoding: chunked): an event whose data starts with {"ts":N, is
 * a message (its timestamp, --seq and --check-size as for a text message);
 * other events (notices, sy.open), comments and retry lines are not
 * counted as messages (sse_other counts the other events). A close from
 * our side is just closing the socket (there is no closing handshake).
 *
 * It is a separate program, not part of the addon: it uses libc malloc. It
 * compiles in the pure modules of src/ (frame parser, SHA-1, base64, accept
 * key) unchanged.
 *
 * Population: by default it ramps to --connections and holds. With
 * --schedule "P1:T1,P2:T2,..." it moves the number of open connections to
 * each target in turn (opening at --ramp-per-sec, or closing a uniformly
 * random subset of the surplus with close frames 1000) and holds each target
 * Ti seconds once reached. --churn F closes (1000) and reopens a share F of
 * the open connections per second, spread evenly over time. --events prints
 * JSON lines on stdout as the run goes (see report.c, lg_event_*).
 *
 * Connection slots: the table has --connections slots (plus some headroom
 * with --schedule or --churn, for connections still closing while their
 * replacements open). A slot is reused once its connection is done, oldest
 * freed first; slot i always connects from source address
 * 127.0.0.(1 + i % K), so the population stays spread over the sources. A slot is only (re)started from
 * the main loop, never while a batch of epoll events is being dispatched, so
 * a stale event later in the batch cannot reach the slot's new connection.
 *
 * Event lines (--events), one JSON object per line on stdout, flushed at
 * once; t is seconds since loadgen's start (CLOCK_MONOTONIC), 3 decimals:
 *   {"ev":"start","t":0,"mono_ns":M,"pid":P,"connections":N,"sources":K,
 *    "steps":S,"churn":F}                 first line; mono_ns: the start in
 *                                         CLOCK_MONOTONIC ns (= Node's
 *                                         process.hrtime.bigint())
 *   {"ev":"step","i":k,"target":P,"t":s,"open":n,"hold_s":T|null}
 *                                         step k starts moving to P
 *   {"ev":"reached","i":k,"open":n,"t":s,"target":P,"move_s":d,"failed":f,
 *    "pending":p}                         step k settled, its hold starts:
 *                                         every attempt of its ramp opened or
 *                                         failed (f failed during the step),
 *                                         or every close of its drop was
 *                                         answered or timed out. With churn,
 *                                         open + pending ~ target (p = churn
 *                                         reopens in flight)
 *   {"ev":"sample","t":s,"open":n,"msgs":m,"bytes":b,"cpu":c,"dt":d,
 *    "pending":p,"closing":q,"step":k,  once a second; msgs, bytes (payload,
 *    "lat_n":l,"p50_ms":..,"p99_ms":..,   inflated), wire (payload as it came:
 *    "p999_ms":..,"max_ms":..,            compressed where it was), zmsgs
 *    "wire":w,"zmsgs":z,                  (messages that came compressed), cpu
 *    "dups":x,"back":y,"gaps":z}
 *                                         (loadgen's CPU seconds) and the
 *                                         latencies are for the dt seconds
 *                                         since the last sample
 *   {"ev":"mark","k":i,"t":s,"dt":d,"open":n,"msgs":m,"bytes":b,"cpu":c,
 *    "lat_n":l,"p50_ms":..,"p90_ms":..,"p99_ms":..,"p999_ms":..,"max_ms":..,
 *    "mean_ms":..,"dups":x,"back":y,"gaps":z,"first_t":s|null,"last_t":s|null,
 *    "hist_max_ns":M,"hist":[[bucket,count],...]}
 *                                         at each SIGUSR1 (k from 0): the
 *                                         dt seconds since the previous mark
 *                                         (or the start); first_t/last_t: its
 *                                         first and last message; hist: the
 *                                         interval's latency histogram (ns;
 *                                         non-empty buckets, see hist.c) for
 *                                         pooling several loadgens
 *   {"ev":"end","t":s,"open":n,"schedule_done":bool}
 *                                         the run ends; the final closes and
 *                                         the summary follow
 * The summary (--json) stays the last line. With --schedule it has
 * "schedule":{"steps":[{"i","target","hold_s","t","reached_t",
 * "open_at_reached","messages","failed"}...],"completed":bool} (null fields
 * for steps never begun or reached), with --churn "churn":{"per_s",
 * "closed","reopened","reopen_failed","reopen_skipped"}, else null; and
 * connections.closed_by_client {"end","drop","churn"} counts the closes we
 * sent, by reason. connections.opened counts every open, reopens included.
 * "bytes" is payload bytes (inflated), "wire_payload_bytes" the same as it
 * came, "compressed" the messages that came compressed; with --deflate
 * "deflate":{"negotiated","refused_context","inflate_errors"}, else null;
 * with --seq "seq":{"dups","back","gaps"} over the whole run, else null
 * (the sample events' dups/back/gaps are 0 without --seq).
 *
 * Pusher mode (--pusher KEY:SECRET; the URL's path /app/KEY?protocol=7&...):
 * the Pusher Channels protocol v7 over the WebSocket. Each connection
 * waits for pusher:connection_established, takes its socket_id and sends
 * pusher:subscribe for one channel: connection slot i (numbered from
 * --pusher-base) subscribes to <prefix><(base + i) % channels>
 * (--pusher-prefix, default "bench-"; --pusher-channels, default 1). A
 * "private-" channel is signed key:hex(HMAC-SHA256(secret,
 * socket_id:channel)), a "presence-" one with the channel_data
 * {"user_id":"<base + i>"} appended to what is signed. pusher:ping is
 * answered with pusher:pong. Every text message is read whole: the
 * protocol's own events are counted apart (established, subscribed, errors,
 * pings, member_added, member_removed, other) and are not messages; any
 * other event is a message, its "data" string (unescaped) read as a text
 * message is ({"ts":N,"seq":S,...}: latency, --seq and --check-size as
 * above). The sample and mark events and the summary carry
 * "pusher":{established,subscribed,errors,pings,member_added,
 * member_removed,other,last_subscribed_t,last_member_t} (running totals;
 * the times on the run's clock, null before the first).
 *
 * Files: main.c (options, run timeline, event loop), conn.c (one
 * connection: connect, handshake, frame reader, writes), hist.c (latency
 * histogram), proc.c (CPU and memory of this process and of a server pid),
 * report.c (progress lines, text and JSON summary), deflate.c
 * (permessage-deflate: offer, answer, inflate), tls.c (wss://), pusher.c
 * (the Pusher protocol's client side).
 *
 * Threads: one. Nothing here is thread-safe; nothing needs to be.
 */
#ifndef LG_H
#define LG_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/sy_ws_frame.h"

/* ---- options ---------------------------------------------------------- */

#define LG_MAX_DURATION_S 3600.0
#define LG_MAX_CONNECTIONS 1000000u
#define LG_MAX_SOURCES 254u
#define LG_MAX_PATH 1024u
#define LG_MAX_STEPS 4096u
#define LG_HEAD_LEN 48u              /* first bytes of a message kept for its timestamp (and,
                                        text, its sequence number and payload check) */
#define LG_MAX_INFLATED (64u << 20)  /* a compressed message may inflate to this */
#define LG_MAX_COMPRESSED (16u << 20)/* a compressed message's payload on the wire */
#define LG_INFLATE_TAIL 6u           /* room kept after a compressed message (deflate.c) */

/* One population target of --schedule: move to `target` open connections,
 * then hold it hold_s seconds (hold_s < 0: until --duration). */
typedef struct {
    uint32_t target;
    double hold_s;
} lg_step_t;

typedef struct lg_opts {
    struct sockaddr_in dst;   /* server address (127.0.0.0/8 only) */
    char host_header[32];     /* "a.b.c.d:port" for the Host header */
    char path[LG_MAX_PATH];   /* request target, starts with '/' */
    char url[LG_MAX_PATH + 64];
    uint32_t connections;     /* N: at least the largest target */
    unsigned sources;         /* K: source addresses 127.0.0.1..127.0.0.K */
    double duration_s;        /* whole run, ramp included; <= 3600 */
    double ramp_per_sec;      /* connection attempts per second; 0: no pacing */
    double hold_s;            /* < 0: none; else end this long after the ramp */
    unsigned max_pending;     /* attempts in flight (connect + handshake) */
    double connect_timeout_s; /* connect + handshake must finish within this */
    double close_wait_s;      /* wait for answers to our closes at the end */
    pid_t server_pid;         /* 0: none; else sample its CPU and RSS */
    bool tls;                 /* wss://: TLS (no certificate check: a loopback benchmark) */
    bool deflate;             /* offer permessage-deflate (no context takeover) */
    bool json;                /* summary as one JSON object on stdout */
    bool quiet;               /* no progress lines */
    bool events;              /* JSON event lines on stdout as the run goes */
    bool scheduled;           /* --schedule given */
    bool seq;                 /* --seq: check each message's sequence number (binary:
                                 bytes 8..15; text: {"ts":N,"seq":S,...) */
    bool sse;                 /* http:// URL: Server-Sent Events (GET, Accept:
                                 text/event-stream), no WebSocket */
    uint32_t check_size;      /* --check-size N: every text message must be N bytes of
                                 {"ts":T,"seq":S,"p":"xx...x"} (0: no check) */
    double churn;             /* share of the open connections turned over per second */
    bool pusher;              /* --pusher KEY:SECRET: the Pusher protocol v7 (see above) */
    char pusher_key[64];
    char pusher_secret[128];
    char pusher_prefix[96];   /* channel names: prefix + index */
    uint32_t pusher_channels; /* >= 1 */
    uint32_t pusher_base;     /* slot i is index base + i (channel, user id) */
    lg_step_t *steps;         /* --schedule, or one step {connections, hold} */
    unsigned nsteps;
} lg_opts_t;

/* ---- outcomes --------------------------------------------------------- */

/* Why a connection attempt did not reach the open state. */
typedef enum {
    LG_FAIL_FD_LIMIT,     /* socket(): EMFILE/ENFILE, out of file descriptors */
    LG_FAIL_SOCKET,       /* socket(), setsockopt() or epoll_ctl() failed otherwise */
    LG_FAIL_NO_PORT,      /* bind()/connect(): EADDRINUSE/EADDRNOTAVAIL, no ephemeral port */
    LG_FAIL_REFUSED,      /* ECONNREFUSED */
    LG_FAIL_CONNECT,      /* any other connect error (reported by SO_ERROR) */
    LG_FAIL_TIMEOUT,      /* connect + handshake not done in connect_timeout_s */
    LG_FAIL_CLOSED,       /* EOF or reset before the whole response head */
    LG_FAIL_STATUS,       /* a response other than 101 */
    LG_FAIL_HANDSHAKE,    /* 101 with a wrong Accept, Upgrade or Connection, or an
                             extension not offered (or answered wrongly) */
    LG_FAIL_BAD_RESPONSE, /* response head malformed or larger than 8 KiB */
    LG_FAIL_NOT_STARTED,  /* the run ended before the attempt was made */
    LG_FAIL_CUT_SHORT,    /* the run ended while the attempt was in flight */
    LG_FAIL_TLS,          /* the TLS handshake failed (wss://) */
    LG_FAIL__COUNT
} lg_fail_t;

/* How an open connection ended. */
typedef enum {
    LG_END_SERVER_CLOSE,   /* the server sent a close frame (code counted apart) */
    LG_END_EOF,            /* TCP closed without a close frame (1006) */
    LG_END_RESET,          /* recv()/send() error, e.g. ECONNRESET */
    LG_END_PROTOCOL,       /* the server broke RFC 6455; we sent 1002 and closed */
    LG_END_OUTPUT,         /* our unsent output passed LG_MAX_OUTPUT */
    LG_END_CLIENT_CLOSE,   /* our close (end of run, drop or churn), answered */
    LG_END_CLIENT_NO_REPLY,/* our close, no close reply or no EOF within
                              close_wait_s */
    LG_END__COUNT
} lg_end_t;

/* Why we closed an open connection (LG_CLOSE_NONE: we did not). */
typedef enum {
    LG_CLOSE_NONE,
    LG_CLOSE_END,   /* the end of the run */
    LG_CLOSE_DROP,  /* a lower --schedule target */
    LG_CLOSE_CHURN, /* --churn */
    LG_CLOSE__COUNT
} lg_close_t;

/* Why a connection attempt was made. */
enum { LG_ATTEMPT_RAMP, LG_ATTEMPT_CHURN };

const char *lg_fail_name(lg_fail_t f);
const char *lg_end_name(lg_end_t e);

/* A small table counting distinct codes (HTTP statuses, close codes). */
#define LG_CODES_MAX 16
typedef struct {
    unsigned code[LG_CODES_MAX];
    uint64_t count[LG_CODES_MAX];
    unsigned used;
    uint64_t other; /* codes beyond the table */
} lg_codes_t;

void lg_codes_add(lg_codes_t *t, unsigned code);

/* ---- histogram (hist.c) ----------------------------------------------- */

/* Log-linear buckets as in HdrHistogram: values below 2^LG_HIST_SUB_BITS
 * are exact; above, each power of two is split in 2^(LG_HIST_SUB_BITS-1)
 * equal buckets, so a bucket is at most 1/64 (1.6%) of its value wide. It
 * covers 0..2^64-1 in fixed memory (~30 KiB). */
#define LG_HIST_SUB_BITS 7
#define LG_HIST_HALF (1u << (LG_HIST_SUB_BITS - 1))
#define LG_HIST_BUCKETS ((64u - LG_HIST_SUB_BITS + 2u) * LG_HIST_HALF)

typedef struct {
    uint64_t counts[LG_HIST_BUCKETS];
    uint64_t total, min, max;
    double sum;
} lg_hist_t;

void lg_hist_init(lg_hist_t *h);
void lg_hist_record(lg_hist_t *h, uint64_t v);
/* The value at percentile p (0 < p <= 100): the highest value of the
 * bucket holding it, but never above the exact max. 0 when empty. */
uint64_t lg_hist_percentile(const lg_hist_t *h, double p);

/* ---- process samples (proc.c) ----------------------------------------- */

typedef struct {
    int64_t at_ns;     /* CLOCK_MONOTONIC when taken */
    double cpu_s;      /* user + system CPU seconds so far */
    double user_s, sys_s;
    long rss_kib;      /* VmRSS; -1 if unknown */
    bool ok;
} lg_sample_t;

/* This process (getrusage, /proc/self/status). */
void lg_sample_self(lg_sample_t *s, int64_t now_ns);
/* Another process by pid (/proc/<pid>/stat, /proc/<pid>/status);
 * s->ok is false when it cannot be read (gone, not ours). */
void lg_sample_pid(lg_sample_t *s, pid_t pid, int64_t now_ns);

/* ---- one connection (conn.c) ------------------------------------------ */

enum {
    LG_CS_IDLE,       /* not attempted yet */
    LG_CS_CONNECTING, /* non-blocking connect in flight */
    LG_CS_TLS,        /* TLS handshake (wss://), then the request */
    LG_CS_HANDSHAKE,  /* request sent (or being sent), waiting for the 101 */
    LG_CS_OPEN,
    LG_CS_CLOSING,    /* a close was sent; waiting for the server's EOF */
    LG_CS_DONE        /* fd closed; the outcome is counted */
};

#define LG_MAX_RESPONSE_HEAD 8192u
#define LG_MAX_OUTPUT 65536u

typedef struct lg_conn {
    int fd;
    uint8_t state;        /* LG_CS_* */
    uint8_t hdr_have;     /* bytes of a split frame header kept in hdr */
    uint8_t in_payload;   /* the header of fr is complete, payload follows */
    uint8_t in_msg;       /* a fragmented data message is open */
    uint8_t msg_op;       /* opcode of the open data message */
    uint8_t head_have;    /* bytes of the current message in head */
    uint8_t deflate;      /* permessage-deflate was negotiated */
    uint8_t msg_z;        /* the current message is compressed (RSV1) */
    uint8_t close_sent;
    uint8_t close_rcvd;
    uint8_t closed_by_us; /* our close started the closing handshake */
    uint8_t close_kind;   /* lg_close_t: why we closed it */
    uint8_t have_seq;     /* --seq: last_seq holds the last number received */
    uint8_t attempt_kind; /* LG_ATTEMPT_*: why it was opened */
    uint8_t msg_whole;    /* --pusher: the current text message is gathered whole in z */
    uint32_t ep_events;   /* the current epoll interest */
    uint16_t close_code;  /* what the server's close said */
    uint64_t last_seq;    /* --seq: the highest sequence number received */
    uint8_t hdr[SY_WS_MAX_HEADER_LEN];
    uint8_t msg_head[LG_HEAD_LEN]; /* the message's first bytes (inflated): its timestamp */
    sy_ws_frame_t fr;     /* the frame being read */
    uint64_t pay_off;     /* payload bytes of fr read so far */
    uint64_t msg_len;     /* payload bytes of the current message so far (for a
                             compressed one: inflated, once it is whole) */
    uint8_t *z;           /* a compressed message's payload, gathered whole */
    uint32_t z_len, z_cap;
    int64_t deadline_ns;  /* connect + handshake deadline; in LG_CS_CLOSING,
                             the end of the wait for the server's answer */
    char *head;           /* response head while in LG_CS_HANDSHAKE */
    uint32_t head_len;
    uint32_t out_len, out_cap;
    uint8_t *out;         /* unsent bytes, NULL when none */
    struct ssl_st *ssl;   /* wss://: the TLS session, else NULL */
    char accept[28];      /* the Sec-WebSocket-Accept we expect */
    uint8_t ctrl[SY_WS_MAX_CONTROL_PAYLOAD]; /* a control frame's payload */
    /* --check-size: what the payload check needs beyond the head */
    uint32_t pay_x;       /* 'x' bytes of the current message */
    uint8_t pay_tail[2];  /* its last two bytes */
    /* SSE (http:// URL): the body's chunked decoding and the event parser */
    uint8_t sse_chunked;  /* the response is Transfer-Encoding: chunked */
    uint8_t sse_cstate;   /* chunk decoder: LG_CH_* (conn.c) */
    uint8_t sse_ext;      /* in a chunk size line's extension (or its CR) */
    uint8_t sse_lstate;   /* event parser: at a line's start, in a data value, skipping */
    uint8_t sse_name_len; /* the field name read so far at a line's start */
    uint8_t sse_sp;       /* a data value's first byte may be the one optional space */
    uint8_t sse_ev_data;  /* the current event has a data line */
    char sse_name[6];
    uint64_t sse_chunk_left; /* bytes left in the current chunk */
} lg_conn_t;

/* ---- the run (main.c owns it) ----------------------------------------- */

typedef struct {
    uint64_t messages;     /* complete data messages */
    uint64_t bytes;        /* their payload bytes (compressed ones: inflated) */
    uint64_t wire_payload; /* their payload bytes as they came (compressed ones: compressed) */
    uint64_t compressed;   /* messages that came compressed (RSV1) */
    uint64_t wire_bytes;   /* bytes read from sockets, handshakes included */
    uint64_t text_messages;
    uint64_t timestamped;  /* binary messages with a timestamp recorded */
    uint64_t bad_timestamps; /* a timestamp in the future or > 1 h old */
    uint64_t pings, pongs_sent;
    uint64_t seq_dups;     /* --seq: the last number again */
    uint64_t seq_back;     /* --seq: a number below the last one */
    uint64_t seq_gaps;     /* --seq: numbers skipped (messages missed) */
    uint64_t checked;      /* --check-size: text messages checked */
    uint64_t bad_payload;  /* --check-size: of those, not the expected bytes */
    uint64_t sse_other;    /* SSE: events whose data is not one of ours (notices,
                              sy.open) */
    /* --pusher: the protocol's own events (not messages) */
    uint64_t p_established, p_subscribed, p_errors, p_pings, p_member_added,
        p_member_removed, p_other;
} lg_counts_t;

typedef struct lg_run {
    const lg_opts_t *opts;
    int epfd;
    lg_conn_t *conns;
    uint8_t *rbuf;         /* one receive buffer for every connection */
    size_t rbuf_cap;
    uint64_t rng;

    /* connection slots */
    uint32_t cap;          /* slots in conns */
    uint32_t hwm;          /* slots [0, hwm) have been used */
    uint32_t *free_slots;  /* a FIFO ring of the slots not in use: 0, 1, ... at
                              first; a freed slot goes to the back */
    uint32_t free_head, nfree;

    /* connection counts */
    uint32_t pending;      /* in LG_CS_CONNECTING or LG_CS_HANDSHAKE */
    uint32_t open;         /* in LG_CS_OPEN */
    uint64_t opened;       /* ever reached LG_CS_OPEN */
    uint64_t deflate_opened; /* of those, with permessage-deflate negotiated */
    uint64_t deflate_refused;/* answers refused: server keeps context (LG_FAIL_HANDSHAKE) */
    uint64_t inflate_errors; /* compressed messages that did not inflate (we sent 1007) */
    uint32_t closing;      /* in LG_CS_CLOSING */
    uint64_t closed_by[LG_CLOSE__COUNT]; /* closes we sent, by reason */

    /* the current step (the run without --schedule is one step) */
    unsigned step;
    bool step_settled;     /* its target was reached (or could not be) */
    int64_t t_hold_end;    /* when its hold ends; INT64_MAX: not yet known */
    uint32_t ramp_budget;  /* attempts this step makes to go up */
    uint32_t ramp_started; /* of those, started */
    uint32_t ramp_inflight;/* LG_ATTEMPT_RAMP attempts pending */
    uint32_t drop_closing; /* LG_CLOSE_DROP closes waiting for the server */
    struct lg_step_rec {
        int64_t t_start, t_reached; /* t_reached 0: never */
        uint32_t open_at_start, open_at_reached;
        uint64_t messages_at_start, messages; /* delivered during the step */
        uint64_t failed_at_start, failed;     /* attempts that failed during it */
    } *steps;              /* one per step begun */

    /* churn */
    double churn_credit;   /* closes due, fractional */
    int64_t t_churn;       /* when the credit was last brought up to date */
    uint32_t churn_owed;   /* reopens to start */
    uint64_t churn_closed, churn_reopened, churn_reopen_failed, churn_reopen_skipped;
    uint64_t failed[LG_FAIL__COUNT];
    uint64_t ended[LG_END__COUNT];
    lg_codes_t statuses;   /* non-101 HTTP statuses */
    lg_codes_t close_codes;/* codes of the server's close frames */
    char first_error[160]; /* the first failure or protocol error, for the report */

    /* measurement */
    bool measuring;        /* false once the end phase starts */
    bool steady;           /* the first step settled: every attempt of its ramp
                              is open or failed */
    lg_counts_t c;
    lg_hist_t lat;         /* ns, every timestamped message of the window */
    lg_hist_t lat_steady;  /* ns, the same after the ramp settled */
    lg_hist_t lat_tick;    /* ns, since the last once-a-second sample (--events) */
    lg_hist_t lat_mark;    /* ns, since the last mark (SIGUSR1) */
    unsigned marks;        /* mark events printed */
    lg_counts_t c_last_mark;
    lg_sample_t self_last_mark;
    int64_t t_last_mark;
    int64_t t_first_since_mark; /* the first message since the last mark, 0: none yet */
    int64_t t_last_msg;    /* the latest message */
    int64_t t_start, t_first_msg, t_settled, t_end, t_exit;
    lg_counts_t c_at_settled;
    lg_sample_t self_start, self_first, self_settled, self_end;
    lg_sample_t srv_start, srv_first, srv_settled, srv_end, srv_after_close;

    /* once per second */
    uint32_t seconds;      /* entries used in the arrays below */
    uint32_t seconds_cap;
    uint64_t *sec_messages, *sec_bytes;
    uint32_t *sec_open;
    lg_counts_t c_last_tick;
    lg_sample_t self_last_tick, srv_last_tick;
    int fd_limit;          /* RLIMIT_NOFILE soft limit after raising */
    bool warned_fd_limit;
    struct ssl_ctx_st *ssl_ctx; /* wss:// only */
    uint64_t tls_handshakes;    /* completed */
    struct libdeflate_decompressor *inflater; /* --deflate only */
    uint8_t *zout;              /* inflated messages go here */
    size_t zout_cap;
    int64_t tls_ns;             /* time in TLS handshake steps (our CPU share of them) */
    int64_t t_last_subscribed;  /* --pusher: the latest subscription_succeeded (0: none) */
    int64_t t_last_member;      /* --pusher: the latest member_added (0: none) */
} lg_run_t;

int64_t lg_now_ns(void);
uint64_t lg_rand(lg_run_t *r);

/* Starts a connection in free slot i (LG_CS_IDLE or LG_CS_DONE, taken off
 * the free stack by the caller) for the given reason (LG_ATTEMPT_*). Counts
 * a failure at once if the socket cannot even be created, bound or
 * connected. Call only from the main loop, not while dispatching events. */
void lg_conn_start(lg_run_t *r, uint32_t i, unsigned attempt_kind);
/* Handles an epoll event for connection i. */
void lg_conn_event(lg_run_t *r, uint32_t i, uint32_t events);
/* Fails an attempt whose deadline passed (LG_FAIL_TIMEOUT). */
void lg_conn_timeout(lg_run_t *r, uint32_t i);
/* Sends a close (1000) on an open connection, for the reason `why`
 * (lg_close_t), and waits up to close_wait_s for the server's answer. */
void lg_conn_close(lg_run_t *r, uint32_t i, lg_close_t why);
/* Ends a closing connection whose wait for the server ran out. */
void lg_conn_close_timeout(lg_run_t *r, uint32_t i);
/* Closes the fd of a connection still not done when the run exits, counting
 * it as LG_END_CLIENT_NO_REPLY (or LG_FAIL_CUT_SHORT if it never opened). */
void lg_conn_abandon(lg_run_t *r, uint32_t i);

/* Sends one masked text frame (a client message) of len bytes (<= 64 KiB).
 * False when the connection is gone. */
bool lg_conn_send_text(lg_run_t *r, uint32_t i, lg_conn_t *c, const char *text, size_t len);

/* ---- the Pusher protocol (pusher.c) -------------------------------------- */

/* A whole text message m[0..n) of connection i (--pusher). Returns 1 when
 * it is a channel event (a message: c->msg_head, head_have, msg_len,
 * pay_x and pay_tail now describe its unescaped data), 0 when it was one of
 * the protocol's events (counted, answered), -1 when the connection is gone. */
int lg_pusher_message(lg_run_t *r, uint32_t i, lg_conn_t *c, const uint8_t *m, size_t n, int64_t now);
/* The "pusher" object of the events and the summary (running totals). */
void lg_pusher_json(const lg_run_t *r, FILE *f);

/* ---- output (report.c) ------------------------------------------------ */

/* One progress line on stderr, for the second that just ended; self is a
 * sample of this process taken now. */
void lg_report_progress(lg_run_t *r, const lg_sample_t *self, int64_t now_ns);

/* JSON event lines on stdout (with --events), flushed at once. `t` is
 * seconds since the start of the run (CLOCK_MONOTONIC). */
void lg_event_start(const lg_run_t *r);
void lg_event_step(const lg_run_t *r, int64_t now_ns);
void lg_event_reached(const lg_run_t *r, int64_t now_ns);
void lg_event_sample(const lg_run_t *r, const lg_sample_t *self, int64_t now_ns);
void lg_event_end(const lg_run_t *r, int64_t now_ns);
/* A mark (SIGUSR1): the interval since the last one; starts the next. */
void lg_event_mark(lg_run_t *r, int64_t now_ns);
/* The summary: text on stdout, or one JSON object with opts->json. */
void lg_report_summary(const lg_run_t *r);

/* ---- permessage-deflate (deflate.c) ------------------------------------- */

/* The decompressor and its output buffer, with opts->deflate. */
bool lg_inflate_init(lg_run_t *r);
void lg_inflate_free(lg_run_t *r);
/* Inflates the whole compressed message in[0..len); in must have
 * LG_INFLATE_TAIL writable bytes after len. Returns the inflated bytes
 * (*out_len of them, valid until the next call) or NULL when the message
 * is not valid DEFLATE or would inflate past LG_MAX_INFLATED. */
const uint8_t *lg_inflate(lg_run_t *r, uint8_t *in, size_t len, size_t *out_len);
/* The request's header line (with CRLF) offering the extension. */
const char *lg_deflate_offer(void);

typedef enum {
    LG_PMD_OK,      /* permessage-deflate, server_no_context_takeover */
    LG_PMD_CONTEXT, /* permessage-deflate, but the server keeps its context */
    LG_PMD_BAD      /* not an answer to our offer */
} lg_pmd_answer_t;
/* Checks the value of the answer's Sec-WebSocket-Extensions header. */
lg_pmd_answer_t lg_deflate_answer(const char *value, size_t len);

/* ---- wss:// (tls.c) ------------------------------------------------------ */

/* The client context when opts->tls; false when OpenSSL cannot make it. */
bool lg_tls_init(lg_run_t *r);
void lg_tls_free(lg_run_t *r);
/* A TLS session on c->fd (connected); false when out of memory. */
bool lg_tls_new(lg_run_t *r, lg_conn_t *c);
void lg_tls_release(lg_conn_t *c);
/* One handshake step: 1 done, 0 wants to read, 2 wants to write, -1 failed. */
int lg_tls_handshake(lg_run_t *r, lg_conn_t *c);
/* send()/recv() through TLS when c->ssl is set (errno EAGAIN: wait). */
ssize_t lg_io_send(lg_conn_t *c, const void *p, size_t n);
ssize_t lg_io_recv(lg_conn_t *c, void *p, size_t n);

#endif
