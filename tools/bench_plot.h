/* SPDX-License-Identifier: MIT */
/*
 * zsm-bench --plot OUT.png CSV...: bandwidth and latency against message
 * size, one line per (plugin, test) series of each CSV file, drawn by
 * gnuplot (run by fork and exec; no shell sees any name).
 */
#ifndef ZSM_BENCH_PLOT_H
#define ZSM_BENCH_PLOT_H

/* argv[0] is OUT.png, the rest CSV files; returns the exit status. */
int bench_plot(int argc, char **argv);

#endif
