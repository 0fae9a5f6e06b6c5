/*
 * bench only (CONTROL=3 in bench/hosting.sh): what zero-copy sending would buy a Node process.
 * nginx sends a file with sendfile(2): the kernel hands page references to the socket. Node can
 * only write() a Buffer, which the kernel copies into the socket buffer (perf, 50 KB page:
 * _copy_from_iter was a quarter of the service's CPU). This addon is not part of the service.
 *
 *   memfdFrom(buffer)                 -> fd of a sealed memfd holding the bytes, or -errno
 *   sendHeadFile(sock, head, fd, len) -> bytes of head + body the kernel took, or -errno
 *     send(head, MSG_MORE) then sendfile(fd) on the non-blocking socket, until done or EAGAIN.
 */
#define _GNU_SOURCE
#include <node_api.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

static napi_value number(napi_env env, double v) {
  napi_value out;
  napi_create_double(env, v, &out);
  return out;
}

static napi_value memfd_from(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  void *data;
  size_t len;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_buffer_info(env, argv[0], &data, &len) != napi_ok) return number(env, -EINVAL);
  int fd = memfd_create("svc-bench-body", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return number(env, -errno);
  for (size_t off = 0; off < len;) {
    ssize_t n = write(fd, (char *)data + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) { int e = n < 0 ? errno : EIO; close(fd); return number(env, -e); }
    off += (size_t)n;
  }
  /* the socket keeps references to these pages until the peer has read them: never rewrite */
  fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  return number(env, fd);
}

static napi_value send_head_file(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  int32_t sock, fd;
  uint32_t len;
  void *head;
  size_t hlen;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 4 || napi_get_value_int32(env, argv[0], &sock) != napi_ok
      || napi_get_buffer_info(env, argv[1], &head, &hlen) != napi_ok
      || napi_get_value_int32(env, argv[2], &fd) != napi_ok
      || napi_get_value_uint32(env, argv[3], &len) != napi_ok) return number(env, -EINVAL);
  size_t sent = 0;
  while (sent < hlen) {
    ssize_t n = send(sock, (char *)head + sent, hlen - sent, MSG_MORE | MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return number(env, (double)sent);
    if (n < 0) return number(env, -errno);
    sent += (size_t)n;
  }
  off_t off = 0;
  while ((size_t)off < len) {
    ssize_t n = sendfile(sock, fd, &off, len - (size_t)off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n < 0) return number(env, -errno);
    if (n == 0) break;
  }
  return number(env, (double)(sent + (size_t)off));
}

static napi_value init(napi_env env, napi_value exports) {
  napi_value f;
  napi_create_function(env, "memfdFrom", NAPI_AUTO_LENGTH, memfd_from, NULL, &f);
  napi_set_named_property(env, exports, "memfdFrom", f);
  napi_create_function(env, "sendHeadFile", NAPI_AUTO_LENGTH, send_head_file, NULL, &f);
  napi_set_named_property(env, exports, "sendHeadFile", f);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
