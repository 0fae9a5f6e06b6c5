/*
 * Zero-copy sending for the public host's bodies, from their blob files (src/http/sendfile.ts
 * explains when it is used). Node can only write() a Buffer, which the kernel copies into the
 * socket buffer; nginx sends files with sendfile(2), which hands the socket references to the
 * pages instead. On a 50 KB page that copy was a quarter of the service's CPU (perf: docs/benchmarks/2026-11-24-public-host-machines-e-f.md).
 *
 * Exports one function:
 *
 *   sendHeadFile(sock, block, tail, fd, len) -> bytes of block + tail + body the kernel took:
 *       sendmsg(block, tail, MSG_MORE) then sendfile of `len` bytes of `fd` (an open blob
 *       file, from its start) on the non-blocking socket, until everything went, the socket
 *       is full (EAGAIN) or the kernel refused (the caller writes the rest through Node, which
 *       meets the same error and handles it as for any write); -errno only when the peer is
 *       gone (EPIPE, ECONNRESET): the caller closes the socket.
 *
 * Linux only (sendfile to a socket). Elsewhere the module exports nothing and the service
 * copies as before.
 */
#define _GNU_SOURCE
#include <node_api.h>

#ifdef __linux__
#include <errno.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>

static napi_value number(napi_env env, double v) {
  napi_value out;
  napi_create_double(env, v, &out);
  return out;
}

static int peer_gone(int e) {
  return e == EPIPE || e == ECONNRESET;
}

static napi_value send_head_file(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  int32_t sock, fd;
  uint32_t len;
  void *block, *tail;
  size_t blen, tlen;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 5
      || napi_get_value_int32(env, argv[0], &sock) != napi_ok
      || napi_get_buffer_info(env, argv[1], &block, &blen) != napi_ok
      || napi_get_buffer_info(env, argv[2], &tail, &tlen) != napi_ok
      || napi_get_value_int32(env, argv[3], &fd) != napi_ok
      || napi_get_value_uint32(env, argv[4], &len) != napi_ok) return number(env, 0);
  size_t hlen = blen + tlen, sent = 0;
  while (sent < hlen) {
    struct iovec iov[2];
    int n_iov = 0;
    if (sent < blen) {
      iov[n_iov].iov_base = (char *)block + sent;
      iov[n_iov++].iov_len = blen - sent;
      iov[n_iov].iov_base = tail;
      iov[n_iov++].iov_len = tlen;
    } else {
      iov[n_iov].iov_base = (char *)tail + (sent - blen);
      iov[n_iov++].iov_len = hlen - sent;
    }
    struct msghdr msg = { .msg_iov = iov, .msg_iovlen = n_iov };
    ssize_t n = sendmsg(sock, &msg, (len > 0 ? MSG_MORE : 0) | MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && peer_gone(errno)) return number(env, -errno);
    if (n < 0) return number(env, (double)sent); /* EAGAIN or another refusal: Node writes the rest */
    sent += (size_t)n;
  }
  off_t off = 0;
  while ((size_t)off < len) {
    ssize_t n = sendfile(sock, fd, &off, len - (size_t)off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && peer_gone(errno)) return number(env, -errno);
    if (n <= 0) break; /* EAGAIN or another refusal: Node writes the rest */
  }
  return number(env, (double)(sent + (size_t)off));
}
#endif

static napi_value init(napi_env env, napi_value exports) {
#ifdef __linux__
  napi_value f;
  napi_create_function(env, "sendHeadFile", NAPI_AUTO_LENGTH, send_head_file, NULL, &f);
  napi_set_named_property(env, exports, "sendHeadFile", f);
#endif
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
