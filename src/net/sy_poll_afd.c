/* sy_poll on Windows: readiness from AFD, the kernel driver under Winsock,
 * through one completion port; see sy_poll.h. Built on Windows only
 * (scripts/windows-gate.js, binding.gyp's OS=="win"); docs/builds.md says
 * why this and not WSAPoll, with the figures.
 *
 * The way wepoll and libuv's uv_poll_t take (read, not copied): the poller
 * opens a handle of its own on \Device\Afd and ties it to a completion
 * port. Each registered socket with interest has one poll request
 * (IOCTL_AFD_POLL, for its base socket) pending on that handle; it
 * completes into the port when the socket becomes ready, so a wait costs
 * O(ready sockets), not O(registered). A request answers once: a socket
 * reported by a wait gets a new request at the start of the next one (after
 * the loop has read or written it), which completes at once while the
 * socket is still ready: level-triggered, as the contract asks. An interest
 * change cancels the pending request (its completion comes back
 * cancelled) and asks anew. An entry deleted while its request is pending
 * is kept until that request's completion has come back (the kernel writes
 * into it until then), then freed.
 *
 * Entries are found by fd through an open-addressing index (linear
 * probing, deletion by backward shift: no tombstones). */
#include "net/sy_poll.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_clock.h"
#include "net/sy_sock.h"

#include <winternl.h>

#define SY_AFD_IOCTL_POLL 0x00012024u
#define SY_AFD_RECEIVE 0x0001u
#define SY_AFD_SEND 0x0004u
#define SY_AFD_DISCONNECT 0x0008u
#define SY_AFD_ABORT 0x0010u
#define SY_AFD_LOCAL_CLOSE 0x0020u
#define SY_AFD_ACCEPT 0x0080u
#define SY_AFD_CONNECT_FAIL 0x0100u
/* What each interest asks AFD for: readable also on a hang-up or an error
 * (a read tells which), writable also on an error. */
#define SY_AFD_FOR_IN \
    (SY_AFD_RECEIVE | SY_AFD_ACCEPT | SY_AFD_DISCONNECT | SY_AFD_ABORT | SY_AFD_LOCAL_CLOSE | SY_AFD_CONNECT_FAIL)
#define SY_AFD_FOR_OUT (SY_AFD_SEND | SY_AFD_ABORT | SY_AFD_CONNECT_FAIL)

#define SY_NT_PENDING ((NTSTATUS)0x00000103L)
#define SY_NT_CANCELLED ((NTSTATUS)0xC0000120L)
#define SY_NT_NOT_FOUND ((NTSTATUS)0xC0000225L)
#define SY_SIO_BASE_HANDLE _WSAIOR(IOC_WS2, 34)

/* AFD's poll request, one socket per request. */
typedef struct afd_poll_handle {
    HANDLE handle;
    ULONG events;
    NTSTATUS status;
} afd_poll_handle_t;

typedef struct afd_poll_info {
    LARGE_INTEGER timeout;
    ULONG handles;
    ULONG exclusive;
    afd_poll_handle_t handle[1];
} afd_poll_info_t;

typedef NTSTATUS(NTAPI *nt_create_file_fn)(PHANDLE, ACCESS_MASK, POBJECT_ATTRIBUTES, PIO_STATUS_BLOCK, PLARGE_INTEGER,
                                           ULONG, ULONG, ULONG, ULONG, PVOID, ULONG);
typedef NTSTATUS(NTAPI *nt_device_io_control_fn)(HANDLE, HANDLE, PIO_APC_ROUTINE, PVOID, PIO_STATUS_BLOCK, ULONG, PVOID,
                                                 ULONG, PVOID, ULONG);
typedef NTSTATUS(NTAPI *nt_cancel_fn)(HANDLE, PIO_STATUS_BLOCK, PIO_STATUS_BLOCK);

typedef struct entry entry_t;
struct entry {
    IO_STATUS_BLOCK iosb; /* first: a completion's lpOverlapped is the entry */
    afd_poll_info_t info; /* the request, and AFD's answer in place */
    int fd;
    HANDLE base;          /* the base socket AFD is asked about */
    uint32_t events;      /* the interest, SY_POLL_* */
    uint32_t asked;       /* the interest of the pending request */
    uint64_t tag;         /* handed back with its events */
    bool pending;         /* a request is out: the kernel owns iosb and info */
    bool queued;          /* on the update queue */
    bool deleted;         /* out of the index; freed once neither pending nor queued */
    entry_t *next_update; /* the update queue */
};

struct sy_poll {
    HANDLE port; /* the completion port */
    HANDLE afd;  /* \Device\Afd\Symphony, tied to port */
    nt_device_io_control_fn ioctl;
    nt_cancel_fn cancel;
    entry_t *update;     /* entries whose request is to be (re)made */
    uint32_t pending;    /* requests out */
    OVERLAPPED_ENTRY *c; /* a wait's completions */
    int ccap;
    entry_t **index; /* fd -> entry; NULL: empty */
    uint32_t icap;   /* slots (a power of two, at least twice the live entries) */
    uint32_t live;   /* entries in the index */
};

static uint32_t slot_of(const sy_poll_t *p, int fd) { return ((uint32_t)fd * 2654435761u) & (p->icap - 1); }

/* The index slot of fd, or of the empty slot where it would go. */
static uint32_t find(const sy_poll_t *p, int fd) {
    uint32_t i = slot_of(p, fd);
    while (p->index[i] != NULL && p->index[i]->fd != fd)
        i = (i + 1) & (p->icap - 1);
    return i;
}

static void index_remove(sy_poll_t *p, uint32_t i) {
    /* Backward shift: later members of the run move up into the hole when
     * their home slot is not between the hole and them. */
    uint32_t mask = p->icap - 1, j = i;
    p->index[i] = NULL;
    for (;;) {
        j = (j + 1) & mask;
        if (p->index[j] == NULL)
            return;
        uint32_t home = slot_of(p, p->index[j]->fd);
        bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (stays)
            continue;
        p->index[i] = p->index[j];
        p->index[j] = NULL;
        i = j;
    }
}

/* Room in the index for one more entry: 0 or ENOMEM. */
static sy_err_t index_grow(sy_poll_t *p) {
    if (2 * (p->live + 1) <= p->icap)
        return 0;
    uint32_t icap = p->icap ? p->icap * 2 : 128;
    entry_t **index = sy_calloc(icap, sizeof(*index));
    if (index == NULL)
        return ENOMEM;
    entry_t **old = p->index;
    uint32_t ocap = p->icap;
    p->index = index;
    p->icap = icap;
    for (uint32_t k = 0; k < ocap; k++)
        if (old[k] != NULL)
            p->index[find(p, old[k]->fd)] = old[k];
    sy_free(old);
    return 0;
}

static void enqueue(sy_poll_t *p, entry_t *e) {
    if (e->queued)
        return;
    e->queued = true;
    e->next_update = p->update;
    p->update = e;
}

static void cancel(sy_poll_t *p, entry_t *e) {
    IO_STATUS_BLOCK cancel_iosb;
    /* Not found: it has completed meanwhile (its completion is in the port). */
    (void)p->cancel(p->afd, &e->iosb, &cancel_iosb);
}

/* An entry out of the index: freed now, or, while its request is out or it
 * is on the update queue, when the last of those lets go of it. */
static void retire(sy_poll_t *p, entry_t *e) {
    e->deleted = true;
    if (e->pending)
        cancel(p, e);
    else if (!e->queued)
        sy_free(e);
}

/* e's request came back: false when e was deleted (then freed, unless it
 * is still on the update queue, which frees it). */
static bool came_back(sy_poll_t *p, entry_t *e) {
    e->pending = false;
    p->pending--;
    if (!e->deleted)
        return true;
    if (!e->queued)
        sy_free(e);
    return false;
}

/* What AFD said, as SY_POLL_* for the interest the request asked. */
static uint32_t events_of(uint32_t afd, uint32_t asked) {
    uint32_t ev = 0;
    if ((asked & SY_POLL_IN) && (afd & SY_AFD_FOR_IN))
        ev |= SY_POLL_IN;
    if ((asked & SY_POLL_OUT) && (afd & SY_AFD_FOR_OUT))
        ev |= SY_POLL_OUT;
    return ev;
}

/* Makes e's request for its interest. A request that fails at once (the
 * socket is no longer one) is reported as readable (or writable) into out,
 * so the loop reads and learns why. */
static void submit(sy_poll_t *p, entry_t *e, sy_poll_event_t *out, int max, int *n) {
    uint32_t mask = ((e->events & SY_POLL_IN) ? SY_AFD_FOR_IN : 0) | ((e->events & SY_POLL_OUT) ? SY_AFD_FOR_OUT : 0);
    memset(&e->info, 0, sizeof(e->info));
    e->info.timeout.QuadPart = INT64_MAX;
    e->info.handles = 1;
    e->info.exclusive = FALSE;
    e->info.handle[0].handle = e->base;
    e->info.handle[0].events = mask;
    e->iosb.Status = SY_NT_PENDING;
    e->iosb.Information = 0;
    NTSTATUS st = p->ioctl(p->afd, NULL, NULL, &e->iosb, &e->iosb, SY_AFD_IOCTL_POLL, &e->info, sizeof(e->info),
                           &e->info, sizeof(e->info));
    if (st == SY_NT_PENDING || st >= 0) {
        /* Pending, or done already: either way its completion comes
         * through the port. */
        e->pending = true;
        e->asked = e->events;
        p->pending++;
        return;
    }
    if (*n < max) {
        out[*n].tag = e->tag;
        out[(*n)++].events = (e->events & SY_POLL_IN) ? SY_POLL_IN : SY_POLL_OUT;
    } else {
        enqueue(p, e); /* next wait */
    }
}

/* The update queue: each entry gets the request its interest asks for. An
 * entry that could not be reported (out full) goes back on the queue. */
static void update(sy_poll_t *p, sy_poll_event_t *out, int max, int *n) {
    entry_t *e = p->update;
    p->update = NULL;
    while (e != NULL) {
        entry_t *next = e->next_update;
        e->queued = false;
        if (e->deleted) {
            if (!e->pending)
                sy_free(e);
        } else if (e->pending) {
            /* A change while a request is out: cancelled, made anew when
             * the cancellation comes back. */
            if (e->asked != e->events)
                cancel(p, e);
        } else if (e->events != 0) {
            submit(p, e, out, max, n);
        }
        e = next;
    }
}

sy_poll_t *sy_poll_create(void) {
    sy_poll_t *p = sy_calloc(1, sizeof(*p));
    if (p == NULL || index_grow(p) != 0) {
        sy_free(p);
        errno = ENOMEM;
        return NULL;
    }
    HMODULE nt = GetModuleHandleW(L"ntdll.dll");
    /* Through void (*)(void): the one cast of a FARPROC that compilers
     * take without a warning. */
    nt_create_file_fn create = nt ? (nt_create_file_fn)(void (*)(void))GetProcAddress(nt, "NtCreateFile") : NULL;
    p->ioctl = nt ? (nt_device_io_control_fn)(void (*)(void))GetProcAddress(nt, "NtDeviceIoControlFile") : NULL;
    p->cancel = nt ? (nt_cancel_fn)(void (*)(void))GetProcAddress(nt, "NtCancelIoFileEx") : NULL;
    p->port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 1);
    if (create == NULL || p->ioctl == NULL || p->cancel == NULL || p->port == NULL) {
        sy_poll_destroy(p);
        errno = ENOSYS;
        return NULL;
    }
    static const WCHAR path[] = L"\\Device\\Afd\\Symphony";
    UNICODE_STRING name = {
        .Length = sizeof(path) - sizeof(WCHAR), .MaximumLength = sizeof(path), .Buffer = (PWSTR)path};
    OBJECT_ATTRIBUTES attr;
    InitializeObjectAttributes(&attr, &name, 0, NULL, NULL);
    IO_STATUS_BLOCK iosb;
    HANDLE afd = NULL;
    NTSTATUS st =
        create(&afd, SYNCHRONIZE, &attr, &iosb, NULL, 0, FILE_SHARE_READ | FILE_SHARE_WRITE, FILE_OPEN, 0, NULL, 0);
    if (st < 0 || afd == NULL) {
        sy_poll_destroy(p);
        errno = ENOSYS;
        return NULL;
    }
    p->afd = afd;
    if (CreateIoCompletionPort(afd, p->port, 0, 0) == NULL ||
        !SetFileCompletionNotificationModes(afd, FILE_SKIP_SET_EVENT_ON_HANDLE)) {
        sy_poll_destroy(p);
        errno = ENOMEM;
        return NULL;
    }
    return p;
}

void sy_poll_destroy(sy_poll_t *p) {
    if (p == NULL)
        return;
    /* Every entry retired as sy_poll_del retires one, and the requests
     * still out waited for: the kernel writes into their entries until
     * they come back. One that has not come back in 5 s is left, never
     * freed under the kernel. */
    for (uint32_t i = 0; i < p->icap; i++)
        if (p->index[i] != NULL)
            retire(p, p->index[i]);
    OVERLAPPED_ENTRY c[64];
    int64_t end = sy_clock_ms() + 5000;
    while (p->pending > 0 && sy_clock_ms() < end) {
        ULONG got = 0;
        if (!GetQueuedCompletionStatusEx(p->port, c, 64, &got, 100, FALSE))
            continue;
        for (ULONG i = 0; i < got; i++)
            if (c[i].lpOverlapped != NULL)
                (void)came_back(p, (entry_t *)(void *)c[i].lpOverlapped);
    }
    /* Left on the update queue: every one deleted now. */
    for (entry_t *e = p->update, *next; e != NULL; e = next) {
        next = e->next_update;
        if (!e->pending)
            sy_free(e);
    }
    if (p->afd != NULL)
        CloseHandle(p->afd);
    if (p->port != NULL)
        CloseHandle(p->port);
    sy_free(p->c);
    sy_free(p->index);
    sy_free(p);
}

sy_err_t sy_poll_add(sy_poll_t *p, int fd, uint32_t events, uint64_t tag) {
    int type = 0, len = sizeof(type);
    if (fd < 0 || getsockopt((SOCKET)fd, SOL_SOCKET, SO_TYPE, (char *)&type, &len) != 0)
        return EBADF;
    if (p->index[find(p, fd)] != NULL)
        return EEXIST;
    if (index_grow(p) != 0)
        return ENOMEM;
    entry_t *e = sy_calloc(1, sizeof(*e));
    if (e == NULL)
        return ENOMEM;
    /* AFD is asked about the base socket: a layered provider's socket is
     * not one it knows. */
    SOCKET base = (SOCKET)fd;
    DWORD bytes = 0;
    if (WSAIoctl((SOCKET)fd, SY_SIO_BASE_HANDLE, NULL, 0, &base, sizeof(base), &bytes, NULL, NULL) != 0)
        base = (SOCKET)fd;
    e->fd = fd;
    e->base = (HANDLE)base;
    e->events = events;
    e->tag = tag;
    p->index[find(p, fd)] = e;
    p->live++;
    if (events != 0)
        enqueue(p, e);
    return 0;
}

sy_err_t sy_poll_mod(sy_poll_t *p, int fd, uint32_t events, uint64_t tag) {
    entry_t *e = fd < 0 ? NULL : p->index[find(p, fd)];
    if (e == NULL)
        return ENOENT;
    e->tag = tag;
    if (e->events != events) {
        e->events = events;
        enqueue(p, e);
    }
    return 0;
}

sy_err_t sy_poll_del(sy_poll_t *p, int fd) {
    uint32_t i = fd < 0 ? 0 : find(p, fd);
    entry_t *e = fd < 0 ? NULL : p->index[i];
    if (e == NULL)
        return ENOENT;
    index_remove(p, i);
    p->live--;
    retire(p, e);
    return 0;
}

sy_err_t sy_poll_wait(sy_poll_t *p, sy_poll_event_t *out, int max, int timeout_ms, int *count) {
    *count = 0;
    if (max <= 0)
        return 0;
    if (max > p->ccap) {
        OVERLAPPED_ENTRY *c = sy_realloc(p->c, (size_t)max * sizeof(*c));
        if (c == NULL)
            return ENOMEM;
        p->c = c;
        p->ccap = max;
    }
    int64_t end = timeout_ms < 0 ? 0 : sy_clock_ms() + timeout_ms;
    int n = 0;
    for (;;) {
        update(p, out, max, &n);
        if (n > 0)
            break;
        DWORD wait = INFINITE;
        if (timeout_ms >= 0) {
            int64_t left = end - sy_clock_ms();
            wait = left > 0 ? (DWORD)left : 0;
        }
        ULONG got = 0;
        if (!GetQueuedCompletionStatusEx(p->port, p->c, (ULONG)(max - n), &got, wait, FALSE)) {
            DWORD err = GetLastError();
            if (err == WAIT_TIMEOUT)
                break;
            return err == ERROR_ABANDONED_WAIT_0 ? EBADF : EIO;
        }
        for (ULONG k = 0; k < got; k++) {
            entry_t *e = (entry_t *)(void *)p->c[k].lpOverlapped;
            if (e == NULL || !came_back(p, e))
                continue;
            NTSTATUS st = e->iosb.Status;
            uint32_t ev = 0;
            if (st == SY_NT_CANCELLED)
                ev = 0; /* an interest change: asked anew below */
            else if (st < 0)
                ev = (e->asked & SY_POLL_IN) ? SY_POLL_IN : SY_POLL_OUT; /* a read or write tells why */
            else if (e->info.handles > 0)
                ev = events_of(e->info.handle[0].events, e->asked);
            ev &= e->events; /* the interest now, not when asked */
            if (ev != 0) {
                out[n].tag = e->tag;
                out[n++].events = ev;
            }
            /* Asked again at the next wait's start: still ready then, it
             * completes at once (level-triggered). */
            enqueue(p, e);
        }
        if (n > 0 || (timeout_ms >= 0 && sy_clock_ms() >= end))
            break;
    }
    *count = n;
    return 0;
}
