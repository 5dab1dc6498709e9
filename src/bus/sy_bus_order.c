/* sy_bus_order — see sy_bus_order.h. */
#include "bus/sy_bus_order.h"

bool sy_bus_order_check(sy_bus_order_t *o, uint64_t from, uint64_t seq) {
    unsigned oldest = 0;
    o->uses++;
    for (unsigned i = 0; i < SY_BUS_ORDER_PUBLISHERS; i++) {
        if (o->last[i].used != 0 && o->last[i].node == from) {
            if (seq <= o->last[i].seq)
                return false;
            o->last[i].seq = seq;
            o->last[i].used = o->uses;
            return true;
        }
        if (o->last[i].used < o->last[oldest].used)
            oldest = i;
    }
    o->last[oldest].node = from;
    o->last[oldest].seq = seq;
    o->last[oldest].used = o->uses;
    return true;
}
