/*
 * sy_slot — Redis Cluster's key slots: CRC16 (XMODEM) of the key, or of its
 * hash tag (the bytes between the first '{' and the next '}', when there
 * are any), modulo 16384. The bus (sy_bus.h) picks a channel's shard with it.
 *
 * Threads: pure functions, any thread.
 *
 * Ownership: nothing is kept; nothing allocates.
 *
 * Errors: none: nothing here can fail.
 */
#ifndef SY_SLOT_H
#define SY_SLOT_H

#include <stddef.h>
#include <stdint.h>

#define SY_SLOTS 16384u

/* CRC16-XMODEM (polynomial 0x1021, initial 0) of p[0..n). */
uint16_t sy_slot_crc16(const void *p, size_t n);
/* The cluster slot of a key (a channel name), hash tags honoured. */
unsigned sy_slot_of(const char *key, size_t len);

#endif
