/* sy_pusher_event — see sy_pusher_event.h. */
#include "io/app/sy_pusher_event.h"

#include <errno.h>

#include "base/sy_json.h"
#include "io/loop/sy_io_thread.h"
#include "io/model/sy_events.h"

sy_err_t sy_pusher_event_post(sy_io_t *io, uint32_t app_index, uint32_t hooks, const sy_pusher_event_t *ev) {
    if ((unsigned)ev->type >= SY_PUSHER_HOOKS || (hooks & (1u << ev->type)) == 0 || app_index > UINT16_MAX)
        return 0;
    size_t len = 0;
    char *text = sy_pusher_hook_json(ev, &len);
    if (text == NULL)
        return ENOMEM;
    sy_io_emit(io, 0, SY_EV_PUSHER_HOOK, 0, (uint16_t)app_index, text, len);
    sy_json_free(text);
    return 0;
}
