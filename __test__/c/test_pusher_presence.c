/* sy_pusher_presence's list (a connection's presence channels and the user
 * id of each) and proto/sy_pusher's publish meta of a client event on a
 * presence channel ("<event>\0<user id>"): set, replaced, found, dropped,
 * freed (LeakSanitizer: make test); the meta joined at its bounds and
 * split back, with and without a user id. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "io/app/sy_pusher_presence.h"
#include "proto/sy_pusher.h"

#define S(lit) lit, sizeof(lit) - 1

static void test_list(void) {
    sy_pusher_pres_t *l = NULL;
    size_t n = 0;
    CHECK(sy_pusher_pres_user(l, S("presence-a"), &n) == NULL);
    CHECK(!sy_pusher_pres_drop(&l, S("presence-a")));
    CHECK(sy_pusher_pres_set(&l, S("presence-a"), S("alice")));
    CHECK(sy_pusher_pres_set(&l, S("presence-b"), S("1234")));
    const char *id = sy_pusher_pres_user(l, S("presence-a"), &n);
    CHECK_MEMSTR(id, n, "alice");
    id = sy_pusher_pres_user(l, S("presence-b"), &n);
    CHECK_MEMSTR(id, n, "1234");
    /* A prefix of a name is another name. */
    CHECK(sy_pusher_pres_user(l, S("presence-"), &n) == NULL);
    /* Subscribing again as another user replaces the one recorded. */
    CHECK(sy_pusher_pres_set(&l, S("presence-a"), S("bob")));
    id = sy_pusher_pres_user(l, S("presence-a"), &n);
    CHECK_MEMSTR(id, n, "bob");
    CHECK(sy_pusher_pres_drop(&l, S("presence-a")));
    CHECK(!sy_pusher_pres_drop(&l, S("presence-a")));
    CHECK(sy_pusher_pres_user(l, S("presence-a"), &n) == NULL);
    id = sy_pusher_pres_user(l, S("presence-b"), &n);
    CHECK_MEMSTR(id, n, "1234");
    /* An empty user id is kept as such (the parser never gives one). */
    CHECK(sy_pusher_pres_set(&l, S("presence-c"), "", 0));
    CHECK(sy_pusher_pres_user(l, S("presence-c"), &n) != NULL && n == 0);
    sy_pusher_pres_free(&l);
    CHECK(l == NULL);
    sy_pusher_pres_free(&l); /* twice: nothing */
}

static void test_meta(void) {
    char buf[16];
    size_t ev_len = 99, id_len = 99;
    const char *id = NULL;
    size_t n = sy_pusher_meta_join(buf, sizeof(buf), S("client-x"), S("alice"));
    CHECK_EQU(n, 14);
    CHECK(memcmp(buf, "client-x\0alice", 14) == 0);
    sy_pusher_meta_split(buf, n, &ev_len, &id, &id_len);
    CHECK_MEMSTR(buf, ev_len, "client-x");
    CHECK_MEMSTR(id, id_len, "alice");
    /* Exactly cap bytes fits; one more does not. */
    CHECK_EQU(sy_pusher_meta_join(buf, sizeof(buf), S("client-x"), S("alice12")), 16);
    CHECK_EQU(sy_pusher_meta_join(buf, sizeof(buf), S("client-x"), S("alice123")), 0);
    CHECK_EQU(sy_pusher_meta_join(buf, 8, S("client-x"), "", 0), 0);
    CHECK_EQU(sy_pusher_meta_join(buf, 9, S("client-x"), "", 0), 9);
    /* A meta without a NUL is an event name alone (server.publish, the HTTP API). */
    sy_pusher_meta_split("my-event", 8, &ev_len, &id, &id_len);
    CHECK_EQU(ev_len, 8);
    CHECK(id == NULL && id_len == 0);
    sy_pusher_meta_split("", 0, &ev_len, &id, &id_len);
    CHECK(ev_len == 0 && id == NULL);
    /* An empty user id after the NUL. */
    sy_pusher_meta_split("e\0", 2, &ev_len, &id, &id_len);
    CHECK(ev_len == 1 && id != NULL && id_len == 0);
}

int main(void) {
    test_list();
    test_meta();
    return check_report("test_pusher_presence");
}
