/*
 * sy_inet — the system's address headers, the one #if for them: struct
 * sockaddr_in and _in6, sockaddr_storage, socklen_t, inet_pton and
 * inet_ntop, htons and ntohl, struct timeval (POSIX: <arpa/inet.h>,
 * <netinet/in.h>, <sys/socket.h>, <sys/time.h>; Windows: Winsock's
 * <winsock2.h> and <ws2tcpip.h>). For the parsers of addresses
 * (proto/sy_cidr, proto/sy_proxy), which work on bytes and open no socket,
 * and for hiredis' timeouts (bus/sy_bus_link); net/sy_sock.h includes it
 * with the rest of the socket API.
 *
 * Threads: no functions of ours, only the system's declarations.
 *
 * Ownership: nothing is kept.
 *
 * Errors: none of ours; the system functions report as the system says
 * (inet_pton: 1, 0 or -1).
 */
#ifndef SY_INET_H
#define SY_INET_H

#if defined(_WIN32)
#include <winsock2.h>
#include <ws2tcpip.h>
#else
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#endif

#endif
