/* Progress lines (stderr), event lines and the summary (stdout, text or
 * JSON). */
#include <stdio.h>
#include <unistd.h>

#include "lg.h"

static double secs(int64_t ns)
{
    return (double)ns / 1e9;
}

/* Below this, a CPU percentage says nothing (the clock ticks are 10 ms). */
#define MIN_CPU_WINDOW_S 0.1

/* cpu_s as a percentage of one core over wall_s; < 0 (unknown) if the
 * window is too short to say. */
static double pct(double cpu_s, double wall_s)
{
    return wall_s >= MIN_CPU_WINDOW_S ? cpu_s / wall_s * 100.0 : -1.0;
}

/* CPU % between two samples of one process; < 0 if either is missing. */
static double cpu_pct(const lg_sample_t *a, const lg_sample_t *b)
{
    if (!a->ok || !b->ok || b->at_ns <= a->at_ns)
        return -1;
    return pct(b->cpu_s - a->cpu_s, secs(b->at_ns - a->at_ns));
}

/* A percentage for the text output: "n/a" when unknown. */
static const char *pct_str(char buf[16], double v)
{
    if (v < 0)
        return "n/a";
    snprintf(buf, 16, "%.0f%%", v);
    return buf;
}

static uint64_t failed_total(const lg_run_t *r)
{
    uint64_t n = 0;
    for (int k = 0; k < LG_FAIL__COUNT; k++)
        n += r->failed[k];
    return n;
}

static uint64_t ended_total(const lg_run_t *r)
{
    uint64_t n = 0;
    for (int k = 0; k < LG_END__COUNT; k++)
        n += r->ended[k];
    return n;
}

void lg_report_progress(lg_run_t *r, const lg_sample_t *self, int64_t now)
{
    lg_sample_t srv;
    uint64_t msgs = r->c.messages - r->c_last_tick.messages;
    uint64_t bytes = r->c.bytes - r->c_last_tick.bytes;
    double dt = secs(now - r->self_last_tick.at_ns);
    (void)self;
    char p1[16], p2[16];
    fprintf(stderr,
            "loadgen %5.0fs  open %u  pending %u  failed %llu  ended %llu | %llu msg/s  %.1f MB/s"
            "  | cpu %s",
            secs(now - r->t_start), r->open, r->pending, (unsigned long long)failed_total(r),
            (unsigned long long)ended_total(r), (unsigned long long)(dt > 0 ? (double)msgs / dt : 0),
            dt > 0 ? (double)bytes / dt / 1e6 : 0.0, pct_str(p1, cpu_pct(&r->self_last_tick, self)));
    if (r->opts->scheduled)
        fprintf(stderr, "  | step %u/%u target %u%s", r->step + 1, r->opts->nsteps,
                r->opts->steps[r->step].target, r->step_settled ? " held" : "");
    if (r->opts->server_pid > 0) {
        lg_sample_pid(&srv, r->opts->server_pid, now);
        if (srv.ok && srv.rss_kib >= 0)
            fprintf(stderr, "  | server cpu %s  rss %.1f MiB",
                    pct_str(p2, cpu_pct(&r->srv_last_tick, &srv)), (double)srv.rss_kib / 1024.0);
        else if (srv.ok)
            fprintf(stderr, "  | server cpu %s", pct_str(p2, cpu_pct(&r->srv_last_tick, &srv)));
        else
            fprintf(stderr, "  | server gone");
        r->srv_last_tick = srv;
    }
    fputc('\n', stderr);
}

/* ---- events ------------------------------------------------------------- */

/* Seconds since the start of the run. */
static double t_of(const lg_run_t *r, int64_t now)
{
    return secs(now - r->t_start);
}

static void event_done(void)
{
    fputs("}\n", stdout);
    fflush(stdout);
}

void lg_event_start(const lg_run_t *r)
{
    const lg_opts_t *o = r->opts;
    if (!o->events)
        return;
    fprintf(stdout,
            "{\"ev\":\"start\",\"t\":0,\"mono_ns\":%lld,\"pid\":%ld,\"connections\":%u,"
            "\"sources\":%u,\"steps\":%u,\"churn\":%g",
            (long long)r->t_start, (long)getpid(), o->connections, o->sources, o->nsteps, o->churn);
    event_done();
}

void lg_event_step(const lg_run_t *r, int64_t now)
{
    const lg_opts_t *o = r->opts;
    if (!o->events)
        return;
    fprintf(stdout, "{\"ev\":\"step\",\"i\":%u,\"target\":%u,\"t\":%.3f,\"open\":%u,\"hold_s\":",
            r->step, o->steps[r->step].target, t_of(r, now), r->open);
    if (o->steps[r->step].hold_s < 0)
        fputs("null", stdout);
    else
        fprintf(stdout, "%g", o->steps[r->step].hold_s);
    event_done();
}

void lg_event_reached(const lg_run_t *r, int64_t now)
{
    const lg_opts_t *o = r->opts;
    if (!o->events)
        return;
    const struct lg_step_rec *s = &r->steps[r->step];
    uint64_t failed = 0;
    for (int k = 0; k < LG_FAIL__COUNT; k++)
        failed += r->failed[k];
    fprintf(stdout,
            "{\"ev\":\"reached\",\"i\":%u,\"open\":%u,\"t\":%.3f,\"target\":%u,"
            "\"move_s\":%.3f,\"failed\":%llu,\"pending\":%u",
            r->step, r->open, t_of(r, now), o->steps[r->step].target, secs(now - s->t_start),
            (unsigned long long)(failed - s->failed_at_start), r->pending);
    event_done();
}

void lg_event_sample(const lg_run_t *r, const lg_sample_t *self, int64_t now)
{
    const lg_opts_t *o = r->opts;
    if (!o->events)
        return;
    fprintf(stdout,
            "{\"ev\":\"sample\",\"t\":%.3f,\"open\":%u,\"msgs\":%llu,\"bytes\":%llu,"
            "\"cpu\":%.3f,\"dt\":%.3f,\"pending\":%u,\"closing\":%u,\"step\":%u,"
            "\"lat_n\":%llu,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"p999_ms\":%.3f,\"max_ms\":%.3f,"
            "\"wire\":%llu,\"zmsgs\":%llu",
            t_of(r, now), r->open, (unsigned long long)(r->c.messages - r->c_last_tick.messages),
            (unsigned long long)(r->c.bytes - r->c_last_tick.bytes),
            self->cpu_s - r->self_last_tick.cpu_s, secs(now - r->self_last_tick.at_ns), r->pending,
            r->closing, r->step, (unsigned long long)r->lat_tick.total,
            (double)lg_hist_percentile(&r->lat_tick, 50) / 1e6, (double)lg_hist_percentile(&r->lat_tick, 99) / 1e6,
            (double)lg_hist_percentile(&r->lat_tick, 99.9) / 1e6, (double)r->lat_tick.max / 1e6,
            (unsigned long long)(r->c.wire_payload - r->c_last_tick.wire_payload),
            (unsigned long long)(r->c.compressed - r->c_last_tick.compressed));
    fprintf(stdout, ",\"dups\":%llu,\"back\":%llu,\"gaps\":%llu,\"bad\":%llu",
            (unsigned long long)(r->c.seq_dups - r->c_last_tick.seq_dups),
            (unsigned long long)(r->c.seq_back - r->c_last_tick.seq_back),
            (unsigned long long)(r->c.seq_gaps - r->c_last_tick.seq_gaps),
            (unsigned long long)(r->c.bad_payload - r->c_last_tick.bad_payload));
    if (o->pusher) {
        fputs(",\"pusher\":", stdout);
        lg_pusher_json(r, stdout);
    }
    event_done();
}

/* A time on the run's clock, or null for 0 (none). */
static void json_t(const lg_run_t *r, int64_t at)
{
    if (at == 0)
        fputs("null", stdout);
    else
        fprintf(stdout, "%.6f", t_of(r, at));
}

void lg_event_mark(lg_run_t *r, int64_t now)
{
    const lg_opts_t *o = r->opts;
    if (!o->events)
        return;
    lg_sample_t self;
    lg_sample_self(&self, now);
    const lg_counts_t *a = &r->c_last_mark, *b = &r->c;
    const lg_hist_t *h = &r->lat_mark;
    fprintf(stdout,
            "{\"ev\":\"mark\",\"k\":%u,\"t\":%.6f,\"dt\":%.6f,\"open\":%u,\"msgs\":%llu,"
            "\"bytes\":%llu,\"cpu\":%.3f,\"lat_n\":%llu,\"p50_ms\":%.3f,\"p90_ms\":%.3f,"
            "\"p99_ms\":%.3f,\"p999_ms\":%.3f,\"max_ms\":%.3f,\"mean_ms\":%.3f,"
            "\"dups\":%llu,\"back\":%llu,\"gaps\":%llu,\"bad\":%llu,\"checked\":%llu,\"first_t\":",
            r->marks, t_of(r, now), secs(now - r->t_last_mark), r->open,
            (unsigned long long)(b->messages - a->messages), (unsigned long long)(b->bytes - a->bytes),
            self.cpu_s - r->self_last_mark.cpu_s, (unsigned long long)h->total,
            (double)lg_hist_percentile(h, 50) / 1e6, (double)lg_hist_percentile(h, 90) / 1e6,
            (double)lg_hist_percentile(h, 99) / 1e6, (double)lg_hist_percentile(h, 99.9) / 1e6,
            (double)h->max / 1e6, h->total ? h->sum / (double)h->total / 1e6 : 0.0,
            (unsigned long long)(b->seq_dups - a->seq_dups), (unsigned long long)(b->seq_back - a->seq_back),
            (unsigned long long)(b->seq_gaps - a->seq_gaps), (unsigned long long)(b->bad_payload - a->bad_payload),
            (unsigned long long)(b->checked - a->checked));
    json_t(r, r->t_first_since_mark);
    fputs(",\"last_t\":", stdout);
    json_t(r, r->t_first_since_mark ? r->t_last_msg : 0);
    /* the interval's histogram itself (its non-empty buckets, ns), so that
     * the runner can pool several loadgens' latencies exactly */
    fprintf(stdout, ",\"hist_max_ns\":%llu,\"hist\":[", (unsigned long long)h->max);
    for (unsigned b = 0, first = 1; b < LG_HIST_BUCKETS; b++) {
        if (h->counts[b] == 0)
            continue;
        fprintf(stdout, "%s[%u,%llu]", first ? "" : ",", b, (unsigned long long)h->counts[b]);
        first = 0;
    }
    fputc(']', stdout);
    if (o->pusher) {
        fputs(",\"pusher\":", stdout);
        lg_pusher_json(r, stdout);
    }
    event_done();
    r->marks++;
    r->c_last_mark = r->c;
    r->self_last_mark = self;
    r->t_last_mark = now;
    r->t_first_since_mark = 0;
    lg_hist_init(&r->lat_mark);
}

void lg_event_end(const lg_run_t *r, int64_t now)
{
    const lg_opts_t *o = r->opts;
    if (!o->events)
        return;
    unsigned done = r->step_settled && now >= r->t_hold_end && r->step + 1 == o->nsteps;
    fprintf(stdout, "{\"ev\":\"end\",\"t\":%.3f,\"open\":%u,\"schedule_done\":%s", t_of(r, now),
            r->open, done ? "true" : "false");
    event_done();
}

/* ---- JSON --------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* A number, or null when negative (unknown). */
static void json_num(FILE *f, double v)
{
    if (v < 0)
        fputs("null", f);
    else
        fprintf(f, "%.6g", v);
}

static void json_codes(FILE *f, const lg_codes_t *t)
{
    fputc('{', f);
    for (unsigned k = 0; k < t->used; k++)
        fprintf(f, "%s\"%u\":%llu", k ? "," : "", t->code[k], (unsigned long long)t->count[k]);
    if (t->other)
        fprintf(f, "%s\"other\":%llu", t->used ? "," : "", (unsigned long long)t->other);
    fputc('}', f);
}

static void json_latency(FILE *f, const lg_hist_t *h)
{
    if (h->total == 0) {
        fputs("null", f);
        return;
    }
    fprintf(f,
            "{\"count\":%llu,\"min\":%.3f,\"mean\":%.3f,\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,"
            "\"p99_9\":%.3f,\"max\":%.3f}",
            (unsigned long long)h->total, (double)h->min / 1e3, h->sum / (double)h->total / 1e3,
            (double)lg_hist_percentile(h, 50) / 1e3, (double)lg_hist_percentile(h, 90) / 1e3,
            (double)lg_hist_percentile(h, 99) / 1e3, (double)lg_hist_percentile(h, 99.9) / 1e3,
            (double)h->max / 1e3);
}

static void json_u64_array(FILE *f, const uint64_t *a, uint32_t n)
{
    fputc('[', f);
    for (uint32_t k = 0; k < n; k++)
        fprintf(f, "%s%llu", k ? "," : "", (unsigned long long)a[k]);
    fputc(']', f);
}

static void json_rss(FILE *f, const lg_sample_t *s)
{
    if (s->ok && s->rss_kib >= 0)
        fprintf(f, "%ld", s->rss_kib);
    else
        fputs("null", f);
}

static void summary_json(const lg_run_t *r)
{
    FILE *f = stdout;
    const lg_opts_t *o = r->opts;
    double window_s = r->t_first_msg ? secs(r->t_end - r->t_first_msg) : 0;
    double steady_s = r->steady ? secs(r->t_end - r->t_settled) : 0;
    uint64_t steady_msgs = r->c.messages - r->c_at_settled.messages;

    fputs("{\"url\":", f);
    json_str(f, o->url);
    fprintf(f, ",\"connections\":{\"requested\":%u,\"sources\":%u,\"opened\":%llu,\"failed\":%llu,",
            o->connections, o->sources, (unsigned long long)r->opened,
            (unsigned long long)failed_total(r));
    fputs("\"failed_by_reason\":{", f);
    for (int k = 0, first = 1; k < LG_FAIL__COUNT; k++) {
        if (r->failed[k] == 0)
            continue;
        fprintf(f, "%s\"%s\":%llu", first ? "" : ",", lg_fail_name((lg_fail_t)k),
                (unsigned long long)r->failed[k]);
        first = 0;
    }
    fputs("},\"http_statuses\":", f);
    json_codes(f, &r->statuses);
    fputs(",\"ended_by\":{", f);
    for (int k = 0, first = 1; k < LG_END__COUNT; k++) {
        if (r->ended[k] == 0)
            continue;
        fprintf(f, "%s\"%s\":%llu", first ? "" : ",", lg_end_name((lg_end_t)k),
                (unsigned long long)r->ended[k]);
        first = 0;
    }
    fputs("},\"server_close_codes\":", f);
    json_codes(f, &r->close_codes);
    fprintf(f, ",\"closed_by_client\":{\"end\":%llu,\"drop\":%llu,\"churn\":%llu}",
            (unsigned long long)r->closed_by[LG_CLOSE_END],
            (unsigned long long)r->closed_by[LG_CLOSE_DROP],
            (unsigned long long)r->closed_by[LG_CLOSE_CHURN]);
    fprintf(f, ",\"fd_limit\":%d,\"ramp_s\":", r->fd_limit);
    json_num(f, r->steady ? secs(r->t_settled - r->t_start) : -1);
    fputs("},", f);

    fputs("\"schedule\":", f);
    if (o->scheduled) {
        fputs("{\"steps\":[", f);
        for (unsigned k = 0; k < o->nsteps; k++) {
            const struct lg_step_rec *s = &r->steps[k];
            bool begun = k <= r->step;
            fprintf(f, "%s{\"i\":%u,\"target\":%u,\"hold_s\":%g,\"t\":", k ? "," : "", k,
                    o->steps[k].target, o->steps[k].hold_s);
            json_num(f, begun ? secs(s->t_start - r->t_start) : -1);
            fputs(",\"reached_t\":", f);
            json_num(f, begun && s->t_reached ? secs(s->t_reached - r->t_start) : -1);
            fputs(",\"open_at_reached\":", f);
            json_num(f, begun && s->t_reached ? (double)s->open_at_reached : -1);
            fputs(",\"messages\":", f);
            json_num(f, begun ? (double)s->messages : -1);
            fputs(",\"failed\":", f);
            json_num(f, begun ? (double)s->failed : -1);
            fputc('}', f);
        }
        bool done = r->step + 1 == o->nsteps && r->step_settled && r->t_end >= r->t_hold_end;
        fprintf(f, "],\"completed\":%s},", done ? "true" : "false");
    } else {
        fputs("null,", f);
    }
    fputs("\"churn\":", f);
    if (o->churn > 0)
        fprintf(f,
                "{\"per_s\":%g,\"closed\":%llu,\"reopened\":%llu,\"reopen_failed\":%llu,"
                "\"reopen_skipped\":%llu},",
                o->churn, (unsigned long long)r->churn_closed, (unsigned long long)r->churn_reopened,
                (unsigned long long)r->churn_reopen_failed,
                (unsigned long long)r->churn_reopen_skipped);
    else
        fputs("null,", f);

    fprintf(f, "\"run_s\":%.3f,", secs(r->t_end - r->t_start));
    fprintf(f,
            "\"messages\":%llu,\"bytes\":%llu,\"wire_bytes\":%llu,\"text_messages\":%llu,"
            "\"window_s\":%.3f,\"messages_per_s\":%.1f,\"bytes_per_s\":%.1f,",
            (unsigned long long)r->c.messages, (unsigned long long)r->c.bytes,
            (unsigned long long)r->c.wire_bytes, (unsigned long long)r->c.text_messages, window_s,
            window_s > 0 ? (double)r->c.messages / window_s : 0.0,
            window_s > 0 ? (double)r->c.bytes / window_s : 0.0);
    fprintf(f, "\"wire_payload_bytes\":%llu,\"compressed\":%llu,\"deflate\":",
            (unsigned long long)r->c.wire_payload, (unsigned long long)r->c.compressed);
    if (o->deflate)
        fprintf(f, "{\"negotiated\":%llu,\"refused_context\":%llu,\"inflate_errors\":%llu},",
                (unsigned long long)r->deflate_opened, (unsigned long long)r->deflate_refused,
                (unsigned long long)r->inflate_errors);
    else
        fputs("null,", f);
    fputs("\"seq\":", f);
    if (o->seq)
        fprintf(f, "{\"dups\":%llu,\"back\":%llu,\"gaps\":%llu},", (unsigned long long)r->c.seq_dups,
                (unsigned long long)r->c.seq_back, (unsigned long long)r->c.seq_gaps);
    else
        fputs("null,", f);
    fputs("\"payload_check\":", f);
    if (o->check_size > 0)
        fprintf(f, "{\"size\":%u,\"checked\":%llu,\"bad\":%llu},", o->check_size,
                (unsigned long long)r->c.checked, (unsigned long long)r->c.bad_payload);
    else
        fputs("null,", f);
    if (o->pusher) {
        fputs("\"pusher\":", f);
        lg_pusher_json(r, f);
        fputc(',', f);
    }
    fputs("\"sse\":", f);
    if (o->sse)
        fprintf(f, "{\"other_events\":%llu},", (unsigned long long)r->c.sse_other);
    else
        fputs("null,", f);
    fprintf(f, "\"timestamped\":%llu,\"bad_timestamps\":%llu,\"pings\":%llu,\"latency_us\":",
            (unsigned long long)r->c.timestamped, (unsigned long long)r->c.bad_timestamps,
            (unsigned long long)r->c.pings);
    json_latency(f, &r->lat);

    fputs(",\"steady\":", f);
    if (r->steady) {
        fprintf(f, "{\"seconds\":%.3f,\"messages\":%llu,\"messages_per_s\":%.1f,\"latency_us\":",
                steady_s, (unsigned long long)steady_msgs,
                steady_s > 0 ? (double)steady_msgs / steady_s : 0.0);
        json_latency(f, &r->lat_steady);
        fputs(",\"cpu_percent\":", f);
        json_num(f, cpu_pct(&r->self_settled, &r->self_end));
        fputs(",\"server_cpu_percent\":", f);
        json_num(f, o->server_pid > 0 ? cpu_pct(&r->srv_settled, &r->srv_end) : -1);
        fputc('}', f);
    } else {
        fputs("null", f);
    }

    const lg_sample_t *e = &r->self_end, *s0 = &r->self_start;
    fprintf(f, ",\"cpu\":{\"user_s\":%.3f,\"sys_s\":%.3f,\"run_percent\":", e->user_s - s0->user_s,
            e->sys_s - s0->sys_s);
    json_num(f, cpu_pct(s0, e));
    fputs(",\"window_cpu_s\":", f);
    json_num(f, r->self_first.ok ? e->cpu_s - r->self_first.cpu_s : -1);
    fputs(",\"window_percent\":", f);
    json_num(f, cpu_pct(&r->self_first, e));
    fputs(",\"rss_kib\":", f);
    json_rss(f, e);
    fputc('}', f);

    fputs(",\"server\":", f);
    if (o->server_pid > 0) {
        fprintf(f, "{\"pid\":%ld,\"window_cpu_percent\":", (long)o->server_pid);
        json_num(f, cpu_pct(&r->srv_first, &r->srv_end));
        fputs(",\"run_cpu_percent\":", f);
        json_num(f, cpu_pct(&r->srv_start, &r->srv_end));
        fputs(",\"rss_kib\":{\"start\":", f);
        json_rss(f, &r->srv_start);
        fputs(",\"settled\":", f);
        json_rss(f, &r->srv_settled);
        fputs(",\"end\":", f);
        json_rss(f, &r->srv_end);
        fputs(",\"after_close\":", f);
        json_rss(f, &r->srv_after_close);
        fputs("}}", f);
    } else {
        fputs("null", f);
    }

    fputs(",\"per_second\":{\"messages\":", f);
    json_u64_array(f, r->sec_messages, r->seconds);
    fputs(",\"bytes\":", f);
    json_u64_array(f, r->sec_bytes, r->seconds);
    fputs(",\"open\":[", f);
    for (uint32_t k = 0; k < r->seconds; k++)
        fprintf(f, "%s%u", k ? "," : "", r->sec_open[k]);
    fputs("]},\"first_error\":", f);
    if (r->first_error[0])
        json_str(f, r->first_error);
    else
        fputs("null", f);
    fputs("}\n", f);
}

/* ---- text --------------------------------------------------------------- */

static void text_latency(FILE *f, const char *label, const lg_hist_t *h)
{
    if (h->total == 0) {
        fprintf(f, "%s: no timestamped messages\n", label);
        return;
    }
    fprintf(f, "%s (us, %llu samples): p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
            label, (unsigned long long)h->total, (double)lg_hist_percentile(h, 50) / 1e3,
            (double)lg_hist_percentile(h, 90) / 1e3, (double)lg_hist_percentile(h, 99) / 1e3,
            (double)lg_hist_percentile(h, 99.9) / 1e3, (double)h->max / 1e3);
}

static void summary_text(const lg_run_t *r)
{
    FILE *f = stdout;
    char p1[16], p2[16];
    const lg_opts_t *o = r->opts;
    double window_s = r->t_first_msg ? secs(r->t_end - r->t_first_msg) : 0;
    fprintf(f, "url %s  connections %u requested, %llu opened, %llu failed (fd limit %d)\n",
            o->url, o->connections, (unsigned long long)r->opened,
            (unsigned long long)failed_total(r), r->fd_limit);
    if (r->closed_by[LG_CLOSE_DROP] || r->closed_by[LG_CLOSE_CHURN])
        fprintf(f, "  closed by us: %llu at the end, %llu by drops, %llu by churn\n",
                (unsigned long long)r->closed_by[LG_CLOSE_END],
                (unsigned long long)r->closed_by[LG_CLOSE_DROP],
                (unsigned long long)r->closed_by[LG_CLOSE_CHURN]);
    if (o->churn > 0)
        fprintf(f, "  churn %g/s: %llu closed, %llu reopened, %llu reopen failed, %llu skipped\n",
                o->churn, (unsigned long long)r->churn_closed,
                (unsigned long long)r->churn_reopened, (unsigned long long)r->churn_reopen_failed,
                (unsigned long long)r->churn_reopen_skipped);
    if (o->scheduled)
        for (unsigned k = 0; k <= r->step && k < o->nsteps; k++) {
            const struct lg_step_rec *s = &r->steps[k];
            fprintf(f, "  step %u: target %u hold %g s, at %.2f s", k, o->steps[k].target,
                    o->steps[k].hold_s, secs(s->t_start - r->t_start));
            if (s->t_reached)
                fprintf(f, ", reached %u open after %.2f s", s->open_at_reached,
                        secs(s->t_reached - s->t_start));
            else
                fputs(", not reached", f);
            fprintf(f, ", %llu messages, %llu failed\n", (unsigned long long)s->messages,
                    (unsigned long long)s->failed);
        }
    for (int k = 0; k < LG_FAIL__COUNT; k++)
        if (r->failed[k])
            fprintf(f, "  failed %-14s %llu\n", lg_fail_name((lg_fail_t)k),
                    (unsigned long long)r->failed[k]);
    for (int k = 0; k < LG_END__COUNT; k++)
        if (r->ended[k])
            fprintf(f, "  ended  %-22s %llu\n", lg_end_name((lg_end_t)k),
                    (unsigned long long)r->ended[k]);
    if (r->first_error[0])
        fprintf(f, "  first error: %s\n", r->first_error);
    if (r->steady)
        fprintf(f, "ramp %.2f s\n", secs(r->t_settled - r->t_start));
    fprintf(f, "messages %llu  bytes %llu  window %.2f s  %.0f msg/s  %.1f MB/s\n",
            (unsigned long long)r->c.messages, (unsigned long long)r->c.bytes, window_s,
            window_s > 0 ? (double)r->c.messages / window_s : 0.0,
            window_s > 0 ? (double)r->c.bytes / window_s / 1e6 : 0.0);
    if (o->deflate)
        fprintf(f, "deflate: %llu of %llu opens negotiated it; %llu messages compressed, "
                   "%llu payload bytes on the wire for %llu inflated; %llu inflate errors\n",
                (unsigned long long)r->deflate_opened, (unsigned long long)r->opened,
                (unsigned long long)r->c.compressed, (unsigned long long)r->c.wire_payload,
                (unsigned long long)r->c.bytes, (unsigned long long)r->inflate_errors);
    if (o->seq)
        fprintf(f, "sequence: %llu duplicates, %llu out of order (below the last), %llu missed\n",
                (unsigned long long)r->c.seq_dups, (unsigned long long)r->c.seq_back,
                (unsigned long long)r->c.seq_gaps);
    if (o->check_size > 0)
        fprintf(f, "payload check (%u B): %llu checked, %llu bad\n", o->check_size,
                (unsigned long long)r->c.checked, (unsigned long long)r->c.bad_payload);
    if (o->sse)
        fprintf(f, "event stream: %llu other events (not messages)\n",
                (unsigned long long)r->c.sse_other);
    text_latency(f, "latency", &r->lat);
    if (r->steady) {
        double steady_s = secs(r->t_end - r->t_settled);
        uint64_t m = r->c.messages - r->c_at_settled.messages;
        fprintf(f, "steady %.2f s  %.0f msg/s  cpu %s\n", steady_s,
                steady_s > 0 ? (double)m / steady_s : 0.0,
                pct_str(p1, cpu_pct(&r->self_settled, &r->self_end)));
        text_latency(f, "steady latency", &r->lat_steady);
    }
    const lg_sample_t *e = &r->self_end, *s0 = &r->self_start;
    fprintf(f, "loadgen cpu user %.2f s  sys %.2f s  (%s of the run, %s of the window)\n",
            e->user_s - s0->user_s, e->sys_s - s0->sys_s, pct_str(p1, cpu_pct(s0, e)),
            pct_str(p2, cpu_pct(&r->self_first, e)));
    if (o->server_pid > 0)
        fprintf(f, "server pid %ld  cpu %s of the window  rss KiB start %ld settled %ld end %ld "
                   "after close %ld\n",
                (long)o->server_pid, pct_str(p1, cpu_pct(&r->srv_first, &r->srv_end)),
                r->srv_start.rss_kib, r->srv_settled.rss_kib, r->srv_end.rss_kib,
                r->srv_after_close.rss_kib);
}

void lg_report_summary(const lg_run_t *r)
{
    if (r->opts->json)
        summary_json(r);
    else
        summary_text(r);
    fflush(stdout);
}
