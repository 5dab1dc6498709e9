#include "bus/sy_slot.h"

#include <string.h>

uint16_t sy_slot_crc16(const void *p, size_t n) {
    const uint8_t *b = p;
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= (uint16_t)((unsigned)b[i] << 8);
        for (int k = 0; k < 8; k++)
            crc = (crc & 0x8000u) ? (uint16_t)((crc << 1) ^ 0x1021u) : (uint16_t)(crc << 1);
    }
    return crc;
}

unsigned sy_slot_of(const char *key, size_t len) {
    const char *open = memchr(key, '{', len);
    if (open != NULL) {
        size_t start = (size_t)(open - key) + 1;
        const char *close = memchr(key + start, '}', len - start);
        /* "{}" (an empty tag) does not count: the whole key is hashed. */
        if (close != NULL && close > key + start)
            return sy_slot_crc16(key + start, (size_t)(close - (key + start))) & (SY_SLOTS - 1);
    }
    return sy_slot_crc16(key, len) & (SY_SLOTS - 1);
}
