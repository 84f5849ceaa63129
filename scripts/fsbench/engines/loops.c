/* The python engine's I/O loop: every read and write of a measurement, timed and counted, in C.

   Python sets a stream up (its file, offsets, buffers, io_uring ring, histograms) and reads the results;
   this moves the blocks. Written in C because Python's own work per call (~1-4 us: the loop, the clock,
   the histogram, a write's stamps) cost up to 20 % against fio at 4 KiB and 64 KiB here
   (docs/bench-engines.md); the calls are the same ones fio makes: pread/pwrite at depth 1, io_uring
   IORING_OP_READ/WRITE deeper. Built once by fsbench.engines.loops with the system's C compiler, called through
   ctypes (which releases the GIL, so streams in threads run in parallel).

   Latency: one clock read (CLOCK_MONOTONIC, as Python's perf_counter_ns) per call at depth 1, whose value
   ends this call's latency and starts the next one's; per reaped batch with io_uring, a latency running
   from the clock read of the batch that queued the I/O to the one after the wait that reaped it. Buckets
   as latency.bucket() (fsbench.engines.loops checks SUB_BITS agrees; tests compare the two).

   Time series: bytes and operations completed per bin of series_ns, counted at the clock read that ends each
   call's latency (no extra clock read, one comparison per call while within a bin). When the bins run out,
   every ten are summed into one and the bin grows tenfold, so any run fits in series_len bins.

   Files (fsb_files): the metadata phases' per-file loop (fsbench.engines.metadata, fsbench.io500's mdtest
   phases): create, stat, read or delete a list of files, each timed into the same histogram. In C for the same
   reason: on 2 busy cores a stat phase is CPU-bound, and Python's loop, clock and histogram (~1.2 us a file over
   C's ~7 us) held fsbench's stat to ~0.6 of mdtest's (docs/bench-peers.md).

   IOR (fsb_ior): one process's transfers in one of IO500's ior phases (fsbench.io500.run), in C as IOR's own loop:
   Python's loop, its stamp and its check of each transfer cost ~2 us a transfer, ior-rnd4K-easy-read ran at 0.69 of
   the io500 application's. The check of a read is IOR's (-R, verify_memory_pattern): every 8-byte word compared
   with the one the writer's packet must hold, made word by word, no early exit; a memcmp against a made buffer
   costs ~1/3 of that, and on RAM-fast storage fsbench's ior-easy-read ran at 2.1 x io500's through it alone.

   Scan (fsb_scan): one directory of IO500's find (fsbench.io500.run), in C for the same reason: Python's
   scandir loop and fnmatch per name took about as long as the walk itself (find ran at 0.79 of pfind's). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SUB_BITS 5
#define SUB (1 << SUB_BITS)

/* What to do. fsbench.engines.loops.IO mirrors it field for field. */
struct fsb_io {
    const int64_t *offsets; /* byte offset of each operation, in order */
    const uint8_t *reads;   /* per operation 1 read, 0 write; NULL: every operation is `read_all` */
    char *read_buffers;     /* `depth` blocks: lane l reads into block l */
    char *write_buffers;    /* lane l writes offset o from block l + depth * (o / block_size % write_turns) */
    uint64_t *counts[2];    /* latency histograms (latency.Histogram.counts): [0] writes, [1] reads */
    volatile int64_t *done; /* bytes moved so far, for the progress reporter */
    int64_t *series[2][2];  /* [kind][0] bytes, [kind][1] operations completed per bin (kind 0 writes, 1 reads) */
    int64_t series_len;     /* bins in each (a multiple of 10); 0: no series */
    int64_t series_ns;      /* the first bin's width */
    int64_t count;          /* operations in one pass */
    int64_t block_size;
    int64_t write_turns;
    int64_t stamp_every;    /* 0: write the buffers as they are; else every stamp_every bytes of a written
                               block start with its offset (no two blocks alike, as fio's scramble_buffers) */
    int64_t deadline_ns;    /* queue nothing after this (CLOCK_MONOTONIC ns) */
    int64_t clock_step_ns;  /* 0: the clock is CLOCK_MONOTONIC; else one that starts at 0 and advances this much
                               at every read (tests hold a time-based run to an exact count of calls with it) */
    int32_t fd;
    int32_t depth;          /* I/Os in flight: 1 = pread/pwrite one at a time, more = through the ring below */
    int32_t read_all;
    int32_t strict;         /* a short transfer is an error; else a read may end short (end of file) */
    int32_t repeat;         /* pass over the operations again and again until the deadline */
    int32_t ring_fd;        /* io_uring (depth > 1): the ring fsbench.engines.uring.Ring set up, at least depth SQEs */
    uint32_t *sq_head, *sq_tail, *sq_mask, *sq_array;
    struct io_uring_sqe *sqes;
    uint32_t *cq_head, *cq_tail, *cq_mask;
    struct io_uring_cqe *cqes;
    int64_t verify;         /* io.verify: each whole block read is checked (check()) after its timed call */
};

/* What happened. fsbench.engines.loops.Out mirrors it. */
struct fsb_out {
    int64_t ops[2], total_ns[2], longest_ns[2], moved[2]; /* [0] writes, [1] reads */
    int64_t error_offset;  /* where the failing operation was */
    int64_t short_result;  /* strict: what a short transfer moved */
    int32_t error;         /* errno of the failing call (0: none; EIO for a short transfer when strict) */
    int32_t error_read;    /* the failing operation was a read */
    int32_t enter_failed;  /* io_uring_enter itself failed: I/O may still be in flight */
    int64_t series_ns;     /* the bins' final width (series_ns × 10^k) */
    int64_t series_used;   /* bins up to the last one holding anything */
    /* verify: blocks read that were not as written; of the lowest of them: its offset, the byte where it first
       differs, how many bits differ, the 32 bytes of the piece holding that byte, whether that piece was zeros */
    int64_t bad_blocks, bad_block, first_bad, bad_bits, found[4];
    int64_t check_ns;      /* the checks' own time, outside every call's */
    int32_t bad_zero, pad;
};

/* Where the series is: its start, the current bin and where that bin ends. */
struct tally {
    int64_t t0, bin, edge;
};

/* Sum every ten bins into one, ten times as wide. */
static void fold(const struct fsb_io *io, struct fsb_out *o) {
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 2; k++) {
            int64_t *v = io->series[r][k];
            for (int64_t i = 0; i < io->series_len / 10; i++) {
                int64_t sum = 0;
                for (int j = 0; j < 10; j++)
                    sum += v[10 * i + j];
                v[i] = sum;
            }
            memset(v + io->series_len / 10, 0, (io->series_len - io->series_len / 10) * sizeof *v);
        }
    o->series_ns *= 10;
    o->series_used = (o->series_used + 9) / 10;
}

static inline void tally(const struct fsb_io *io, struct fsb_out *o, struct tally *t, int r, int64_t now,
                         int64_t got) {
    if (!io->series_len)
        return;
    if (now > t->edge) { /* bin i holds what ended in (t0 + i step, t0 + (i + 1) step] */
        t->bin = (now - t->t0 - 1) / o->series_ns;
        while (t->bin >= io->series_len) {
            fold(io, o);
            t->bin = (now - t->t0 - 1) / o->series_ns;
        }
        t->edge = t->t0 + (t->bin + 1) * o->series_ns;
        if (t->bin >= o->series_used)
            o->series_used = t->bin + 1;
    }
    io->series[r][0][t->bin] += got;
    io->series[r][1][t->bin]++;
}

static inline int64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static inline int64_t now_ns(const struct fsb_io *io, int64_t *stepped) {
    return io->clock_step_ns ? (*stepped += io->clock_step_ns) : mono_ns();
}

static inline int64_t bucket(int64_t d) {
    if (d < SUB)
        return d < 0 ? 0 : d;
    int shift = 63 - __builtin_clzll((uint64_t)d) - SUB_BITS; /* bit_length - SUB_BITS - 1 */
    return ((int64_t)(shift + 1) << SUB_BITS) + (d >> shift) - SUB;
}

static inline void record(struct fsb_out *o, const struct fsb_io *io, int r, int64_t d) {
    io->counts[r][bucket(d)]++;
    o->ops[r]++;
    o->total_ns[r] += d;
    if (d > o->longest_ns[r])
        o->longest_ns[r] = d;
}

static inline char *write_block(const struct fsb_io *io, int64_t lane, int64_t off) {
    int64_t bs = io->block_size;
    char *block = io->write_buffers + (lane + io->depth * (off / bs % io->write_turns)) * bs;
    for (int64_t j = 0; io->stamp_every && j < bs; j += io->stamp_every)
        memcpy(block + j, &off, sizeof off);
    return block;
}

/* io.verify (fsbench.engines.verify): does block `got`, read at `off`, hold what write_block wrote there? Each
   piece of stamp_every bytes begins with the block's offset; the rest is the write pool's block for `off` (lane
   0's: every lane's is alike when verifying), whose pieces' bytes 8..32 the setup stamped. */
static void check(const struct fsb_io *io, const char *got, int64_t off, struct fsb_out *o) {
    int64_t bs = io->block_size, every = io->stamp_every, j = 0;
    const char *want = io->write_buffers + io->depth * (off / bs % io->write_turns) * bs;
    for (; j < bs; j += every) {
        int64_t n = bs - j < every ? bs - j : every;
        if (memcmp(got + j, &off, sizeof off) || memcmp(got + j + 8, want + j + 8, n - 8))
            break;
    }
    if (j >= bs || (o->bad_blocks++ && off > o->bad_block))
        return;
    /* the lowest bad block so far: a byte at a time (bad blocks are rare; clean ones never come here) */
    int64_t zero = 1, bits = 0, first = -1;
    for (int64_t k = 0; k < bs; k++) {
        unsigned char w = k % every < 8 ? ((const unsigned char *)&off)[k % every] : (unsigned char)want[k];
        unsigned char x = (unsigned char)got[k] ^ w;
        if (x && first < 0)
            first = k;
        bits += __builtin_popcount(x);
    }
    if (first % every < 32) /* a header is one thing (offset, magic, mark, signature): it is bad from its start */
        first -= first % every;
    for (int64_t k = first / every * every; k < bs && k < (first / every + 1) * every; k++)
        zero &= !got[k]; /* the piece (a page, as a lost page write leaves it) */
    o->bad_block = off;
    o->first_bad = off + first;
    o->bad_bits = bits;
    o->bad_zero = (int32_t)zero;
    memcpy(o->found, got + first / every * every, sizeof o->found);
}

static int fail(struct fsb_out *o, int err, int64_t off, int r) {
    o->error = err;
    o->error_offset = off;
    o->error_read = r;
    return -1;
}

static int sync_loop(const struct fsb_io *io, struct fsb_out *o) {
    int64_t bs = io->block_size, stepped = 0, last = now_ns(io, &stepped);
    struct tally t = {last, 0, last + o->series_ns};
    o->series_used = io->series_len ? 1 : 0;
    do {
        for (int64_t i = 0; i < io->count; i++) {
            int64_t off = io->offsets[i];
            int r = io->reads ? io->reads[i] : io->read_all;
            ssize_t got = 0;
            if (r) {
                do
                    got = pread(io->fd, io->read_buffers, bs, off);
                while (got < 0 && errno == EINTR);
                if (got < 0)
                    return fail(o, errno, off, r);
                if (got < bs && io->strict) {
                    o->short_result = got;
                    return fail(o, EIO, off, r);
                }
                if (!got)
                    return 0; /* end of file: nothing more to read */
            } else {
                char *block = write_block(io, 0, off);
                while (got < bs) { /* a short write: finish the block, or fail on a full disk */
                    ssize_t n = pwrite(io->fd, block + got, bs - got, off + got);
                    if (n < 0 && errno == EINTR)
                        continue;
                    if (n <= 0)
                        return fail(o, n < 0 ? errno : ENOSPC, off, r);
                    got += n;
                }
            }
            int64_t now = now_ns(io, &stepped);
            record(o, io, r, now - last);
            last = now;
            o->moved[r] += got;
            tally(io, o, &t, r, now, got);
            *io->done += got;
            if (r && io->verify && got == bs) { /* after the call's time: the next call's starts after it */
                check(io, io->read_buffers, off, o);
                int64_t checked = now_ns(io, &stepped);
                o->check_ns += checked - now;
                last = checked;
            }
            if (now >= io->deadline_ns)
                return 0;
        }
    } while (io->repeat && io->count);
    return 0;
}

/* Publish the queued SQEs and wait for at least one completion. */
static int submit_and_wait(const struct fsb_io *io, uint32_t tail, uint32_t *submitted) {
    __atomic_store_n(io->sq_tail, tail, __ATOMIC_RELEASE); /* after the SQEs were written */
    for (;;) {
        uint32_t to_submit = tail - *submitted;
        int ret = syscall(__NR_io_uring_enter, io->ring_fd, to_submit, 1, IORING_ENTER_GETEVENTS, NULL, 0);
        if (ret < 0 && errno != EINTR)
            return errno;
        if (ret > 0)
            *submitted += ret;
        else if (ret == 0 && to_submit)
            return EAGAIN; /* the kernel took none of them */
        /* a call that submitted returns the count even when a signal cut its wait short: look at the CQ */
        if (*submitted == tail && __atomic_load_n(io->cq_tail, __ATOMIC_ACQUIRE) != *io->cq_head)
            return 0;
    }
}

/* One lane's I/O in flight: what was queued, where, and when. */
struct lane {
    int64_t queued_at, off, done; /* done: bytes of a write the kernel took short so far */
    int read;
};

/* Queue operation k of the sequence through SQE `lane` (one SQE per lane, filled whole each time). */
static inline void queue(const struct fsb_io *io, struct lane *lanes, int64_t lane, int64_t k, int64_t now,
                         uint32_t *tail) {
    int64_t idx = k % io->count, off = io->offsets[idx], bs = io->block_size;
    int r = io->reads ? io->reads[idx] : io->read_all;
    struct io_uring_sqe *sqe = &io->sqes[lane];
    memset(sqe, 0, sizeof *sqe);
    sqe->opcode = r ? IORING_OP_READ : IORING_OP_WRITE;
    sqe->fd = io->fd;
    sqe->addr = (uint64_t)(uintptr_t)(r ? io->read_buffers + lane * bs : write_block(io, lane, off));
    sqe->len = (uint32_t)bs;
    sqe->off = (uint64_t)off;
    sqe->user_data = (uint64_t)lane;
    io->sq_array[*tail & *io->sq_mask] = (uint32_t)lane;
    ++*tail;
    lanes[lane] = (struct lane){now, off, 0, r};
}

static int ring_loop(const struct fsb_io *io, struct fsb_out *o) {
    int64_t bs = io->block_size, n = io->count, k = 0, in_flight = 0, moved = 0;
    struct lane *lanes = calloc(io->depth, sizeof *lanes);
    if (!lanes)
        return fail(o, ENOMEM, 0, 0);
    uint32_t tail = *io->sq_tail, submitted = tail, head = *io->cq_head, cq_mask = *io->cq_mask;
    int64_t stepped = 0, now = now_ns(io, &stepped);
    struct tally t = {now, 0, now + o->series_ns};
    o->series_used = io->series_len ? 1 : 0;
    int open = n > 0; /* more operations may be queued */
    for (int64_t lane = 0; lane < io->depth && (io->repeat ? n > 0 : k < n); lane++, k++, in_flight++)
        queue(io, lanes, lane, k, now, &tail);
    while (in_flight) {
        int err = submit_and_wait(io, tail, &submitted);
        if (err) {
            fail(o, err, 0, 0);
            o->enter_failed = 1;
            break;
        }
        now = now_ns(io, &stepped);
        if (now >= io->deadline_ns) /* time-based: queue no more, let what is in flight complete */
            open = 0;
        uint32_t cq_tail = __atomic_load_n(io->cq_tail, __ATOMIC_ACQUIRE);
        int64_t queued_at = now; /* what a lane queued now starts its latency at: after any check before it */
        for (; head != cq_tail; head++) {
            struct io_uring_cqe *cqe = &io->cqes[head & cq_mask];
            int64_t lane = (int64_t)cqe->user_data, res = cqe->res;
            int r = lanes[lane].read;
            int64_t want = bs - lanes[lane].done;
            in_flight--;
            if (!r && res > 0 && res < want) { /* a short write: finish the block, as at depth 1 */
                struct io_uring_sqe *sqe = &io->sqes[lane];
                lanes[lane].done += res;
                sqe->addr += (uint64_t)res;
                sqe->len -= (uint32_t)res;
                sqe->off += (uint64_t)res;
                io->sq_array[tail & *io->sq_mask] = (uint32_t)lane;
                tail++;
                in_flight++;
                continue;
            }
            if (res < 0 || (res < want && (io->strict || !r))) {
                /* the first failure is the one to tell; what is in flight completes before returning */
                if (!o->error) {
                    if (res >= 0)
                        o->short_result = res;
                    fail(o, res < 0 ? (int)-res : io->strict ? EIO : ENOSPC, lanes[lane].off, r);
                }
                open = 0;
                continue;
            }
            if (res) { /* a read past the end moves nothing: no operation (as at depth 1) */
                record(o, io, r, now - lanes[lane].queued_at);
                o->moved[r] += lanes[lane].done + res;
                tally(io, o, &t, r, now, lanes[lane].done + res);
                moved += lanes[lane].done + res;
            }
            if (r && io->verify && res == bs) { /* before the lane's buffer is read into again */
                int64_t before = now_ns(io, &stepped);
                check(io, io->read_buffers + lane * bs, lanes[lane].off, o);
                queued_at = now_ns(io, &stepped);
                o->check_ns += queued_at - before;
            }
            if (open && (io->repeat || k < n)) { /* the lane takes the next operation of the sequence */
                queue(io, lanes, lane, k++, queued_at, &tail);
                in_flight++;
                /* ... submitted at once, as fio submits each (iodepth_batch_submit=1), not with the batch at the
                   next wait: that ran at 0.90 of fio at QD32 on a RAM loop device, sleeping 4 x as often */
                __atomic_store_n(io->sq_tail, tail, __ATOMIC_RELEASE);
                int ret = (int)syscall(__NR_io_uring_enter, io->ring_fd, tail - submitted, 0, 0, NULL, 0);
                if (ret > 0) /* else the next wait submits it */
                    submitted += (uint32_t)ret;
            }
        }
        __atomic_store_n(io->cq_head, head, __ATOMIC_RELEASE); /* release the CQEs only after they were read */
        *io->done = moved;
    }
    free(lanes);
    return o->error ? -1 : 0;
}

/* The structs' sizes, which fsbench.engines.loops checks its ctypes mirrors against when it loads the library. */
int64_t fsb_sizeof_io(void) { return (int64_t)sizeof(struct fsb_io); }
int64_t fsb_sizeof_out(void) { return (int64_t)sizeof(struct fsb_out); }

int fsb_run(const struct fsb_io *io, struct fsb_out *o) {
    memset(o, 0, sizeof *o);
    o->short_result = -1;
    o->series_ns = io->series_ns > 0 ? io->series_ns : 1;
    return io->depth > 1 ? ring_loop(io, o) : sync_loop(io, o);
}

int fsb_sub_bits(void) { return SUB_BITS; }

/* What to do to a list of files. fsbench.engines.loops.Files mirrors it. */
struct fsb_files {
    const char *pattern;    /* file i's path: printf(pattern, i, i % dirs), e.g. "/x/d%2$lld/f%1$lld" */
    int64_t dirs;
    char *data;             /* file_size + 1 bytes: what a create writes (the first file_size), a read's buffer */
    uint64_t *counts;       /* latency histogram (latency.Histogram.counts) */
    int64_t first, last;    /* the files [first, last) of the list */
    int64_t file_size;      /* a create writes it, a read must find exactly it */
    int64_t stamp_base;     /* stamp: a created file's first 8 bytes are stamp_base + i (no two alike) */
    int64_t deadline_ns;    /* start no file after this (CLOCK_MONOTONIC ns; 0: none): IO500's stonewall */
    int32_t op;             /* 0 create (open O_CREAT|O_EXCL, write, [fsync], close), 1 stat, 2 read (open, read,
                               close), 3 delete (unlink), 4 read as mdtest (open O_RDWR, lseek, read, close) */
    int32_t stamp;
    int32_t fsync_each;     /* a create fsyncs each file before its close */
    int32_t verify;         /* a read checks the file's bytes against `expect` (stamped as a create stamps), as
                               mdtest -X, after the file's time */
    const char *expect;     /* file_size bytes: what every create wrote, before its stamp */
    uint64_t hi, low;       /* kind 0: a timestamp packet (word w: hi | low + w), checked as IOR's words */
    int64_t kind;           /* 0: timestamp, else `expect` word by word */
};

/* What happened. fsbench.engines.loops.FilesOut mirrors it. */
struct fsb_files_out {
    int64_t done;         /* files done: the next one is first + done */
    int64_t total_ns, longest_ns, moved;
    int64_t short_result; /* a read that found other than file_size bytes: what it found (else -1) */
    int32_t error;        /* errno of the failing call on file first + done (0: none; EIO for a wrong size) */
    int32_t pad;
    int64_t bad, first_bad; /* verify: files read that were not as made, and the lowest of them (-1: none) */
    int64_t check_ns;       /* the checks' own time, outside every file's */
};

/* IOR's verify_memory_pattern's shape (ior -R, mdtest -X): per word, the expected word made in a switch on the
   packet's kind, then compared; every word looked at; the first `stamps` words are stamp[]. Its cost is IOR's
   (13.0-13.3 GB/s against IOR's function's 13.8-14.0 on one core here, gcc -O2, one 1 MiB buffer over and over); a
   loop without the switch is vectorised and twice as fast. */
static int words_differ(const char *buf, const char *expect, int64_t bytes, const uint64_t *stamp, int64_t stamps,
                        int64_t kind, uint64_t hi, uint64_t low) {
    const uint64_t *got = (const uint64_t *)buf, *exp_words = (const uint64_t *)expect;
    int64_t words = bytes / 8;
    int error = 0;
    for (int64_t w = 0; w < words; w++) {
        uint64_t exp;
        switch (kind) {
        case 0:
            exp = hi | (low + w);
            break;
        default:
            exp = exp_words[w];
        }
        if (w < stamps)
            exp = stamp[w];
        if (got[w] != exp)
            error = 1;
    }
    for (int64_t b = words * 8; b < bytes; b++)
        if (buf[b] != expect[b])
            error = 1;
    return error;
}

static int one_file(const struct fsb_files *f, int64_t i, struct fsb_files_out *o) {
    char path[PATH_MAX];
    int fd, err = 0;
    if (snprintf(path, sizeof path, f->pattern, (long long)i, (long long)(i % f->dirs)) >= (int)sizeof path)
        return ENAMETOOLONG;
    ssize_t got = 0;
    switch (f->op) {
    case 0:
        if (f->stamp)
            memcpy(f->data, &(int64_t){f->stamp_base + i}, 8);
        if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0)
            return errno;
        while (got < f->file_size) { /* a short write: finish the file, or fail on a full disk */
            ssize_t n = write(fd, f->data + got, f->file_size - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                err = n < 0 ? errno : ENOSPC;
                break;
            }
            got += n;
        }
        if (!err && f->fsync_each && fsync(fd))
            err = errno;
        if (close(fd) && !err)
            err = errno;
        break;
    case 1: {
        struct stat st;
        if (stat(path, &st))
            return errno;
        break;
    }
    case 2: /* one read of one byte more than the file should hold: its size is checked too. An empty file is
               opened and closed, as mdtest reads one (-E without -e): a read call would cost ~2 us of ~10. */
    case 4: /* the same as mdtest calls it (io500's mdtest-hard-read): it opens O_RDWR (mdtest.c's read passes
               O_RDONLY, 0, where its POSIX backend takes IOR_RDONLY) and seeks to 0 before the read */
        if ((fd = open(path, (f->op == 4 ? O_RDWR : O_RDONLY) | O_CLOEXEC)) < 0)
            return errno;
        if (f->op == 4 && lseek(fd, 0, SEEK_SET) < 0) {
            err = errno;
            close(fd);
            return err;
        }
        do
            got = f->file_size ? read(fd, f->data, f->file_size + 1) : 0;
        while (got < 0 && errno == EINTR);
        if (got < 0)
            err = errno;
        else if (got != f->file_size) {
            o->short_result = got;
            err = EIO;
        }
        if (close(fd) && !err)
            err = errno;
        break;
    case 3:
        if (unlink(path))
            return errno;
        break;
    default:
        return EINVAL;
    }
    if (!err)
        o->moved += got;
    return err;
}

int64_t fsb_sizeof_files(void) { return (int64_t)sizeof(struct fsb_files); }
int64_t fsb_sizeof_files_out(void) { return (int64_t)sizeof(struct fsb_files_out); }

/* One clock read per file, as the I/O loop: it ends this file's latency and starts the next one's (which
   includes making its name, ~0.1 us, as mdtest's loop does too). */
int fsb_files(const struct fsb_files *f, struct fsb_files_out *o) {
    memset(o, 0, sizeof *o);
    o->short_result = o->first_bad = -1;
    int64_t last = mono_ns();
    for (int64_t i = f->first; i < f->last; i++) {
        if (f->deadline_ns && last >= f->deadline_ns)
            break;
        int err = one_file(f, i, o);
        if (err) {
            o->error = err;
            return -1;
        }
        int64_t now = mono_ns(), d = now - last;
        f->counts[bucket(d)]++;
        o->done++;
        o->total_ns += d;
        if (d > o->longest_ns)
            o->longest_ns = d;
        last = now;
        if (f->verify && (f->op == 2 || f->op == 4) && f->file_size) {
            const uint64_t stamp = (uint64_t)(f->stamp_base + i);
            if (words_differ(f->data, f->expect, f->file_size, &stamp, f->stamp ? 1 : 0, f->kind, f->hi, f->low))
                if (!o->bad++ || i < o->first_bad)
                    o->first_bad = i;
            last = mono_ns();
            o->check_ns += last - now;
        }
    }
    return 0;
}

/* One process's transfers [first, last) of an IO500 ior phase: transfer i at base + i * stride, or (blocks > 0) at
   a block of the file drawn at random, with replacement, from (seed, i) alone (IOR's -z -z: ior-rnd4K-easy-read).
   A write sets the transfer's first 16 bytes to (rank, its offset) and pwrites `buf`; a read preads into `buf`
   and, with verify, checks the stamp and every word after it: word w of a timestamp packet (kind 0) must be
   hi | (low + w), of any other packet expect's word w (then the tail bytes as expect's). */
struct fsb_ior {
    char *buf;              /* transfer bytes: what a write writes (after its stamp), a read's buffer */
    const char *expect;     /* kind != 0: the packet a read must find after the stamp */
    char *first_bad_copy;   /* verify: the lowest transfer not as written, as it was read (transfer bytes) */
    int64_t first, last, transfer, base, stride;
    int64_t deadline_ns;    /* start no transfer after this (CLOCK_MONOTONIC ns; 0: none): IO500's stonewall */
    int64_t rank;           /* a write's stamp; a read's: the writer it reads */
    int64_t blocks;         /* > 0: transfers at random blocks of `transfer` bytes among the file's first `blocks` */
    uint64_t hi, low;       /* kind 0: the writer's timestamp packet */
    uint64_t seed;          /* blocks > 0: the draw's seed */
    int32_t fd, write, verify, kind;
};

struct fsb_ior_out {
    int64_t done;           /* transfers done: the next one is first + done */
    int64_t moved;
    int64_t short_result;   /* a transfer that moved other than `transfer` bytes: what it moved (else -1) */
    int64_t bad, first_bad; /* verify: transfers not as written, the lowest of them (-1: none) */
    int32_t error, pad;     /* errno of the failing call on transfer first + done (0: none; EIO when short) */
};

int64_t fsb_sizeof_ior(void) { return (int64_t)sizeof(struct fsb_ior); }
int64_t fsb_sizeof_ior_out(void) { return (int64_t)sizeof(struct fsb_ior_out); }

static int ior_check(const struct fsb_ior *p, int64_t off) {
    const uint64_t stamp[2] = {(uint64_t)p->rank, (uint64_t)off};
    return words_differ(p->buf, p->expect, p->transfer, stamp, 2, p->kind, p->hi, p->low);
}

/* splitmix64's output function, applied to its (i + 1)-th state from `seed` (seed + (i + 1) x its golden-ratio
   step): transfer i's draw from (seed, i) alone, no state between transfers, so that a process's runs of
   [first, last) draw the same blocks whatever the split. */
static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int64_t fsb_ior_offset(const struct fsb_ior *p, int64_t i) {
    if (p->blocks > 0)
        return (int64_t)(mix64(p->seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1)) % (uint64_t)p->blocks) *
               p->transfer;
    return p->base + i * p->stride;
}

int fsb_ior(const struct fsb_ior *p, struct fsb_ior_out *o) {
    memset(o, 0, sizeof *o);
    o->short_result = o->first_bad = -1;
    for (int64_t i = p->first; i < p->last; i++) {
        if (p->deadline_ns && mono_ns() >= p->deadline_ns)
            break;
        int64_t off = fsb_ior_offset(p, i);
        ssize_t n;
        if (p->write) {
            memcpy(p->buf, (int64_t[2]){p->rank, off}, 16);
            do
                n = pwrite(p->fd, p->buf, p->transfer, off);
            while (n < 0 && errno == EINTR);
        } else {
            do
                n = pread(p->fd, p->buf, p->transfer, off);
            while (n < 0 && errno == EINTR);
        }
        if (n != p->transfer) {
            o->error = n < 0 ? errno : EIO;
            o->short_result = n < 0 ? -1 : n;
            return -1;
        }
        o->moved += n;
        o->done++;
        if (!p->write && p->verify && ior_check(p, off) && !o->bad++) {
            o->first_bad = i;
            memcpy(p->first_bad_copy, p->buf, p->transfer);
        }
    }
    return 0;
}

/* IO500's find in one directory, not below it: every regular file is looked at; one whose name matches `pattern`
   (fnmatch(3), as pfind's -name) is lstat'ed and found when it holds `size` bytes and was modified after
   newer_ns (ns since the epoch). Subdirectories' names go to `dirs`, each ended by a NUL, for the caller to scan.
   Returns 0, or an errno (ENOBUFS: the names did not fit in dirs_cap bytes). */
struct fsb_scan_out {
    int64_t looked, found, dirs_len;
};

int fsb_scan(const char *path, const char *pattern, int64_t size, int64_t newer_ns, char *dirs, int64_t dirs_cap,
             struct fsb_scan_out *o) {
    memset(o, 0, sizeof *o);
    DIR *d = opendir(path);
    if (!d)
        return errno;
    int err = 0;
    struct dirent *e;
    for (errno = 0; (e = readdir(d)); errno = 0) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
            continue;
        unsigned char type = e->d_type;
        struct stat st;
        int stated = 0;
        if (type == DT_UNKNOWN) { /* a filesystem that does not say: ask */
            if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
                err = errno;
                break;
            }
            type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
            stated = 1;
        }
        if (type == DT_DIR) {
            int64_t n = (int64_t)strlen(e->d_name) + 1;
            if (o->dirs_len + n > dirs_cap) {
                err = ENOBUFS;
                break;
            }
            memcpy(dirs + o->dirs_len, e->d_name, n);
            o->dirs_len += n;
            continue;
        }
        if (type != DT_REG)
            continue;
        o->looked++;
        if (fnmatch(pattern, e->d_name, 0))
            continue;
        if (!stated && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
            err = errno;
            break;
        }
        int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
        o->found += st.st_size == size && mtime > newer_ns;
    }
    if (!err && errno)
        err = errno;
    closedir(d);
    return err;
}

int64_t fsb_sizeof_scan_out(void) { return (int64_t)sizeof(struct fsb_scan_out); }
