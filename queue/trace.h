/* SPDX-License-Identifier: MIT */
/*
 * trace.h - optional timestamps along a small message's round, to see
 * which step of it takes the time (tools/accdma-bw/trace.sh).
 *
 * Built with -DACCDMA_TRACE, each point appends (point, TSC) to a per-process
 * buffer that is written out at exit when ACCDMA_TRACE_OUT names a file
 * prefix. Without it every point compiles to nothing: the default build has
 * no trace code on its paths.
 */
#ifndef ACCDMA_QUEUE_TRACE_H
#define ACCDMA_QUEUE_TRACE_H

/** enum q_trace_point - the steps of a post-then-wait round, in their order. */
enum q_trace_point {
	Q_TRACE_POST,      /* accdma_post() entered */
	Q_TRACE_STAMP,     /* an eager send's stamp stored in the peer's ring */
	Q_TRACE_POSTED,    /* accdma_post() returns */
	Q_TRACE_LANDED,    /* a recv found its eager message */
	Q_TRACE_RECV_DONE, /* ... and completed */
	Q_TRACE_WAITED,    /* accdma_wait_all() returns */
	Q_TRACE_NPOINTS
};

#ifdef ACCDMA_TRACE
void q_trace(enum q_trace_point p);
#else
/**
 * q_trace_set_out() - where the trace is written at exit (@prefix.PID; the
 * driver passes ACCDMA_TRACE_OUT). NULL: nowhere. Nothing unless built with
 * ACCDMA_TRACE.
 */
void q_trace_set_out(const char *prefix);

/** q_trace() - record point @p now (nothing unless built with ACCDMA_TRACE). */
static inline void q_trace(enum q_trace_point p)
{
	(void)p;
}
#endif

#endif /* ACCDMA_QUEUE_TRACE_H */
