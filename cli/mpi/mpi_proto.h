/* loom-mpi's messages between rank 0 and the workers (private to mpi/).
 * Every message is MPI_BYTE on MPI_COMM_WORLD; structs are sent as bytes,
 * so every rank must run the same build of loom-mpi on the same
 * architecture (docs/distributed.md). */
#ifndef LOOM_MPI_PROTO_H
#define LOOM_MPI_PROTO_H

#include <stdint.h>

#include "../../runtime/runner/runner.h"

enum {
    LOOM_MPI_HELLO = 1, /* worker -> 0: loom_mpi_hello then ntasks loom_mpi_task_id, once; also its first
                           request for work */
    LOOM_MPI_WELCOME,   /* 0 -> worker: loom_mpi_welcome (accepted or refused) */
    LOOM_MPI_WORK,      /* 0 -> worker: loom_mpi_work_head (naming the task) then the trace JSON,
                           NUL-terminated */
    LOOM_MPI_BEAT,      /* worker -> 0: int64 id of the candidate being measured, every second */
    LOOM_MPI_RESULT,    /* worker -> 0: loom_mpi_result; also its request for more work */
    LOOM_MPI_STOP,      /* 0 -> worker: no more work, exit */
    LOOM_MPI_PING       /* 0 -> worker: rank 0 is alive (every second, from rank 0's ping thread) */
};

/* A task of the campaign: its workload's hash (loom_program_hash) and its
 * data's fingerprint (loom_data_fingerprint).  One for `loom-mpi tune
 * WORKLOAD`, one per task of a model (search/model/model.h) in its order. */
typedef struct loom_mpi_task_id {
    uint64_t whash;
    uint64_t data_fp;
} loom_mpi_task_id;

typedef struct loom_mpi_hello {
    char host[64];
    char target_fp[128];
    int ntasks;             /* loom_mpi_task_id entries after the struct */
    int pid;
    int status;             /* LOOM_OK, or why the worker could not start (message says) */
    char message[512];
} loom_mpi_hello;

typedef struct loom_mpi_welcome {
    int accepted;
    char message[768];      /* a refusal's reason */
} loom_mpi_welcome;

typedef struct loom_mpi_work_head {
    int64_t id;             /* unique per dispatch on rank 0 */
    loom_mpi_task_id task;  /* whose program and data the trace is for */
    double limit_s;         /* the child's time limit on the worker */
} loom_mpi_work_head;

typedef struct loom_mpi_result {
    int64_t id;
    double worker_s;        /* seconds from the child's start to its result, on the worker */
    loom_runner_result r;
} loom_mpi_result;

#endif
