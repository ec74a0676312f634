/* LD_PRELOAD shim for the benchmark scripts: times every select() call of an unmodified
 * dynamically linked program and appends "select_ns <nanoseconds>" lines to the file named by
 * SELECT_TIMER_OUT. Used to read the 2010 datagram test's select() time to the nanosecond
 * (the program itself prints whole seconds) without tracing, so the rest of the program runs
 * at full speed. Build: cc -O2 -shared -fPIC -o select_timer.so select_timer.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

typedef int (*select_fn)(int, fd_set *, fd_set *, fd_set *, struct timeval *);

int select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
           struct timeval *timeout) {
  static select_fn real_select;
  if (real_select == NULL) real_select = (select_fn)dlsym(RTLD_NEXT, "select");
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  const int ret = real_select(nfds, readfds, writefds, exceptfds, timeout);
  clock_gettime(CLOCK_MONOTONIC, &end);
  const char *path = getenv("SELECT_TIMER_OUT");
  if (path != NULL) {
    const int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
      char line[64];
      const long long ns = (long long)(end.tv_sec - start.tv_sec) * 1000000000LL +
                           (end.tv_nsec - start.tv_nsec);
      const int n = snprintf(line, sizeof(line), "select_ns %lld\n", ns);
      if (n > 0) (void)!write(fd, line, (size_t)n);
      close(fd);
    }
  }
  return ret;
}
