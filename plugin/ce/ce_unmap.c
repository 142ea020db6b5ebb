/* SPDX-License-Identifier: MIT */
/*
 * Owns the thread that closes ce's mappings of peers' GPU allocations.
 * Closing one (cuIpcCloseMemHandle, cuMemUnmap) may wait for the device
 * to go idle, and NCCL's kernel on it may be spinning until a copy the
 * engine has yet to issue lands: closed on the engine, the whole plugin
 * stopped (PyTorch's registered tensors, freed between two collectives,
 * hung NCCL in every run).  Here only this thread waits.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ce/ce.h"
#include "ce/ce_int.h"
#include "common/log.h"

static struct {
	pthread_mutex_t lock;
	pthread_cond_t work; /* something queued, or stop */
	pthread_cond_t idle; /* the queue ran dry */
	struct zsm_ce_ipc_map *head, **tail;
	int busy;    /* a close is under way */
	int running; /* the thread exists */
	int stop;
	pthread_t thread;
} zsm_ce_unmap = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
	.idle = PTHREAD_COND_INITIALIZER,
	.tail = &zsm_ce_unmap.head,
};

static void *zsm_ce_unmap_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&zsm_ce_unmap.lock);
	for (;;) {
		struct zsm_ce_ipc_map *m = zsm_ce_unmap.head;

		if (!m) {
			pthread_cond_broadcast(&zsm_ce_unmap.idle);
			if (zsm_ce_unmap.stop)
				break;
			pthread_cond_wait(&zsm_ce_unmap.work,
					  &zsm_ce_unmap.lock);
			continue;
		}
		zsm_ce_unmap.head = m->next;
		if (!zsm_ce_unmap.head)
			zsm_ce_unmap.tail = &zsm_ce_unmap.head;
		zsm_ce_unmap.busy = 1;
		pthread_mutex_unlock(&zsm_ce_unmap.lock);
		zsm_ce_cuda_close_map(m);
		pthread_mutex_lock(&zsm_ce_unmap.lock);
		zsm_ce_unmap.busy = 0;
	}
	zsm_ce_unmap.running = 0;
	pthread_mutex_unlock(&zsm_ce_unmap.lock);
	return NULL;
}

int zsm_ce_unmap_post(struct zsm_ce_ipc_map *m)
{
	int ret = 0;

	pthread_mutex_lock(&zsm_ce_unmap.lock);
	if (!zsm_ce_unmap.running) {
		sigset_t all, old;

		/* Signals stay with the application's threads. */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		ret = -pthread_create(&zsm_ce_unmap.thread, NULL,
				      zsm_ce_unmap_main, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (ret) {
			pthread_mutex_unlock(&zsm_ce_unmap.lock);
			ZSM_WARN("ce: no thread to close GPU mappings on (%s): "
				 "closing on the engine",
				 strerror(-ret));
			return ret;
		}
		(void)pthread_setname_np(zsm_ce_unmap.thread, "zsm-ce-unmap");
		zsm_ce_unmap.running = 1;
		zsm_ce_unmap.stop = 0;
	}
	m->next = NULL;
	*zsm_ce_unmap.tail = m;
	zsm_ce_unmap.tail = &m->next;
	pthread_cond_signal(&zsm_ce_unmap.work);
	pthread_mutex_unlock(&zsm_ce_unmap.lock);
	return 0;
}

int zsm_ce_unmap_flush(unsigned timeout_ms)
{
	struct timespec until;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&zsm_ce_unmap.lock);
	while ((zsm_ce_unmap.head || zsm_ce_unmap.busy) && !ret)
		ret = -pthread_cond_timedwait(&zsm_ce_unmap.idle,
					      &zsm_ce_unmap.lock, &until);
	pthread_mutex_unlock(&zsm_ce_unmap.lock);
	return ret == -ETIMEDOUT ? -ETIMEDOUT : 0;
}

void zsm_ce_unmap_stop(unsigned timeout_ms)
{
	pthread_t t;

	if (zsm_ce_unmap_flush(timeout_ms)) {
		/* A close waits for a device that does not go idle: leave
		 * the thread (the process is ending or NCCL is stuck). */
		ZSM_WARN("ce: closing peers' GPU mappings still waits for the "
			 "device after %u ms; left behind",
			 timeout_ms);
		return;
	}
	pthread_mutex_lock(&zsm_ce_unmap.lock);
	if (!zsm_ce_unmap.running) {
		pthread_mutex_unlock(&zsm_ce_unmap.lock);
		return;
	}
	zsm_ce_unmap.stop = 1;
	t = zsm_ce_unmap.thread;
	pthread_cond_signal(&zsm_ce_unmap.work);
	pthread_mutex_unlock(&zsm_ce_unmap.lock);
	pthread_join(t, NULL);
}
