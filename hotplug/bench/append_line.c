/* The cheapest handler there is, for `hotring bench coldplug` and `bench events`: appends one
 * line "SUBSYSTEM ACTION SEQNUM DEVPATH" to a log and exits 0 (1 if the log cannot be written).
 * The log is $APPEND_LINE_LOG if set, else the program's own path (argv[0]) with ".log" added:
 * the daemon runs a handler with the event's environment only, so a copy of this program in a
 * directory of its own logs beside itself.
 *
 * No C library: raw system calls and its own _start, so it is a few kilobytes and its exec is
 * nearly all kernel (no relocations, no TLS or stdio set-up). Builds for x86_64, aarch64 and
 * 32-bit ARM (EABI). */

#if defined(__x86_64__)
#define SYS_WRITE 1
#define SYS_CLOSE 3
#define SYS_OPENAT 257
#define SYS_EXIT_GROUP 231

static long raw_syscall(long n, long a, long b, long c, long d) {
  long ret;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
                   : "rcx", "r11", "memory");
  return ret;
}

__asm__(
    ".text\n"
    ".global _start\n"
    "_start:\n"
    "  xor %rbp, %rbp\n"
    "  mov %rsp, %rdi\n"
    "  and $-16, %rsp\n"
    "  call append_line_main\n"
    "  hlt\n");
#elif defined(__aarch64__)
#define SYS_WRITE 64
#define SYS_CLOSE 57
#define SYS_OPENAT 56
#define SYS_EXIT_GROUP 94

static long raw_syscall(long n, long a, long b, long c, long d) {
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
  return x0;
}

__asm__(
    ".text\n"
    ".global _start\n"
    "_start:\n"
    "  mov x29, #0\n"
    "  mov x30, #0\n"
    "  mov x0, sp\n"
    "  bl append_line_main\n"
    "  brk #0\n");
#elif defined(__arm__) && defined(__ARM_EABI__)
#define SYS_WRITE 4
#define SYS_CLOSE 6
#define SYS_OPENAT 322
#define SYS_EXIT_GROUP 248
/* 32-bit: without it the kernel refuses a write that would take the log past 2 GiB. */
#define O_LARGEFILE_VALUE 0400000

/* The EABI passes the call number in r7, which Thumb code keeps as its frame pointer (the
 * toolchain builds with -fno-omit-frame-pointer, so r7 cannot be bound to a variable): it is
 * saved in ip around the call. The kernel returns in r0 and preserves every other register. */
static long raw_syscall(long n, long a, long b, long c, long d) {
  register long r0 __asm__("r0") = a;
  register long r1 __asm__("r1") = b;
  register long r2 __asm__("r2") = c;
  register long r3 __asm__("r3") = d;
  __asm__ volatile(
      "mov ip, r7\n"
      "mov r7, %[n]\n"
      "svc 0\n"
      "mov r7, ip"
      : "+r"(r0)
      : [n] "r"(n), "r"(r1), "r"(r2), "r"(r3)
      : "ip", "memory");
  return r0;
}

/* ARM state; the linker turns the bl into a blx when append_line_main is Thumb code. The stack
 * is aligned to the 8 bytes the procedure call standard wants. */
__asm__(
    ".text\n"
    ".arm\n"
    ".global _start\n"
    ".type _start, %function\n"
    "_start:\n"
    "  mov fp, #0\n"
    "  mov lr, #0\n"
    "  mov r0, sp\n"
    "  bic sp, sp, #7\n"
    "  bl append_line_main\n"
    "  udf #0\n");
#else
#error "append_line: only x86_64, aarch64 and 32-bit ARM (EABI) are supported"
#endif

#ifndef O_LARGEFILE_VALUE
#define O_LARGEFILE_VALUE 0 /* 64-bit: files are always large */
#endif

#define AT_FDCWD_VALUE (-100)
#define O_WRONLY_VALUE 01
#define O_CREAT_VALUE 0100
#define O_APPEND_VALUE 02000
#define O_CLOEXEC_VALUE 02000000

enum { kLineBytes = 1024, kPathBytes = 4096 };

static __attribute__((noreturn)) void exit_group(int code) {
  raw_syscall(SYS_EXIT_GROUP, code, 0, 0, 0);
  __builtin_unreachable();
}

/* The value of `name` in envp, or 0. */
static const char *get_env(char **envp, const char *name) {
  for (; *envp != 0; ++envp) {
    const char *e = *envp;
    const char *n = name;
    while (*n != '\0' && *e == *n) {
      ++e;
      ++n;
    }
    if (*n == '\0' && *e == '=') return e + 1;
  }
  return 0;
}

/* Appends `text` at out[*len], keeping room for the newline; cuts what does not fit. */
static void put(char *out, unsigned *len, unsigned cap, const char *text) {
  if (text == 0) text = "-";
  while (*text != '\0' && *len + 1 < cap) out[(*len)++] = *text++;
}

__attribute__((used, noreturn)) void append_line_main(long *stack) {
  const long argc = stack[0];
  char **argv = (char **)(stack + 1);
  char **envp = argv + argc + 1;

  char path[kPathBytes];
  unsigned path_len = 0;
  const char *log = get_env(envp, "APPEND_LINE_LOG");
  if (log != 0) {
    put(path, &path_len, kPathBytes, log);
  } else {
    if (argc < 1) exit_group(1);
    put(path, &path_len, kPathBytes, argv[0]);
    put(path, &path_len, kPathBytes, ".log");
  }
  path[path_len] = '\0';

  char line[kLineBytes];
  unsigned len = 0;
  put(line, &len, kLineBytes, argc > 1 ? argv[1] : get_env(envp, "SUBSYSTEM"));
  put(line, &len, kLineBytes, " ");
  put(line, &len, kLineBytes, get_env(envp, "ACTION"));
  put(line, &len, kLineBytes, " ");
  put(line, &len, kLineBytes, get_env(envp, "SEQNUM"));
  put(line, &len, kLineBytes, " ");
  put(line, &len, kLineBytes, get_env(envp, "DEVPATH"));
  line[len++] = '\n';

  const long fd = raw_syscall(SYS_OPENAT, AT_FDCWD_VALUE, (long)path,
                              O_WRONLY_VALUE | O_CREAT_VALUE | O_APPEND_VALUE | O_CLOEXEC_VALUE |
                                  O_LARGEFILE_VALUE,
                              0644);
  if (fd < 0) exit_group(1);
  /* O_APPEND: each line is one write at the end of the file, so handlers running side by side
   * do not overwrite each other. */
  const long written = raw_syscall(SYS_WRITE, fd, (long)line, len, 0);
  raw_syscall(SYS_CLOSE, fd, 0, 0, 0);
  exit_group(written == (long)len ? 0 : 1);
}
