/* sy_errors — see sy_errors.h. */
#include "base/sy_errors.h"

#include <string.h>

const char *sy_strerror(sy_err_t e) {
#if defined(_WIN32)
    /* Windows' C runtime names only the C standard's and the oldest POSIX
     * values ("Unknown error" for the rest): the ones of sockets here. */
    switch (e) {
    case EADDRINUSE:
        return "Address already in use";
    case EADDRNOTAVAIL:
        return "Cannot assign requested address";
    case EAFNOSUPPORT:
        return "Address family not supported by protocol";
    case ECONNABORTED:
        return "Software caused connection abort";
    case ECONNREFUSED:
        return "Connection refused";
    case ECONNRESET:
        return "Connection reset by peer";
    case ENOBUFS:
        return "No buffer space available";
    case ENOTCONN:
        return "Transport endpoint is not connected";
    case ENOTSOCK:
        return "Socket operation on non-socket";
    case ETIMEDOUT:
        return "Connection timed out";
    case EWOULDBLOCK:
        return "Resource temporarily unavailable";
    case ECANCELED:
        return "Operation canceled";
    case EALREADY:
        return "Operation already in progress";
    case EMSGSIZE:
        return "Message too long";
    default:
        break;
    }
#endif
    return strerror(e);
}
