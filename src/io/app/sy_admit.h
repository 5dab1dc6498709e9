/*
 * sy_admit — whether a new connection may stay, by its peer's address
 * (maxConnectionsPerAddress, upgradeRatePerAddress: io/sy_addrlimit.h),
 * asked once, at the moment the address is final (today: when its IO
 * thread adopts the socket, sy_io_adopt), before a byte of its request is
 * parsed and before onUpgrade could run.
 *
 * A refused connection is answered and closed at once, in the same call:
 * over the address's connections, `503 Service Unavailable` ("too many
 * connections from this address"); over its rate, `429 Too Many Requests`
 * with `Retry-After: <seconds>`. The answer is one send() on the fresh
 * socket (a few hundred bytes: its buffer is empty), what the client
 * already sent is read and dropped so that the close is a FIN rather than a
 * reset, and the socket is closed: the server holds nothing for a refused
 * address, and no JS runs. Over TLS nothing is answered: the handshake that
 * an answer would need is the cost being refused; the socket is closed.
 * Counted in addressRejects and upgradeRateRejects.
 *
 * Threads: the IO thread that owns the connection.
 *
 * Ownership: sy_admit destroys a refused connection (sy_conn_destroy: it is
 * on the dead list, freed at the end of the turn); an admitted one holds
 * its address's count (c->addr_held) until sy_admit_release, which
 * sy_conn_destroy calls.
 *
 * Errors: none to the caller: true (admitted) or false (refused, answered
 * and closed). An address the table cannot enter for lack of memory is
 * refused with 503 and counted in oomCloses; a peer that is not IPv4/IPv6
 * (or whose address cannot be read) is admitted without a count.
 */
#ifndef SY_ADMIT_H
#define SY_ADMIT_H

#include <stdbool.h>

#include "io/conn/sy_conn.h"
#include "net/sy_sock.h"

/* The admission of c, whose peer is peer[0..len) (NULL: read it with
 * getpeername). True: admitted (and counted); false: refused, answered,
 * closed. Always true when the server has no per-address limit. */
bool sy_admit(sy_io_t *io, sy_conn_t *c, const struct sockaddr *peer, socklen_t len);
/* Gives back c's count to its address (no-op unless c->addr_held). */
void sy_admit_release(sy_io_t *io, sy_conn_t *c);

#endif
