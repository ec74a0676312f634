/* The floor of a synchronous SOCK_SEQPACKET round trip on one CPU, without the reactor: what
 * `hotring bench uds --sync` is compared with when the seed's figures need explaining.
 *
 *   uds_floor blocking SIZE LOOPS      caller write()+read(), echo read()+write(): blocking
 *                                      calls, four system calls per round trip
 *   uds_floor uring SIZE LOOPS [regring] [fixed] [pollfirst]
 *                                      both sides on raw liburing: one io_uring_enter per side
 *                                      and round trip (a send linked to the next receive, the
 *                                      send's CQE skipped), SINGLE_ISSUER | DEFER_TASKRUN;
 *                                      regring: IORING_REGISTER_RING_FDS; fixed: the socket as
 *                                      a registered file; pollfirst: the echo side's receive
 *                                      too with IORING_RECVSEND_POLL_FIRST (the caller's always)
 *
 * A socketpair, the echo side forked; both pin themselves to CPU 0. Prints the caller's wall
 * time per call and the CPU time (user + system) of caller and echo per call; CPU time is the
 * figure that holds on a shared machine.
 *
 * Built by compare_seeds.sh with `cc -O2 ... -luring` (Debian's liburing-dev). */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what, int err) {
  fprintf(stderr, "uds_floor: %s: %s\n", what, strerror(err));
  exit(1);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double rusage_s(int who) {
  struct rusage r;
  getrusage(who, &r);
  return r.ru_utime.tv_sec + r.ru_stime.tv_sec + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6;
}

static void pin_cpu0(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) die("sched_setaffinity", errno);
}

static void blocking_caller(int fd, char *buf, long size, long loops) {
  for (long i = 0; i < loops; i++) {
    if (write(fd, buf, size) != size) die("write", errno);
    if (read(fd, buf, size) != size) die("read", errno);
  }
}

static void blocking_echo(int fd, char *buf, long size) {
  for (;;) {
    ssize_t n = read(fd, buf, size);
    if (n <= 0) return;
    if (write(fd, buf, n) != n) return;
  }
}

struct uring_opts {
  int regring, fixed, pollfirst_echo;
};

static void uring_setup(struct io_uring *ring, int fd, const struct uring_opts *o, int *target,
                        unsigned *sqe_flags) {
  struct io_uring_params p;
  memset(&p, 0, sizeof(p));
  p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  int ret = io_uring_queue_init_params(64, ring, &p);
  if (ret < 0) die("io_uring_queue_init_params", -ret);
  if (o->regring) {
    ret = io_uring_register_ring_fd(ring);
    if (ret != 1) die("io_uring_register_ring_fd", ret < 0 ? -ret : EINVAL);
  }
  *target = fd;
  *sqe_flags = 0;
  if (o->fixed) {
    ret = io_uring_register_files(ring, &fd, 1);
    if (ret < 0) die("io_uring_register_files", -ret);
    *target = 0;
    *sqe_flags = IOSQE_FIXED_FILE;
  }
}

/* One round: optionally a send linked to a receive; waits for the one CQE. Returns its result. */
static int uring_round(struct io_uring *ring, int target, unsigned sqe_flags, char *out,
                       long out_len, char *in, long in_len, int poll_first) {
  struct io_uring_sqe *sqe;
  if (out_len > 0) {
    sqe = io_uring_get_sqe(ring);
    io_uring_prep_send(sqe, target, out, out_len, 0);
    sqe->flags |= sqe_flags | IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
    sqe->user_data = 1;
  }
  sqe = io_uring_get_sqe(ring);
  io_uring_prep_recv(sqe, target, in, in_len, 0);
  sqe->flags |= sqe_flags;
  if (poll_first) sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
  sqe->user_data = 2;
  int ret = io_uring_submit_and_wait(ring, 1);
  if (ret < 0) die("io_uring_submit_and_wait", -ret);
  struct io_uring_cqe *cqe;
  ret = io_uring_peek_cqe(ring, &cqe);
  if (ret < 0) die("io_uring_peek_cqe", -ret);
  int res = cqe->res;
  io_uring_cqe_seen(ring, cqe);
  return res;
}

static void uring_caller(int fd, char *out, char *in, long size, long loops,
                         const struct uring_opts *o) {
  struct io_uring ring;
  int target;
  unsigned flags;
  uring_setup(&ring, fd, o, &target, &flags);
  for (long i = 0; i < loops; i++) {
    int res = uring_round(&ring, target, flags, out, size, in, size, 1);
    if (res != size) die("caller round", res < 0 ? -res : EIO);
  }
  io_uring_queue_exit(&ring);
}

static void uring_echo(int fd, char *a, char *b, long size, const struct uring_opts *o) {
  struct io_uring ring;
  int target;
  unsigned flags;
  uring_setup(&ring, fd, o, &target, &flags);
  int res = uring_round(&ring, target, flags, NULL, 0, a, size, o->pollfirst_echo);
  while (res > 0) {
    char *t = a;
    a = b;
    b = t;
    /* b holds the message just received: send it back, receive the next one into a. */
    res = uring_round(&ring, target, flags, b, res, a, size, o->pollfirst_echo);
  }
  io_uring_queue_exit(&ring);
}

int main(int argc, char **argv) {
  /* The echo side, exec'd by the caller (`--echo FD` in front of the caller's arguments): a
   * fresh process like the seed's and hotring's servers, not a copy-on-write twin. */
  int echo_fd = -1;
  if (argc > 2 && strcmp(argv[1], "--echo") == 0) {
    echo_fd = atoi(argv[2]);
    argv += 2;
    argc -= 2;
  }
  if (argc < 4) {
    fprintf(stderr, "usage: uds_floor blocking|uring SIZE LOOPS [regring] [fixed] [pollfirst]\n");
    return 2;
  }
  const int uring = strcmp(argv[1], "uring") == 0;
  const long size = strtol(argv[2], NULL, 0);
  const long loops = strtol(argv[3], NULL, 0);
  struct uring_opts o = {0, 0, 0};
  for (int i = 4; i < argc; i++) {
    if (strcmp(argv[i], "regring") == 0) o.regring = 1;
    else if (strcmp(argv[i], "fixed") == 0) o.fixed = 1;
    else if (strcmp(argv[i], "pollfirst") == 0) o.pollfirst_echo = 1;
    else {
      fprintf(stderr, "uds_floor: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (size <= 0 || loops <= 0) return 2;
  if (echo_fd >= 0) {
    char *a = calloc(1, size), *b = calloc(1, size);
    if (a == NULL || b == NULL) die("calloc", ENOMEM);
    if (uring) uring_echo(echo_fd, a, b, size, &o);
    else blocking_echo(echo_fd, a, size);
    return 0;
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0) die("socketpair", errno);
  pin_cpu0();
  char *out = calloc(1, size), *in = calloc(1, size);
  if (out == NULL || in == NULL) die("calloc", ENOMEM);
  pid_t pid = fork();
  if (pid < 0) die("fork", errno);
  if (pid == 0) {
    close(sv[0]);
    char fd_text[16];
    snprintf(fd_text, sizeof(fd_text), "%d", sv[1]);
    char *args[16];
    int n = 0;
    args[n++] = "/proc/self/exe";
    args[n++] = "--echo";
    args[n++] = fd_text;
    for (int i = 1; i < argc && n < 15; i++) args[n++] = argv[i];
    args[n] = NULL;
    execv("/proc/self/exe", args);
    _exit(127);
  }
  close(sv[1]);
  const double cpu0 = rusage_s(RUSAGE_SELF);
  const double t0 = now_s();
  if (uring) uring_caller(sv[0], out, in, size, loops, &o);
  else blocking_caller(sv[0], out, size, loops);
  const double t1 = now_s();
  const double cpu_caller = rusage_s(RUSAGE_SELF) - cpu0;
  shutdown(sv[0], SHUT_RDWR);
  int status;
  if (waitpid(pid, &status, 0) != pid) die("waitpid", errno);
  /* The echo side's CPU includes its set-up; over 100,000 calls that is noise. */
  const double cpu_echo = rusage_s(RUSAGE_CHILDREN);
  printf("%s: %.3f us/call wall, %.3f us/call CPU (caller %.3f, echo %.3f)\n", argv[1],
         (t1 - t0) * 1e6 / loops, (cpu_caller + cpu_echo) * 1e6 / loops,
         cpu_caller * 1e6 / loops, cpu_echo * 1e6 / loops);
  return 0;
}
