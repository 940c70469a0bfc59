// The floor of a small message on loopback TCP (bench/per-call/run.ts): two processes (a fork)
// bounce a 40-byte message (a data link's 32-byte header and 8 bytes) over one TCP_NODELAY
// connection; prints the one-way time, half a round trip, in microseconds. `spin` 1 polls the
// socket (recv MSG_DONTWAIT in a loop, as the native plane spins), 0 blocks in recv.
// Usage: loopback_pingpong ITERATIONS SPIN
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kMessageBytes = 40, kWarmup = 1000 };

static int spin;

static double NowUs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void ReadWhole(int fd, char* buffer) {
  int got = 0;
  while (got < kMessageBytes) {
    ssize_t read = recv(fd, buffer + got, kMessageBytes - got, spin ? MSG_DONTWAIT : 0);
    if (read > 0) {
      got += (int)read;
    } else if (read == 0 || errno != EAGAIN) {
      perror("recv");
      exit(1);
    }
  }
}

static void NoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int main(int argc, char** argv) {
  int iterations = argc > 1 ? atoi(argv[1]) : 20000;
  spin = argc > 2 ? atoi(argv[2]) : 0;
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address = {0};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (bind(listener, (struct sockaddr*)&address, sizeof address) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, (struct sockaddr*)&address, &length) != 0) {
    perror("listen");
    return 1;
  }
  char buffer[kMessageBytes] = {0};
  if (fork() == 0) {
    int peer = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(peer, (struct sockaddr*)&address, sizeof address) != 0) return 1;
    NoDelay(peer);
    for (int i = 0; i < iterations + kWarmup; i++) {
      ReadWhole(peer, buffer);
      send(peer, buffer, kMessageBytes, 0);
    }
    return 0;
  }
  int peer = accept(listener, NULL, NULL);
  NoDelay(peer);
  double started = 0;
  for (int i = 0; i < iterations + kWarmup; i++) {
    if (i == kWarmup) started = NowUs();
    send(peer, buffer, kMessageBytes, 0);
    ReadWhole(peer, buffer);
  }
  printf("%.3f\n", (NowUs() - started) / iterations / 2);
  wait(NULL);
  return 0;
}
